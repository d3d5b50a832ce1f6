package install

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func TestReadCRDs(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		name  string
		paths []string
		// want are the CRD names read, in order; wantErr the parts of the
		// error a test author needs to fix the path.
		want    []string
		wantErr []string
	}{
		{
			name:  "directory with several CRDs, YAML and JSON, not recursive",
			paths: []string{"testdata/crds"},
			want:  []string{"gadgets.crds.example.com", "widgets.crds.example.com"},
		},
		{
			name:  "multi-document file",
			paths: []string{"testdata/multi.yaml"},
			want:  []string{"sprockets.crds.example.com", "cogs.gears.example.com"},
		},
		{
			name:  "a file and its directory are read once",
			paths: []string{"testdata/crds/widgets.yaml", "testdata/crds", "testdata/multi.yaml"},
			want:  []string{"widgets.crds.example.com", "gadgets.crds.example.com", "sprockets.crds.example.com", "cogs.gears.example.com"},
		},
		{
			name:  "no paths",
			paths: nil,
		},
		{
			name:    "missing file",
			paths:   []string{"testdata/crds", "testdata/missing.yaml"},
			wantErr: []string{`"testdata/missing.yaml" does not exist`, "write the path of a CRD file"},
		},
		{
			name:    "missing directory",
			paths:   []string{filepath.Join("..", "config", "crd", "bases")},
			wantErr: []string{`"../config/crd/bases" does not exist`, "relative paths start at"},
		},
		{
			name:    "directory without CRD files",
			paths:   []string{empty},
			wantErr: []string{empty, "holds no .yaml, .yml or .json file"},
		},
		{
			name:    "file that is not YAML or JSON by its name",
			paths:   []string{"testdata/invalid/notes.txt"},
			wantErr: []string{`"testdata/invalid/notes.txt" is not a .yaml, .yml or .json file`},
		},
		{
			name:    "bad YAML",
			paths:   []string{"testdata/invalid/bad.yaml"},
			wantErr: []string{"testdata/invalid/bad.yaml (document 1)", "not valid YAML"},
		},
		{
			name:    "document that is not a CRD",
			paths:   []string{"testdata/invalid/configmap.yaml"},
			wantErr: []string{"testdata/invalid/configmap.yaml (document 2)", "kind ConfigMap (apiVersion v1), not a CustomResourceDefinition"},
		},
		{
			name:    "CRD of a version no longer served",
			paths:   []string{"testdata/invalid/v1beta1.yaml"},
			wantErr: []string{"testdata/invalid/v1beta1.yaml (document 1)", "apiextensions.k8s.io/v1beta1 is not served", "write apiVersion: apiextensions.k8s.io/v1"},
		},
		{
			name:    "misspelt field",
			paths:   []string{"testdata/invalid/typo.yaml"},
			wantErr: []string{"testdata/invalid/typo.yaml (document 1)", `unknown field "spec.scop"`},
		},
		{
			name:    "one CRD in two files",
			paths:   []string{"testdata/crds", "testdata/invalid/widgets-again.yaml"},
			wantErr: []string{`testdata/invalid/widgets-again.yaml (document 1): CustomResourceDefinition "widgets.crds.example.com" is defined in testdata/crds/widgets.yaml (document 1) too`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crds, err := ReadCRDs(tc.paths...)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("read %d CRDs, want an error", len(crds))
				}
				t.Log(err)
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, crd := range crds {
				got = append(got, crd.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("read %q, want %q", got, tc.want)
			}
		})
	}
}

// A version the server answers 404 for is not served yet, whatever
// discovery says; any other answer, an error included, means it is.
func TestUnservedVersions(t *testing.T) {
	answers := map[string]int{
		"/apis/crds.example.com/v1/widgets": http.StatusOK,
		"/apis/crds.example.com/v2/widgets": http.StatusNotFound,
		// A list whose conversion webhook is not up yet.
		"/apis/crds.example.com/v3/widgets": http.StatusInternalServerError,
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, ok := answers[r.URL.Path]
		if !ok {
			t.Errorf("unexpected request for %s", r.URL.Path)
			code = http.StatusBadRequest
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":` + strconv.Itoa(code) + `}`))
	}))
	defer server.Close()
	client, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.crds.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "crds.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true}, {Name: "v2", Served: true}, {Name: "v3", Served: true},
				// Not served: not asked for.
				{Name: "v4", Served: false},
			},
		},
	}
	got := unservedVersions(t.Context(), client.RESTClient(), []*apiextensionsv1.CustomResourceDefinition{crd})
	if len(got) != 1 || !strings.Contains(got[0], "crds.example.com/v2") {
		t.Errorf("unservedVersions: %q, want only v2", got)
	}
}
