package install

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// fakeCRDServer stores one CRD and serves its resources as the API server
// does from a handler built late: the deprecation warnings of the revision
// it was built from, which is the stored one only after stale requests.
type fakeCRDServer struct {
	mu      sync.Mutex
	crd     *apiextensionsv1.CustomResourceDefinition
	written []*apiextensionsv1.CustomResourceDefinition // every PUT
	served  *apiextensionsv1.CustomResourceDefinition   // what the handler was built from
	stale   int                                         // requests the handler serves before it is rebuilt
	polls   int
}

func (f *fakeCRDServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+f.crd.Name && r.Method == http.MethodGet:
		_ = json.NewEncoder(w).Encode(f.crd)
	case r.URL.Path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+f.crd.Name && r.Method == http.MethodPut:
		var crd apiextensionsv1.CustomResourceDefinition
		if err := json.NewDecoder(r.Body).Decode(&crd); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rv, _ := strconv.Atoi(f.crd.ResourceVersion)
		crd.ResourceVersion, crd.Generation = strconv.Itoa(rv+1), f.crd.Generation+1
		f.crd = &crd
		f.written = append(f.written, crd.DeepCopy())
		_ = json.NewEncoder(w).Encode(f.crd)
	case strings.HasPrefix(r.URL.Path, "/apis/crds.example.com/v1/namespaces/default/widgets/testenv-marker-"):
		f.polls++
		if f.stale == 0 {
			f.served = f.crd.DeepCopy()
		} else {
			f.stale--
		}
		for _, v := range f.served.Spec.Versions {
			if v.Name == "v1" && v.Deprecated && v.DeprecationWarning != nil {
				w.Header().Add("Warning", `299 - "`+*v.DeprecationWarning+`"`)
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
	}
}

func widgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.crds.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "crds.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v0", Served: false},
				{Name: "v1", Served: true, Storage: true},
			},
		},
	}
}

// fakeConfig is a client configuration for server, which speaks JSON.
func fakeConfig(server *httptest.Server) *rest.Config {
	return &rest.Config{Host: server.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
}

func TestWaitForSpecServed(t *testing.T) {
	want := widgetsCRD()
	stored := want.DeepCopy()
	stored.ResourceVersion, stored.Generation = "7", 2
	// The handler was built from the revision before, and serves three
	// requests more before the update reaches it.
	f := &fakeCRDServer{crd: stored, served: stored.DeepCopy(), stale: 3}
	server := httptest.NewServer(f)
	defer server.Close()
	client, err := quietClient(fakeConfig(server))
	if err != nil {
		t.Fatal(err)
	}

	got, err := waitForSpecServed(t.Context(), client, want, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Marked, polled past the stale handler, then written as wanted.
	if len(f.written) != 2 {
		t.Fatalf("%d writes, want the marker and its removal", len(f.written))
	}
	marker := f.written[0].Spec.Versions[1]
	if !marker.Deprecated || !strings.Contains(ptr.Deref(marker.DeprecationWarning, ""), want.Name) {
		t.Errorf("the marker write: version %+v, want v1 deprecated with a warning naming the CRD", marker)
	}
	if f.polls != 4 {
		t.Errorf("%d requests for the marker, want 4: three the stale handler served, one with its warning", f.polls)
	}
	if !equality.Semantic.DeepEqual(f.written[1].Spec, want.Spec) || !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("the last write or the CRD returned is not the CRD wanted: %+v", got.Spec)
	}
}

func TestWaitForSpecServedTimesOut(t *testing.T) {
	// A handler never rebuilt: the marker's warning never comes.
	f := &fakeCRDServer{crd: widgetsCRD(), served: widgetsCRD(), stale: 1 << 30}
	server := httptest.NewServer(f)
	defer server.Close()
	client, err := quietClient(fakeConfig(server))
	if err != nil {
		t.Fatal(err)
	}
	_, err = waitForSpecServed(t.Context(), client, widgetsCRD(), 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), `CustomResourceDefinition "widgets.crds.example.com" was updated, but the API server still serves its previous spec`) {
		t.Fatalf("want an error that the previous spec is still served, got %v", err)
	}
}
