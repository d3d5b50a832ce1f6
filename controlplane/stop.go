package controlplane

import (
	"fmt"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"
)

// A stop takes at most --controller-shutdown-timeout (5 s) for the
// controllers, then --shutdown-delay-duration (0 s) + apiStopTimeout for
// the API server to drain, then storageCloseTimeout: 13 s with the
// defaults, whatever etcd's state.
const (
	// httpShutdownTimeout bounds the HTTP server's graceful shutdown, which
	// waits for connections to go idle; upstream gives it --request-timeout.
	httpShutdownTimeout = 4 * time.Second
	// apiStopTimeout bounds the API server's graceful stop after the
	// shutdown delay: its pre-shutdown hooks, the requests in flight and
	// the HTTP server's shutdown. With a healthy etcd it takes milliseconds.
	apiStopTimeout = 6 * time.Second
	// storageCloseTimeout bounds the wait for a stop that was stuck on etcd
	// once storage is closed.
	storageCloseTimeout = 2 * time.Second
	// apiStopWithoutQuorum replaces apiStopTimeout for a server whose etcd
	// cluster has no quorum, where what waits on etcd never finishes.
	apiStopWithoutQuorum = time.Second
)

// awaitAPIStopped waits for the API server, which is stopping, to return
// from Run, within bounds whatever etcd's state. Upstream's graceful stop
// waits on etcd without a deadline in places: the pre-shutdown hooks that
// remove this server's leases wait for the reconcilers' writes to etcd, and
// requests in flight wait up to --request-timeout (60 s). So when the stop
// takes longer than it should, storage is closed (upstream's Destroy, which
// it calls itself once stopped and which may be called more than once):
// whatever waits on etcd then fails at once and the stop goes on. Should it
// still not finish (the identity lease controller retries a failed write
// until its server has stopped, which its own pre-shutdown hook waits for),
// the API server is left behind and the error says so.
//
// withoutQuorum is a server whose etcd member belongs to a cluster that has
// lost its quorum, as the last servers of a cluster that is shut down one by
// one do: its stop is not waited for as long, and leaving the API server
// behind is logged, not an error (the stop could not do better, and the
// cluster is not damaged by it).
func awaitAPIStopped(logger klog.Logger, done <-chan error, server *genericapiserver.GenericAPIServer, withoutQuorum bool) error {
	graceful := server.ShutdownDelayDuration + apiStopTimeout
	if withoutQuorum {
		graceful = server.ShutdownDelayDuration + apiStopWithoutQuorum
	}
	timer := time.NewTimer(graceful)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
	}
	logger.Info("API server still stopping; closing storage so that what waits on etcd fails", "after", graceful)
	server.Destroy()
	timer.Reset(storageCloseTimeout)
	select {
	case err := <-done:
		return err
	case <-timer.C:
		if withoutQuorum {
			logger.Info("The etcd cluster has no quorum: left the API server behind, still stopping", "after", graceful+storageCloseTimeout)
			return nil
		}
		return fmt.Errorf("the API server was still stopping %s after it began, with storage closed; left it behind", graceful+storageCloseTimeout)
	}
}
