package install

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

const (
	// markerPollInterval is how often Install sends its marker request.
	markerPollInterval = 20 * time.Millisecond
	// markerWebhookName names the marker webhook in each configuration.
	markerWebhookName = "marker.testenv.sample-generic-controlplane.sigs.k8s.io"
	// markerLabel labels the marker request's namespace with the nonce of
	// one Install; only its marker webhooks match it.
	markerLabel = "testenv.sample-generic-controlplane.sigs.k8s.io/webhook-marker"
	// markerCleanupTimeout bounds the removal of the markers after Install
	// failed or its context ended.
	markerCleanupTimeout = 10 * time.Second
)

// Install prepares o if need be (Prepare), creates its configurations or
// updates those that exist, and waits at most timeout until they take
// effect: until the API server's admission chain calls them, which is more
// than their being stored (envtest waits for that only, so a suite's first
// requests race the API server's informer of webhook configurations). The
// suite's webhook server need not be up yet.
//
// How: each configuration is written with one more webhook first in it, a
// marker, served by Install itself on LocalServingHost with the serving
// certificate. It matches only the dry-run creation of a namespace labelled
// for this call, which Install sends until every marker has been called.
// This is exact, as upstream's admission webhook integration tests rely on
// (k8s.io/kubernetes test/integration/apiserver/admissionwebhook): the API
// server calls the webhooks of a configuration as its informer last
// delivered the whole object, so once a configuration's marker is called,
// the revision that added it, which holds the suite's webhooks too, is the
// one in effect. The markers are then removed by revisions that hold the
// suite's webhooks alike: they stay in effect whichever revision the API
// server has. A webhook of the suite that matches namespace creation and
// refuses it (its failurePolicy Fail, its server not up yet) keeps the
// markers after it from being called; let it admit namespaces labelled
// testenv.sample-generic-controlplane.sigs.k8s.io/webhook-marker.
func (o *WebhookOptions) Install(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	if err := o.Prepare(); err != nil {
		return err
	}
	if len(o.MutatingWebhooks)+len(o.ValidatingWebhooks) == 0 {
		return nil
	}
	admission, err := admissionregistrationv1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	server, err := startMarkerServer(o.LocalServingHost, o.calledHost(o.LocalServingHost), o.certificate)
	if err != nil {
		return err
	}
	defer server.close()

	nonce := newNonce()
	var (
		markers  = map[string]string{} // marker path → what it marks
		restores []func(context.Context) error
	)
	for _, c := range o.MutatingWebhooks {
		path := "/mutating/" + c.Name
		marked := c.DeepCopy()
		marked.Webhooks = append([]admissionregistrationv1.MutatingWebhook{mutatingMarker(server.url(path), o.LocalServingCAData, nonce)}, c.Webhooks...)
		what := fmt.Sprintf("MutatingWebhookConfiguration %q", c.Name)
		restore, err := writeMarked(ctx, admission.MutatingWebhookConfigurations(), marked, c, what)
		if err != nil {
			return errors.Join(err, removeMarkers(ctx, restores))
		}
		markers[path] = what
		restores = append(restores, restore)
	}
	for _, c := range o.ValidatingWebhooks {
		path := "/validating/" + c.Name
		marked := c.DeepCopy()
		marked.Webhooks = append([]admissionregistrationv1.ValidatingWebhook{validatingMarker(server.url(path), o.LocalServingCAData, nonce)}, c.Webhooks...)
		what := fmt.Sprintf("ValidatingWebhookConfiguration %q", c.Name)
		restore, err := writeMarked(ctx, admission.ValidatingWebhookConfigurations(), marked, c, what)
		if err != nil {
			return errors.Join(err, removeMarkers(ctx, restores))
		}
		markers[path] = what
		restores = append(restores, restore)
	}

	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "webhook-marker-" + nonce, Labels: map[string]string{markerLabel: nonce}}}
	var last error // the last marker request's answer
	err = wait.PollUntilContextTimeout(ctx, markerPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		_, last = core.Namespaces().Create(ctx, namespace, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return len(server.notCalled(markers)) == 0, nil
	})
	if err != nil {
		answer := "admitted"
		if last != nil {
			answer = last.Error()
		}
		err = fmt.Errorf("webhook configurations not in effect after %s: the API server did not call the marker webhook of %s (the last marker request, a dry-run create of namespace %s: %s); are the MutatingAdmissionWebhook and ValidatingAdmissionWebhook admission plugins on?",
			timeout, strings.Join(server.notCalled(markers), ", "), namespace.Name, answer)
		return errors.Join(err, removeMarkers(ctx, restores))
	}
	return removeMarkers(ctx, restores)
}

// writeMarked creates or updates marked, and returns how to replace it by
// unmarked; what names the configuration for errors.
func writeMarked[T object](ctx context.Context, c writer[T], marked, unmarked T, what string) (func(context.Context) error, error) {
	if _, _, err := createOrUpdate(ctx, c, marked); err != nil {
		return nil, fmt.Errorf("writing %s: %w", what, err)
	}
	return func(ctx context.Context) error {
		if _, _, err := update(ctx, c, unmarked); err != nil {
			return fmt.Errorf("removing the marker webhook from %s: %w", what, err)
		}
		return nil
	}, nil
}

// removeMarkers writes the configurations without their markers, even
// when ctx has ended: a marker left behind matches nothing but is in the
// way of whoever reads the configuration.
func removeMarkers(ctx context.Context, restores []func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markerCleanupTimeout)
	defer cancel()
	var errs []error
	for _, restore := range restores {
		errs = append(errs, restore(ctx))
	}
	return errors.Join(errs...)
}

// markerRules match what the marker request is: the creation of a namespace.
func markerRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"namespaces"},
			Scope:       ptr.To(admissionregistrationv1.ClusterScope),
		},
	}}
}

// mutatingMarker and validatingMarker are a marker webhook: called for
// the marker request of one Install alone, side-effect free (so dry-run
// requests call it), ignored should its server fail.
func mutatingMarker(url string, caBundle []byte, nonce string) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name:                    markerWebhookName,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
		Rules:                   markerRules(),
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		MatchPolicy:             ptr.To(admissionregistrationv1.Exact),
		ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{markerLabel: nonce}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](5),
		AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}
}

func validatingMarker(url string, caBundle []byte, nonce string) admissionregistrationv1.ValidatingWebhook {
	m := mutatingMarker(url, caBundle, nonce)
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    m.Name,
		ClientConfig:            m.ClientConfig,
		Rules:                   m.Rules,
		FailurePolicy:           m.FailurePolicy,
		MatchPolicy:             m.MatchPolicy,
		ObjectSelector:          m.ObjectSelector,
		SideEffects:             m.SideEffects,
		TimeoutSeconds:          m.TimeoutSeconds,
		AdmissionReviewVersions: m.AdmissionReviewVersions,
	}
}
