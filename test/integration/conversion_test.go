package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// paintConverter converts Paints between v1, which says spec.color, and
// v2, which says spec.colour. It counts the reviews it answers.
type paintConverter struct {
	reviews atomic.Int32
}

func (c *paintConverter) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("not a ConversionReview: %v", err), http.StatusBadRequest)
		return
	}
	c.reviews.Add(1)
	response := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		var paint unstructured.Unstructured
		if err := paint.UnmarshalJSON(raw.Raw); err != nil {
			response.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		from, to := "colour", "color"
		if review.Request.DesiredAPIVersion == paintGroup+"/v2" {
			from, to = to, from
		}
		if value, found, _ := unstructured.NestedString(paint.Object, "spec", from); found {
			unstructured.RemoveNestedField(paint.Object, "spec", from)
			_ = unstructured.SetNestedField(paint.Object, value, "spec", to)
		}
		paint.SetAPIVersion(review.Request.DesiredAPIVersion)
		response.ConvertedObjects = append(response.ConvertedObjects, runtime.RawExtension{Object: &paint})
	}
	review.Response = response
	review.Request = nil
	rw.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(rw).Encode(&review); err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
	}
}

const paintGroup = "svcref-conversion.example.com"

// A CRD's conversion webhook configured by service reference reaches its
// server where its ServiceLocation says: an object written in one version
// reads back in the other.
func TestCRDConversionWebhookByServiceReference(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	const ns = "svcref-conversion"
	newNamespace(t, kubernetes.NewForConfigOrDie(s.ClientConfig), ns)
	converter := &paintConverter{}
	srv := startServiceServer(t, converter, "converter."+ns+".svc")
	createServiceLocation(t, s.ClientConfig, ns, "converter", port443(srv.Port))

	openAPI := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr(true),
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "paints." + paintGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: paintGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "paints", Kind: "Paint"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: openAPI},
				{Name: "v2", Served: true, Schema: openAPI},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						Service:  &apiextensionsv1.ServiceReference{Namespace: ns, Name: "converter", Path: ptr("/convert"), Port: ptr[int32](443)},
						CABundle: srv.CABundle,
					},
					ConversionReviewVersions: []string{"v1"},
				},
			},
		},
	}
	crds := apiextensionsclient.NewForConfigOrDie(s.ClientConfig).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	// Deleted before the converter stops, with the Paint deleted first: the
	// collector and the namespace controller list Paints in v2, which
	// needs the converter.
	t.Cleanup(func() {
		if err := crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete CRD %s: %v", crd.Name, err)
		}
	})

	paints := func(version string) dynamic.ResourceInterface {
		return dynamic.NewForConfigOrDie(s.ClientConfig).Resource(schema.GroupVersionResource{Group: paintGroup, Version: version, Resource: "paints"}).Namespace(ns)
	}
	// Written in v2, stored in v1: converted on the way in and out. The CRD
	// is served, and its converter set up, a moment after it is created.
	paint := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": paintGroup + "/v2", "kind": "Paint",
		"metadata": map[string]any{"name": "teal"},
		"spec":     map[string]any{"colour": "teal"},
	}}
	var created *unstructured.Unstructured
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		created, last = paints("v2").Create(ctx, paint, metav1.CreateOptions{})
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("create a Paint in v2: %v", last)
	}
	t.Cleanup(func() {
		if err := paints("v1").Delete(context.Background(), "teal", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete Paint teal: %v", err)
		}
	})
	if got, _, _ := unstructured.NestedString(created.Object, "spec", "colour"); got != "teal" {
		t.Fatalf("the Paint created in v2 comes back as %v, want spec.colour teal", created.Object)
	}
	stored, err := paints("v1").Get(ctx, "teal", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the Paint in v1: %v", err)
	}
	if got, _, _ := unstructured.NestedString(stored.Object, "spec", "color"); got != "teal" || stored.GetAPIVersion() != paintGroup+"/v1" {
		t.Fatalf("the Paint read in v1 is %v, want %s/v1 with spec.color teal", stored.Object, paintGroup)
	}
	// And from v1 to v2 again, on a read.
	read, err := paints("v2").Get(ctx, "teal", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the Paint in v2: %v", err)
	}
	if got, _, _ := unstructured.NestedString(read.Object, "spec", "colour"); got != "teal" {
		t.Fatalf("the Paint read in v2 is %v, want spec.colour teal", read.Object)
	}
	if converter.reviews.Load() == 0 {
		t.Fatal("the converter answered no ConversionReview")
	}
}
