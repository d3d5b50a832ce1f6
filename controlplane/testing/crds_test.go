package testing

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

var (
	widgetsV1  = schema.GroupVersionResource{Group: "crds.example.com", Version: "v1", Resource: "widgets"}
	widgetsV2  = schema.GroupVersionResource{Group: "crds.example.com", Version: "v2", Resource: "widgets"}
	sprockets  = schema.GroupVersionResource{Group: "crds.example.com", Version: "v1", Resource: "sprockets"}
	cogs       = schema.GroupVersionResource{Group: "gears.example.com", Version: "v1alpha1", Resource: "cogs"}
	widgetKind = schema.GroupVersionKind{Group: "crds.example.com", Version: "v1", Kind: "Widget"}
)

func widget(name string, size int64) *unstructured.Unstructured {
	w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": size}}}
	w.SetGroupVersionKind(widgetKind)
	w.SetName(name)
	return w
}

func TestStartTestServerInstallsCRDPaths(t *testing.T) {
	s := StartTestServer(t, Options{CRDPaths: []string{"testdata/crds", "testdata/multi.yaml"}})
	ctx := t.Context()

	// A RESTMapper made right after start, as a controller-runtime client
	// makes one, must map every kind: no wait in the test.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(s.ClientConfig)))
	for _, gvk := range []schema.GroupVersionKind{
		widgetKind,
		{Group: "crds.example.com", Version: "v1", Kind: "Gadget"},
		{Group: "crds.example.com", Version: "v1", Kind: "Sprocket"},
		{Group: "gears.example.com", Version: "v1alpha1", Kind: "Cog"},
	} {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			t.Errorf("RESTMapping of %s: %v", gvk, err)
		}
	}

	client := dynamic.NewForConfigOrDie(s.ClientConfig)
	if _, err := client.Resource(widgetsV1).Namespace("default").Create(ctx, widget("w", 3), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Widget: %v", err)
	}
	// The schema from the file is the one served: a string size is refused.
	if _, err := client.Resource(widgetsV1).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crds.example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "bad"}, "spec": map[string]any{"size": "large"},
	}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("creating a Widget with spec.size: large: want Invalid, got %v", err)
	}
}

func TestStartFailsOnCRDPathErrors(t *testing.T) {
	// The paths are read before the server starts: a test with a wrong
	// path fails at once, whatever it would have cost to start.
	_, err := Start(t.Context(), t.TempDir, Options{CRDPaths: []string{"testdata/crds", "testdata/missing"}})
	if err == nil || !strings.Contains(err.Error(), `Options.CRDPaths: "testdata/missing" does not exist`) {
		t.Fatalf("start with a missing CRD path: want an error naming it, got %v", err)
	}
}

func TestInstallCRDs(t *testing.T) {
	s := StartTestServer(t, Options{CRDPaths: []string{"testdata/crds/widgets.yaml"}})
	ctx := t.Context()
	client := dynamic.NewForConfigOrDie(s.ClientConfig)

	crds, err := s.InstallCRDs(ctx, "testdata/multi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range crds {
		names = append(names, crd.Name)
		if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			t.Errorf("%s returned not established: %+v", crd.Name, crd.Status.Conditions)
		}
	}
	if want := []string{"sprockets.crds.example.com", "cogs.gears.example.com"}; !slices.Equal(names, want) {
		t.Errorf("InstallCRDs returned %q, want %q", names, want)
	}
	for gvr, namespace := range map[schema.GroupVersionResource]string{sprockets: "default", cogs: ""} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": map[string]string{"sprockets": "Sprocket", "cogs": "Cog"}[gvr.Resource]}}
		obj.SetName("first")
		if _, err := client.Resource(gvr).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Errorf("creating %s right after InstallCRDs: %v", gvr.Resource, err)
		}
	}

	t.Run("again", func(t *testing.T) {
		again, err := s.InstallCRDs(ctx, "testdata/multi.yaml")
		if err != nil {
			t.Fatalf("installing the same CRDs again: %v", err)
		}
		for i := range again {
			if again[i].UID != crds[i].UID {
				t.Errorf("%s was replaced (UID %s, was %s), want it updated in place", again[i].Name, again[i].UID, crds[i].UID)
			}
		}
	})
	t.Run("update", func(t *testing.T) {
		updated, err := s.InstallCRDs(ctx, "testdata/update/widgets.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := updated[0].Spec.Names.ShortNames; !slices.Equal(got, []string{"wd"}) {
			t.Errorf("short names %q, want [wd]", got)
		}
		if _, err := client.Resource(widgetsV2).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("listing widgets in v2, added by the update: %v", err)
		}
	})
	t.Run("names conflict", func(t *testing.T) {
		// Waiting cannot make the names acceptable: an error, not a timeout.
		_, err := s.InstallCRDs(ctx, "testdata/conflict/gizmos.yaml")
		if err == nil || !strings.Contains(err.Error(), `"gizmos.crds.example.com": names not accepted`) {
			t.Fatalf("want an error that the names are not accepted, got %v", err)
		}
		t.Log(err)
	})
	t.Run("conversion webhook without webhooks", func(t *testing.T) {
		// Installed as written, its service reference would reach nothing.
		_, err := s.InstallCRDs(ctx, "testdata/conversion")
		if err == nil || !strings.Contains(err.Error(), `"paints.conversion.example.com" converts by webhook, and the server has no webhooks`) {
			t.Fatalf("want an error that the server has no webhooks, got %v", err)
		}
	})
	t.Run("missing path", func(t *testing.T) {
		_, err := s.InstallCRDs(ctx, "testdata/nowhere")
		if err == nil || !strings.Contains(err.Error(), `InstallCRDs: "testdata/nowhere" does not exist`) {
			t.Fatalf("want an error naming the path, got %v", err)
		}
	})
}

func TestCRDPathsUpdateCRDsOnRestart(t *testing.T) {
	first := StartTestServer(t, Options{CRDPaths: []string{"testdata/crds/widgets.yaml"}})
	ctx := t.Context()
	if _, err := dynamic.NewForConfigOrDie(first.ClientConfig).Resource(widgetsV1).Namespace("default").Create(ctx, widget("kept", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	// The CRD is in etcd already: installing it must update it, not fail.
	second := StartTestServer(t, Options{DataDir: first.DataDir, CRDPaths: []string{"testdata/update/widgets.yaml"}})
	crd, err := apiextensionsclientset.NewForConfigOrDie(second.ClientConfig).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.crds.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apihelpers.HasServedCRDVersion(crd, "v2") || !slices.Equal(crd.Spec.Names.ShortNames, []string{"wd"}) {
		t.Errorf("after restart the CRD serves %+v with short names %q, want v2 added and short name wd", crd.Spec.Versions, crd.Spec.Names.ShortNames)
	}
	if _, err := dynamic.NewForConfigOrDie(second.ClientConfig).Resource(widgetsV2).Namespace("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the widget created before the restart, in v2: %v", err)
	}
}
