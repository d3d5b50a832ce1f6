package bootstrap

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

const (
	bootstrapRetry   = 100 * time.Millisecond
	bootstrapTimeout = 30 * time.Second
)

// Hook is a post-start hook that writes objects the server needs
// through its loopback client: it tries at once and every 100 ms for up to
// 30 s (the API may still be settling), and fails the hook (and so
// readiness) if it never succeeds.
func Hook(what string, write func(context.Context, kubernetes.Interface) error) genericapiserver.PostStartHookFunc {
	return func(hookCtx genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(hookCtx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		logger := klog.FromContext(hookCtx)
		start := time.Now()
		err = wait.PollUntilContextTimeout(hookCtx, bootstrapRetry, bootstrapTimeout, true, func(ctx context.Context) (bool, error) {
			if err := write(ctx, client); err != nil {
				// Each try is whole and idempotent; only its final failure
				// matters (it fails the hook), so retries are not news.
				logger.V(2).Info("Bootstrap not done yet, retrying", "what", what, "err", err)
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		logger.V(1).Info("Bootstrap done", "what", what, "duration", time.Since(start))
		return nil
	}
}
