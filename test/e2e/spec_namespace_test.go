package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Deleting a namespace deletes everything in it, of every resource, a
// custom one too: the namespace goes Terminating, refuses new objects,
// says which finalizer it waits for while an object holds it, and goes
// once that object is gone. Another namespace's objects of the same names
// are untouched.
func TestSpecNamespaceDeletion(t *testing.T) {
	onEveryProvider(t, func(t *testing.T, c *Cluster) {
		ctx := t.Context()
		cs := clientset(t, c)
		dc := dynamicClient(t, c)
		widgets := createSpecCRD(t, restConfig(t, c), widgetCRD(uniqueName("e2e-spec")+".example.com"))
		doomed := specNamespace(t, cs, "e2e-spec-ns-doomed")
		bystander := specNamespace(t, cs, "e2e-spec-ns-bystander")

		// The same objects in both namespaces.
		objects := []struct {
			gvr schema.GroupVersionResource
			obj *unstructured.Unstructured
		}{
			{corev1.SchemeGroupVersion.WithResource("configmaps"), object("v1", "ConfigMap", "e2e-spec-cm")},
			{corev1.SchemeGroupVersion.WithResource("secrets"), object("v1", "Secret", "e2e-spec-secret")},
			{corev1.SchemeGroupVersion.WithResource("serviceaccounts"), object("v1", "ServiceAccount", "e2e-spec-sa")},
			{rbacv1.SchemeGroupVersion.WithResource("roles"), object("rbac.authorization.k8s.io/v1", "Role", "e2e-spec-role")},
			{widgets, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": widgets.GroupVersion().String(), "kind": "Widget",
				"metadata": map[string]any{"name": "e2e-spec-widget"},
				"spec":     map[string]any{"size": int64(1)},
			}}},
		}
		for _, ns := range []string{doomed, bystander} {
			for _, o := range objects {
				if _, err := dc.Resource(o.gvr).Namespace(ns).Create(ctx, o.obj, metav1.CreateOptions{}); err != nil {
					t.Fatalf("creating %s %s in %s: %v", o.gvr.Resource, o.obj.GetName(), ns, err)
				}
			}
		}
		// One more object holds the doomed namespace in Terminating
		// until the spec has looked.
		held := dc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(doomed)
		holder := object("v1", "ConfigMap", "e2e-spec-held")
		holder.SetFinalizers([]string{holdFinalizer})
		holdUntilCleanup(t, held, holder.GetName())
		if _, err := held.Create(ctx, holder, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		if err := cs.CoreV1().Namespaces().Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting namespace %s: %v", doomed, err)
		}
		ns, err := cs.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
		if err != nil || ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("namespace %s right after its deletion, while an object holds it: %v, phase %q; want Terminating", doomed, err, ns.Status.Phase)
		}
		// Everything but the held object goes.
		for _, o := range objects {
			dependent{dc.Resource(o.gvr).Namespace(doomed), o.obj.GetName()}.waitGone(t)
		}
		// The namespace says what it waits for.
		eventually(t, "namespace "+doomed+" says it waits for finalizer "+holdFinalizer, func(ctx context.Context) (bool, error) {
			ns, err := cs.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range ns.Status.Conditions {
				if cond.Type == corev1.NamespaceFinalizersRemaining && cond.Status == corev1.ConditionTrue && strings.Contains(cond.Message, holdFinalizer) {
					return true, nil
				}
			}
			return false, nil
		})
		// A Terminating namespace takes no new objects.
		_, err = cs.CoreV1().ConfigMaps(doomed).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e2e-spec-late"}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "being terminated") {
			t.Errorf("creating a ConfigMap in Terminating namespace %s: want Forbidden, being terminated; got %v", doomed, err)
		}

		if err := releaseHold(ctx, held, holder.GetName()); err != nil {
			t.Fatal(err)
		}
		eventually(t, "namespace "+doomed+" is gone", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		})

		for _, o := range objects {
			got, err := dc.Resource(o.gvr).Namespace(bystander).Get(ctx, o.obj.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Errorf("%s %s in namespace %s, beside the deleted one: %v", o.gvr.Resource, o.obj.GetName(), bystander, err)
			} else if got.GetDeletionTimestamp() != nil {
				t.Errorf("%s %s in namespace %s, beside the deleted one, is being deleted", o.gvr.Resource, o.obj.GetName(), bystander)
			}
		}
	})
}
