package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Create, read, update, list, watch and delete a namespaced generic
// resource, as any client does: the watch started at the list's
// resourceVersion sees each change once, in order.
func TestSpecCRUDAndWatch(t *testing.T) {
	onEveryProvider(t, func(t *testing.T, c *Cluster) {
		ctx := t.Context()
		cs := clientset(t, c)
		ns := specNamespace(t, cs, "e2e-spec-crud")
		cms := cs.CoreV1().ConfigMaps(ns)

		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Only the spec's object: the control plane adds kube-root-ca.crt
		// to every new namespace, possibly after the list.
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "metadata.name=crud"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()

		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "crud"}, Data: map[string]string{"k": "v1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		got, err := cms.Get(ctx, "crud", metav1.GetOptions{})
		if err != nil || got.Data["k"] != "v1" {
			t.Fatalf("get after create: %v, data %v", err, got.Data)
		}
		cm.Data["k"] = "v2"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update: %v", err)
		}
		// An update from a stale copy is a conflict, not a lost write.
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Errorf("update with a stale resourceVersion: want Conflict, got %v", err)
		}
		if err := cms.Delete(ctx, "crud", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := cms.Get(ctx, "crud", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after delete: want NotFound, got %v", err)
		}

		want := []struct {
			typ  watch.EventType
			data string
		}{{watch.Added, "v1"}, {watch.Modified, "v2"}, {watch.Deleted, "v2"}}
		timeout := time.After(30 * time.Second)
		for i, w2 := range want {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch ended after %d events, want %d", i, len(want))
				}
				got, isCM := ev.Object.(*corev1.ConfigMap)
				if ev.Type != w2.typ || !isCM || got.Data["k"] != w2.data {
					t.Fatalf("watch event %d: %s %v, want %s with data.k=%s", i, ev.Type, ev.Object, w2.typ, w2.data)
				}
			case <-timeout:
				t.Fatalf("watch: no event %d (%s) within 30s", i, w2.typ)
			}
		}
	})
}
