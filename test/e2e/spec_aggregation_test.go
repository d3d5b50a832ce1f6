package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// wardle is the group sample-apiserver serves, at the version the specs
// register with an APIService.
var (
	wardle         = schema.GroupVersion{Group: "wardle.example.com", Version: "v1alpha1"}
	flunders       = wardle.WithResource("flunders")
	wardleAPIName  = wardle.Version + "." + wardle.Group
	serviceLocated = schema.GroupVersionResource{Group: "controlplane.x-k8s.io", Version: "v1alpha1", Resource: "servicelocations"}
)

// An aggregated API server that delegates to the control plane, under an
// identity holding only the roles upstream documents (plus the reads its
// admission needs that the documentation misses, see grantDelegation),
// trusts whom the control plane trusts and allows what it allows: clients of the control
// plane's CA and the aggregator's front proxy (from the CAs in
// kube-system/extension-apiserver-authentication; the server is given
// neither), service account tokens (TokenReview), and the control plane's
// RBAC (SubjectAccessReview). Its admission reads the control plane's
// namespaces. These requests go to the aggregated server directly, so they
// hold without the control plane reaching it.
func TestSpecDelegatedAuth(t *testing.T) {
	onEveryProvider(t, func(t *testing.T, c *Cluster) {
		s := startSampleAPIServer(t, c)
		cs := clientset(t, c)
		admin := restConfig(t, c)
		ns := s.Namespace

		// Two service accounts: the server caches a denial for 10 s (its
		// --authorization-webhook-cache-unauthorized-ttl), so the one
		// granted a role is never denied first.
		const stranger, reader = "stranger", "flunder-reader"
		for _, name := range []string{stranger, reader} {
			if _, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating service account %s/%s: %v", ns, name, err)
			}
		}
		strangerUser := "system:serviceaccount:" + ns + ":" + stranger
		asStranger := &rest.Config{BearerToken: serviceAccountToken(t, cs, ns, stranger)}
		// The aggregator's client certificate: only the control plane's
		// host holds its key.
		var frontProxy *rest.Config
		if c.DataDir != "" {
			pki := filepath.Join(c.DataDir, "pki")
			frontProxy = &rest.Config{TLSClientConfig: rest.TLSClientConfig{
				CertFile: filepath.Join(pki, "front-proxy-client.crt"), KeyFile: filepath.Join(pki, "front-proxy-client.key"),
			}}
		}
		list := s.URL + "/apis/" + wardle.String() + "/namespaces/" + ns + "/flunders"

		for _, tc := range []struct {
			name       string
			creds      *rest.Config
			frontProxy bool
			header     http.Header
			wantCode   int
			// wantUser is whom a Forbidden answer names.
			wantUser string
		}{
			{name: "anonymous", wantCode: http.StatusForbidden, wantUser: "system:anonymous"},
			{name: "the control plane's admin", creds: admin, wantCode: http.StatusOK},
			{name: "a service account token without a role", creds: asStranger, wantCode: http.StatusForbidden, wantUser: strangerUser},
			{name: "the front proxy for a user without a role", frontProxy: true,
				header: http.Header{"X-Remote-User": {"alice"}}, wantCode: http.StatusForbidden, wantUser: "alice"},
			{name: "the front proxy for a user in system:masters", frontProxy: true,
				header: http.Header{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}}, wantCode: http.StatusOK},
			// Only the front proxy may say whom a request is for.
			{name: "a service account token with front-proxy headers", creds: asStranger,
				header: http.Header{"X-Remote-User": {"admin"}, "X-Remote-Group": {"system:masters"}}, wantCode: http.StatusForbidden, wantUser: strangerUser},
		} {
			t.Run(tc.name, func(t *testing.T) {
				creds := tc.creds
				if tc.frontProxy {
					if frontProxy == nil {
						t.Skipf("the front proxy's client key is in the control plane's data dir, which this provider does not give")
					}
					creds = frontProxy
				}
				client, err := rest.HTTPClientFor(s.Config(creds))
				if err != nil {
					t.Fatal(err)
				}
				code, body, err := httpGet(t.Context(), client, list, tc.header)
				if err != nil {
					t.Fatal(err)
				}
				if code != tc.wantCode {
					t.Fatalf("GET %s: %d, want %d; body:\n%s", list, code, tc.wantCode, body)
				}
				if tc.wantUser == "" {
					return
				}
				var status metav1.Status
				if err := json.Unmarshal([]byte(body), &status); err != nil {
					t.Fatalf("GET %s: decoding the Status: %v\n%s", list, err, body)
				}
				if want := fmt.Sprintf("User %q cannot list", tc.wantUser); !strings.Contains(status.Message, want) {
					t.Errorf("GET %s: %q, want it to say %s", list, status.Message, want)
				}
			})
		}

		t.Run("a role granted in the control plane", func(t *testing.T) {
			grantFlunderReader(t, cs, ns, reader)
			client := dynamicFor(t, s.Config(&rest.Config{BearerToken: serviceAccountToken(t, cs, ns, reader)}))
			if _, err := client.Resource(flunders).Namespace(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
				t.Errorf("listing flunders at sample-apiserver as %s, granted a role: %v", reader, err)
			}
		})

		t.Run("admission reads the control plane's namespaces", func(t *testing.T) {
			client := dynamicFor(t, s.Config(admin)).Resource(flunders)
			if _, err := client.Namespace(ns).Create(t.Context(), flunder("direct"), metav1.CreateOptions{}); err != nil {
				t.Errorf("creating a flunder in namespace %s: %v", ns, err)
			}
			missing := uniqueName("e2e-spec-missing")
			_, err := client.Namespace(missing).Create(t.Context(), flunder("direct"), metav1.CreateOptions{})
			if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), fmt.Sprintf("namespaces %q not found", missing)) {
				t.Errorf("creating a flunder in namespace %s, which the control plane does not have: %v, want NotFound for the namespace (NamespaceLifecycle)", missing, err)
			}
		})

		// Whatever else it watched or wrote with its identity, the roles
		// it holds were enough.
		if denied := forbiddenLines(t, s.StderrPath, s.User()); len(denied) > 0 {
			t.Errorf("sample-apiserver was refused, as %s, what it needs:\n%s", s.User(), strings.Join(denied, "\n"))
		}
	})
}

// grantFlunderReader lets service account namespace/name get and list
// flunders in its namespace, through the control plane's RBAC.
func grantFlunderReader(t *testing.T, cs kubernetes.Interface, namespace, name string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{wardle.Group}, Resources: []string{flunders.Resource}, Verbs: []string{"get", "list"}}},
	}
	if _, err := cs.RbacV1().Roles(namespace).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating role %s/%s: %v", namespace, role.Name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating role binding %s/%s: %v", namespace, binding.Name, err)
	}
}

// dynamicFor is a dynamic client of cfg.
func dynamicFor(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// flunder is a Flunder named name, for a namespace the client gives.
func flunder(name string) *unstructured.Unstructured {
	return object(wardle.String(), "Flunder", name)
}

// ignoreForbidden is err, or nil when err is Forbidden: for polls that
// wait for a grant to take effect.
func ignoreForbidden(err error) error {
	if apierrors.IsForbidden(err) {
		return nil
	}
	return err
}
