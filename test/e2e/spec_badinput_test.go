package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Requests a user gets wrong are refused with a 4xx status whose message
// names the field or the problem, store nothing, and leave the server
// healthy: malformed NetworkClaims, objects over the size limits, bodies
// that are not JSON or YAML, and unknown or duplicate fields under
// fieldValidation=Strict. Each request is sent raw, as curl or a client
// of another language sends it.
func TestSpecBadInput(t *testing.T) {
	onEveryProvider(t, func(t *testing.T, c *Cluster) {
		cfg := restConfig(t, c)
		httpClient, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ns := specNamespace(t, clientset(t, c), "e2e-spec-bad")
		configMaps := "/api/v1/namespaces/" + ns + "/configmaps"
		const claims = "/apis/networking.x-k8s.io/v1alpha1/networkclaims"
		claimName := uniqueName("e2e-spec-bad")
		// send sends a request with body, of contentType, to path (with
		// its query) and returns the response's status code and body.
		send := func(t *testing.T, method, path, contentType, body string) (int, []byte) {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), method, strings.TrimSuffix(cfg.Host, "/")+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if contentType != "" {
				req.Header.Set("Content-Type", contentType)
			}
			req.Header.Set("Accept", "application/json")
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			defer resp.Body.Close() //nolint:errcheck // read to the end below
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("%s %s: reading the body: %v", method, path, err)
			}
			return resp.StatusCode, got
		}

		claim := func(record string) string {
			return `{"apiVersion":"networking.x-k8s.io/v1alpha1","kind":"NetworkClaim","metadata":{"name":"` + claimName + `"},` +
				`"spec":{"addressSpace":[` + record + `]}}`
		}
		configMap := func(data string) string {
			return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e-spec-bad"},"data":{` + data + `}}`
		}
		const (
			jsonType = "application/json"
			yamlType = "application/yaml"
		)

		for _, tc := range []struct {
			name        string
			path, query string
			contentType string
			body        string
			wantCode    int
			// wantMessage are parts of the message: the field, then the
			// problem.
			wantMessage []string
		}{
			{
				name: "NetworkClaim prefix with host bits set", path: claims, contentType: jsonType,
				body:     claim(`{"prefix":"198.51.100.1/24"}`),
				wantCode: http.StatusUnprocessableEntity, wantMessage: []string{"spec.addressSpace[0].prefix", "canonical prefix", "write 198.51.100.0/24"},
			},
			{
				name: "NetworkClaim prefix that is no CIDR", path: claims, contentType: jsonType,
				body:     claim(`{"prefix":"198.51.100.0"}`),
				wantCode: http.StatusUnprocessableEntity, wantMessage: []string{"spec.addressSpace[0].prefix", "must be an IPv4 or IPv6 CIDR"},
			},
			{
				name: "NetworkClaim prefixLength that does not fit its pool", path: claims, contentType: jsonType,
				body:     claim(`{"name":"pods","from":{"claim":"e2e-spec-pool","prefix":"203.0.113.0/24"},"prefixLength":24}`),
				wantCode: http.StatusUnprocessableEntity, wantMessage: []string{"spec.addressSpace[0].prefixLength", "must fit strictly inside the pool 203.0.113.0/24"},
			},
			{
				name: "NetworkClaim prefixLength beyond any family", path: claims, contentType: jsonType,
				body:     claim(`{"name":"pods","from":{"claim":"e2e-spec-pool"},"prefixLength":129}`),
				wantCode: http.StatusUnprocessableEntity, wantMessage: []string{"spec.addressSpace[0].prefixLength", "1 to 128"},
			},
			{
				name: "NetworkClaim taken from itself", path: claims, contentType: jsonType,
				body:     claim(`{"prefix":"198.51.100.0/25","from":{"claim":"` + claimName + `"}}`),
				wantCode: http.StatusUnprocessableEntity, wantMessage: []string{"spec.addressSpace[0].from.claim", "must name another claim"},
			},
			{
				name: "NetworkClaim unknown field, strict", path: claims, query: "fieldValidation=Strict", contentType: jsonType,
				body:     claim(`{"prefx":"198.51.100.0/24"}`),
				wantCode: http.StatusBadRequest, wantMessage: []string{`unknown field "spec.addressSpace[0].prefx"`},
			},
			{
				name: "ConfigMap unknown field, strict", path: configMaps, query: "fieldValidation=Strict", contentType: jsonType,
				body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e-spec-bad"},"dataa":{"k":"v"}}`,
				wantCode: http.StatusBadRequest, wantMessage: []string{`unknown field "dataa"`},
			},
			{
				name: "ConfigMap duplicate field, strict", path: configMaps, query: "fieldValidation=Strict", contentType: jsonType,
				body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e-spec-bad"},"data":{"k":"v"},"data":{"k":"w"}}`,
				wantCode: http.StatusBadRequest, wantMessage: []string{`duplicate field "data"`},
			},
			{
				name: "invalid JSON", path: configMaps, contentType: jsonType,
				body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e-spec-bad"}`,
				wantCode: http.StatusBadRequest, wantMessage: []string{"json parse error", "unexpected end of JSON input"},
			},
			{
				name: "invalid YAML", path: configMaps, contentType: yamlType,
				body:     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e2e-spec-bad\ndata: [k: v\n",
				wantCode: http.StatusBadRequest, wantMessage: []string{"yaml: line"},
			},
			{
				// Under the request limit, over the object's.
				name: "ConfigMap over 1 MiB", path: configMaps, contentType: jsonType,
				body:     configMap(`"big":"` + strings.Repeat("x", 1<<20+1) + `"`),
				wantCode: http.StatusUnprocessableEntity, wantMessage: []string{"Too long", "may not be more than 1048576 bytes"},
			},
			{
				name: "ConfigMap over 3 MiB", path: configMaps, contentType: jsonType,
				body:     configMap(`"big":"` + strings.Repeat("x", 3<<20+1) + `"`),
				wantCode: http.StatusRequestEntityTooLarge, wantMessage: []string{"Request entity too large", "limit is 3145728"},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				path := tc.path
				if tc.query != "" {
					path += "?" + tc.query
				}
				code, body := send(t, http.MethodPost, path, tc.contentType, tc.body)
				var status metav1.Status
				if err := json.Unmarshal(body, &status); err != nil {
					t.Fatalf("POST %s: %d, body is no Status (%v):\n%s", tc.path, code, err, body)
				}
				if code != tc.wantCode || code < 400 || code > 499 || status.Code != int32(code) {
					t.Errorf("POST %s: %d (Status code %d, %s); want %d", tc.path, code, status.Code, status.Message, tc.wantCode)
				}
				for _, part := range tc.wantMessage {
					if !strings.Contains(status.Message, part) {
						t.Errorf("POST %s: message %q does not say %q", tc.path, status.Message, part)
					}
				}

				// The server is still healthy, and stored nothing.
				if code, body := send(t, http.MethodGet, "/readyz", "", ""); code != http.StatusOK {
					t.Errorf("/readyz after the bad request: %d\n%s", code, body)
				}
				for _, get := range []string{configMaps + "/e2e-spec-bad", claims + "/" + claimName} {
					if code, body := send(t, http.MethodGet, get, "", ""); code != http.StatusNotFound {
						t.Errorf("GET %s after the bad request: %d, want 404 Not Found\n%s", get, code, body)
					}
				}
			})
		}

		// Nothing of the spec's names in the lists either.
		for _, list := range []string{configMaps, claims} {
			code, body := send(t, http.MethodGet, list, "", "")
			var items struct {
				Items []struct{ Metadata metav1.ObjectMeta }
			}
			if err := json.Unmarshal(body, &items); code != http.StatusOK || err != nil {
				t.Fatalf("GET %s: %d, %v\n%s", list, code, err, body)
			}
			for _, item := range items.Items {
				if item.Metadata.Name == "e2e-spec-bad" || item.Metadata.Name == claimName {
					t.Errorf("GET %s lists %s, refused by every request", list, item.Metadata.Name)
				}
			}
		}
	})
}
