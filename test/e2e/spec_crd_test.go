package e2e

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
)

// The life of a CustomResourceDefinition as its author sees it: once
// Established and in discovery, its objects can be created, read, updated,
// listed and deleted; its schema refuses a bad object naming the field; a
// version added later is served, with the objects already stored; and
// deleting it deletes its objects (a CRD created again under the same name
// starts empty) and takes its resource out of discovery.
func TestSpecCRDLifecycle(t *testing.T) {
	onEveryProvider(t, func(t *testing.T, c *Cluster) {
		ctx := t.Context()
		cfg := restConfig(t, c)
		ns := specNamespace(t, clientset(t, c), "e2e-spec-crd")
		crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
		group := uniqueName("e2e-spec") + ".example.com"
		crd := widgetCRD(group)
		gvr := createSpecCRD(t, cfg, crd)
		dc := dynamicClient(t, c)
		widgets := dc.Resource(gvr).Namespace(ns)

		widget := func(name string, spec map[string]any) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": "Widget",
				"metadata": map[string]any{"name": name},
				"spec":     spec,
			}}
		}

		// Create, read, update, list, delete.
		if _, err := widgets.Create(ctx, widget("w1", map[string]any{"size": int64(3), "color": "red"}), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
		got, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
			t.Errorf("get: spec.size = %d, want 3", size)
		}
		_ = unstructured.SetNestedField(got.Object, int64(5), "spec", "size")
		updated, err := widgets.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if size, _, _ := unstructured.NestedInt64(updated.Object, "spec", "size"); size != 5 || updated.GetResourceVersion() == got.GetResourceVersion() {
			t.Errorf("update: spec.size = %d, resourceVersion %s (was %s); want 5 and a new resourceVersion", size, updated.GetResourceVersion(), got.GetResourceVersion())
		}
		if _, err := widgets.Create(ctx, widget("w2", map[string]any{"size": int64(1)}), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
		list, err := widgets.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if names := objectNames(list); strings.Join(names, ",") != "w1,w2" {
			t.Errorf("list: %v, want [w1 w2]", names)
		}
		if err := widgets.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := widgets.Get(ctx, "w1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after delete: want NotFound, got %v", err)
		}

		// The schema refuses a bad object with 422, naming the field.
		for _, tc := range []struct {
			name    string
			spec    map[string]any
			problem string
		}{
			{"below minimum", map[string]any{"size": int64(0)}, "greater than or equal to 1"},
			{"wrong type", map[string]any{"size": "large"}, "must be of type integer"},
			{"missing required", map[string]any{"color": "blue"}, "Required value"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := widgets.Create(ctx, widget("bad", tc.spec), metav1.CreateOptions{})
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") || !strings.Contains(err.Error(), tc.problem) {
					t.Errorf("create with spec %v: want 422 Invalid naming spec.size and saying %q, got %v", tc.spec, tc.problem, err)
				}
				if _, err := widgets.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("get of the refused object: want NotFound, got %v", err)
				}
			})
		}

		// Add version v2: it is served, with the object stored at v1.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			current.Spec.Versions = append(current.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
				Name: "v2", Served: true, Storage: false,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: widgetSchema()},
			})
			_, err = crds.Update(ctx, current, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("adding version v2 to the CRD: %v", err)
		}
		v2 := schema.GroupVersion{Group: group, Version: "v2"}
		waitDiscovery(t, cfg, v2, "widgets", true)
		var atV2 *unstructured.Unstructured
		eventually(t, "widget w2 is served at v2", func(ctx context.Context) (bool, error) {
			atV2, err = dc.Resource(v2.WithResource("widgets")).Namespace(ns).Get(ctx, "w2", metav1.GetOptions{})
			return err == nil, ignoreNotFound(err)
		})
		if size, _, _ := unstructured.NestedInt64(atV2.Object, "spec", "size"); atV2.GetAPIVersion() != v2.String() || size != 1 {
			t.Errorf("w2 read at v2: apiVersion %s, spec.size %d; want %s and 1", atV2.GetAPIVersion(), size, v2)
		}

		// Delete the CRD: it goes, with its objects, and leaves discovery.
		if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting the CRD: %v", err)
		}
		eventually(t, "CRD "+crd.Name+" is gone", func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		})
		for _, gv := range []schema.GroupVersion{gvr.GroupVersion(), v2} {
			waitDiscovery(t, cfg, gv, "widgets", false)
		}
		// The same CRD again starts empty: w2 went with the first one.
		createSpecCRD(t, cfg, widgetCRD(group))
		list, err = widgets.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list after the CRD was deleted and created again: %v", err)
		}
		if names := objectNames(list); len(names) != 0 {
			t.Errorf("after the CRD was deleted and created again, its objects are %v; want none", names)
		}
	})
}

// objectNames are the names of list's items, in order.
func objectNames(list *unstructured.UnstructuredList) []string {
	var names []string
	for _, item := range list.Items {
		names = append(names, item.GetName())
	}
	return names
}
