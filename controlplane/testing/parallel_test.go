package testing

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestParallelServers runs servers side by side, as parallel tests that each
// start their own do: every one installs CRDs and writes objects while the
// others do the same, and sees only its own. Run it with -race.
func TestParallelServers(t *testing.T) {
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			s := StartTestServer(t, Options{CRDPaths: []string{"testdata/crds"}})
			ctx := t.Context()
			core := kubernetes.NewForConfigOrDie(s.ClientConfig)
			client := dynamic.NewForConfigOrDie(s.ClientConfig)
			name := fmt.Sprintf("server-%d", i)

			// Create, read, update, delete a native object.
			configMaps := core.CoreV1().ConfigMaps("default")
			cm, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"server": name}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm.Data["updated"] = "true"
			if _, err := configMaps.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := configMaps.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := configMaps.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete: want NotFound, got %v", err)
			}

			// Install more CRDs while the other servers do, and use them.
			if _, err := s.InstallCRDs(ctx, "testdata/multi.yaml"); err != nil {
				t.Fatal(err)
			}
			sprocket := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crds.example.com/v1", "kind": "Sprocket"}}
			sprocket.SetName(name)
			if _, err := client.Resource(sprockets).Namespace("default").Create(ctx, sprocket, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Resource(widgetsV1).Namespace("default").Create(ctx, widget(name, int64(i)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			// Each server has an etcd of its own: it sees its widget only.
			list, err := client.Resource(widgetsV1).Namespace("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 || list.Items[0].GetName() != name {
				var names []string
				for _, w := range list.Items {
					names = append(names, w.GetName())
				}
				t.Errorf("widgets on %s: %q, want only %q", name, names, name)
			}

			// A user of this server is authenticated by this server's CA.
			cfg, err := s.ClientConfigFor("alice")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("alice lists configmaps: want Forbidden (authenticated, not authorized), got %v", err)
			}
		})
	}
}
