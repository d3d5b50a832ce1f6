package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// specTimeout bounds each wait of a spec for something the control plane
// does eventually (a collection, a namespace deletion, an allocation). It
// is generous: the specs check what happens, not how fast.
const specTimeout = 60 * time.Second

// holdFinalizer is the finalizer the specs put on an object to keep it, and
// whatever waits for it, in place until they have looked.
const holdFinalizer = "e2e-spec.example.com/hold"

// eventually polls cond until it returns true, and fails t, saying what it
// waited for, when it does not within specTimeout or returns an error.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, specTimeout, true, cond); err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

// uniqueName is prefix followed by a random suffix: the specs share control
// planes, possibly a real cluster, across runs, and cluster-scoped names
// (API groups, NetworkClaims) must not meet those of another run.
func uniqueName(prefix string) string {
	return prefix + "-" + utilrand.String(5)
}

// widgetCRD is a namespaced CustomResourceDefinition of Widgets in group,
// served at v1 with a structural schema: spec.size, a required integer of
// at least 1, and spec.color, a string.
func widgetCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: widgetSchema()},
			}},
		},
	}
}

func widgetSchema() *apiextensionsv1.JSONSchemaProps {
	minSize := 1.0
	return &apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"spec"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {
				Type:     "object",
				Required: []string{"size"},
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"size":  {Type: "integer", Minimum: &minSize},
					"color": {Type: "string"},
				},
			},
		},
	}
}

// createSpecCRD creates crd, waits until it is Established and its
// resource is served in discovery at every served version, and deletes it
// when the spec ends. It returns the resource at the CRD's first version.
func createSpecCRD(t *testing.T, cfg *rest.Config, crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionResource {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s: %v", crd.Name, err)
	}
	t.Cleanup(func() {
		// Not t.Context(): it is done by now. The CRD's objects go with it.
		if err := crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting CRD %s: %v", crd.Name, err)
		}
	})
	eventually(t, "CRD "+crd.Name+" is Established", func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return apihelpers.IsCRDConditionTrue(got, apiextensionsv1.Established), nil
	})
	for _, v := range crd.Spec.Versions {
		if v.Served {
			waitDiscovery(t, cfg, schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}, crd.Spec.Names.Plural, true)
		}
	}
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
}

// waitDiscovery waits until discovery lists resource in gv (served) or no
// longer does (!served).
func waitDiscovery(t *testing.T, cfg *rest.Config, gv schema.GroupVersion, resource string, served bool) {
	t.Helper()
	disco := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	what := resource + " is served in discovery at " + gv.String()
	if !served {
		what = resource + " has left discovery at " + gv.String()
	}
	eventually(t, what, func(context.Context) (bool, error) {
		list, err := disco.ServerResourcesForGroupVersion(gv.String())
		if apierrors.IsNotFound(err) {
			return !served, nil
		}
		if err != nil {
			return false, err
		}
		listed := slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource })
		return listed == served, nil
	})
}

// releaseHold removes holdFinalizer from the object, if it still exists,
// and leaves other finalizers (the garbage collector's) in place.
func releaseHold(ctx context.Context, client dynamic.ResourceInterface, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		finalizers := obj.GetFinalizers()
		if !slices.Contains(finalizers, holdFinalizer) {
			return nil
		}
		obj.SetFinalizers(slices.DeleteFunc(finalizers, func(f string) bool { return f == holdFinalizer }))
		_, err = client.Update(ctx, obj, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// holdUntilCleanup makes sure the object held by holdFinalizer is released
// when the spec ends, whatever happened: a held object left behind would
// keep its namespace Terminating on a shared control plane for ever.
func holdUntilCleanup(t *testing.T, client dynamic.ResourceInterface, name string) {
	t.Cleanup(func() {
		if err := releaseHold(context.Background(), client, name); err != nil {
			t.Errorf("releasing %s: %v", name, err)
		}
	})
}

// dependent is an object of a spec, by its client and name.
type dependent struct {
	client dynamic.ResourceInterface
	name   string
}

// waitGone waits until the object is deleted.
func (d dependent) waitGone(t *testing.T) {
	t.Helper()
	eventually(t, d.name+" is gone", func(ctx context.Context) (bool, error) {
		_, err := d.client.Get(ctx, d.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
}

// object is an empty object of apiVersion and kind, named name.
func object(apiVersion, kind, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetName(name)
	return obj
}

// ignoreNotFound is err, or nil when err is NotFound: for polls that wait
// for something to appear or go.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// specNamespace creates a namespace named after prefix for one spec, with
// a generated suffix (specs share control planes, also across runs), and
// deletes it when the spec ends.
func specNamespace(t *testing.T, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		// Not t.Context(): it is done by now.
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}
