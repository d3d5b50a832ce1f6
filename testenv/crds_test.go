package testenv

import (
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The CRDs of Options.CRDPaths are served when Start returns, and
// InstallCRDs adds more; install's own tests cover how files are read.
func TestCRDPathsAreServedWhenStartReturns(t *testing.T) {
	t.Parallel()
	s := StartTestServer(t, Options{CRDPaths: []string{"install/testdata/crds"}})
	ctx := t.Context()
	widgets := schema.GroupVersionResource{Group: "crds.example.com", Version: "v1", Resource: "widgets"}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crds.example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3)}}}
	if _, err := dynamic.NewForConfigOrDie(s.ClientConfig).Resource(widgets).Namespace("default").Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Widget right after Start: %v", err)
	}

	installed, err := s.InstallCRDs(ctx, "install/testdata/multi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range installed {
		names = append(names, crd.Name)
	}
	crds := clientset.NewForConfigOrDie(s.ClientConfig).ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range append(names, "widgets.crds.example.com", "gadgets.crds.example.com") {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("CRD %s: %v", name, err)
			continue
		}
		if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			t.Errorf("CRD %s is not established", name)
		}
	}
	if len(names) != 2 {
		t.Errorf("InstallCRDs of multi.yaml returned %q, want its two CRDs", names)
	}
}
