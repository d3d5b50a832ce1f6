package install

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// waitForSpecServed returns once the API server serves crd, which an
// update just wrote over a CRD of another spec, as written, and returns it
// as the server has it.
//
// Established and discovery say nothing of that: the API server serves a
// CRD's resources from a handler it builds from the CRD when first asked,
// and keeps until its informer delivers an update. Until then, requests
// are converted by the webhook the CRD named before (on a restart, the
// previous run's port and CA) and validated by its previous schema. So the
// update is followed by a marker: the same spec, with one served version
// deprecated under a warning made for this call. The API server sends a
// version's deprecation warning with every request for it, from the
// handler that serves the request, before it reads any object; the first
// request that carries the marker's warning was served by a handler built
// from the marker's revision, whose spec is crd's. The marker is then
// removed, by a revision with the same spec again, so every handler built
// from then on serves crd too. The request reads an object that does not
// exist, which needs no conversion: the webhook need not be up.
func waitForSpecServed(ctx context.Context, client clientset.Interface, crd *apiextensionsv1.CustomResourceDefinition, timeout time.Duration) (*apiextensionsv1.CustomResourceDefinition, error) {
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Served })
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	if i < 0 { // nothing served, nothing to wait for
		return crds.Get(ctx, crd.Name, metav1.GetOptions{})
	}
	nonce := newNonce()
	warning := fmt.Sprintf("sample-generic-controlplane/testenv: CustomResourceDefinition %s installed (%s)", crd.Name, nonce)
	marked := crd.DeepCopy()
	marked.Spec.Versions[i].Deprecated = true
	marked.Spec.Versions[i].DeprecationWarning = ptr.To(warning)
	if _, _, err := update(ctx, crds, marked); err != nil {
		return nil, fmt.Errorf("marking CustomResourceDefinition %q to see it served: %w", crd.Name, err)
	}

	path := []string{"/apis", crd.Spec.Group, crd.Spec.Versions[i].Name}
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		path = append(path, "namespaces", "default")
	}
	path = append(path, crd.Spec.Names.Plural, "testenv-marker-"+nonce)
	var last error
	err := wait.PollUntilContextTimeout(ctx, crdPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		result := client.Discovery().RESTClient().Get().AbsPath(path...).Do(ctx)
		last = result.Error()
		return slices.ContainsFunc(result.Warnings(), func(w net.WarningHeader) bool { return w.Text == warning }), nil
	})
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %q was updated, but the API server still serves its previous spec after %s (the last request: %v)", crd.Name, timeout, last)
	}
	got, _, err := update(ctx, crds, crd)
	if err != nil {
		return nil, fmt.Errorf("removing the marker of CustomResourceDefinition %q: %w", crd.Name, err)
	}
	return got, nil
}

// quietClient is a client for cfg that does not log the warnings of the
// API server, the markers' among them.
func quietClient(cfg *rest.Config) (clientset.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler, cfg.WarningHandlerWithContext = rest.NoWarnings{}, nil
	return clientset.NewForConfig(cfg)
}

// newNonce returns a name no earlier call returned, for markers: one an
// interrupted install left behind is not mistaken for a new one.
func newNonce() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails, since Go 1.24
	return hex.EncodeToString(b)
}
