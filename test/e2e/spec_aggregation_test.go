package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
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

// The control plane aggregates an API server found through a
// ServiceLocation instead of a Service: the APIService becomes Available,
// its group is discovered, kubectl reaches its resources through the
// control plane, and the control plane's RBAC applies to them. Deleting the
// APIService takes the group out of discovery.
func TestSpecAggregatedAPIServer(t *testing.T) {
	forEveryProvider(t, func(t *testing.T, p Provider) {
		requireActions(t, p, ActionReachTestHost)
		c := sharedOn(t, p)
		s := startSampleAPIServer(t, c)
		cfg := restConfig(t, c)
		cs := clientset(t, c)
		apiServices := aggregatorclient.NewForConfigOrDie(cfg).ApiregistrationV1().APIServices()

		locateService(t, c, s.Port)
		// Its name is sample-apiserver's group and version: a run that was
		// killed may have left it.
		if err := apiServices.Delete(t.Context(), wardleAPIName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting a leftover APIService %s: %v", wardleAPIName, err)
		}
		apiService := &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: wardleAPIName},
			Spec: apiregistrationv1.APIServiceSpec{
				Group:   wardle.Group,
				Version: wardle.Version,
				Service: &apiregistrationv1.ServiceReference{
					Namespace: wardleServiceNamespace, Name: wardleServiceName, Port: ptr.To[int32](wardleServicePort),
				},
				CABundle:             s.CABundle,
				GroupPriorityMinimum: 1000,
				VersionPriority:      15,
			},
		}
		if _, err := apiServices.Create(t.Context(), apiService, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating APIService %s: %v", wardleAPIName, err)
		}
		deleteOnCleanup(t, "APIService "+wardleAPIName, func(ctx context.Context) error {
			return apiServices.Delete(ctx, wardleAPIName, metav1.DeleteOptions{})
		})

		waitAPIServiceAvailable(t, cfg, wardleAPIName)
		eventually(t, "the aggregated discovery document lists "+flunders.String(), func(ctx context.Context) (bool, error) {
			return aggregatedDiscoveryLists(ctx, cfg, flunders)
		})
		eventually(t, "/apis/"+wardle.Group+" prefers "+wardle.String(), func(ctx context.Context) (bool, error) {
			return groupPrefers(ctx, cfg, wardle)
		})
		waitDiscovery(t, cfg, wardle, flunders.Resource, true)

		ns := specNamespace(t, cs, "e2e-spec-flunders")
		kubectlWithStdin(t, c, `{"apiVersion":"`+wardle.String()+`","kind":"Flunder","metadata":{"name":"through-kubectl"}}`, "apply", "-n", ns, "-f", "-")
		if got, want := strings.TrimSpace(kubectl(t, c, "get", "flunders", "-n", ns, "-o", "name")), "flunder.wardle.example.com/through-kubectl"; got != want {
			t.Errorf("kubectl get flunders -n %s -o name: %q, want %q", ns, got, want)
		}

		t.Run("RBAC", func(t *testing.T) {
			const reader = "flunder-reader"
			if _, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: reader}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating service account %s/%s: %v", ns, reader, err)
			}
			token := serviceAccountToken(t, cs, ns, reader)
			caFile := filepath.Join(t.TempDir(), "ca.crt")
			if err := os.WriteFile(caFile, controlPlaneCA(t, c), 0o600); err != nil {
				t.Fatal(err)
			}
			getFlunders := func() kubectlResult {
				return runKubectl(t, c, "", "--kubeconfig=/dev/null", "--server="+c.URL, "--certificate-authority="+caFile, "--token="+token,
					"get", "flunders", "-n", ns, "-o", "name")
			}
			res := getFlunders()
			if want := `cannot list resource "flunders" in API group "wardle.example.com"`; res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
				t.Fatalf("kubectl get flunders as %s without a role: exit code %d, stderr:\n%s\nwant it Forbidden: %s", reader, res.ExitCode, res.Stderr, want)
			}

			grantFlunderReader(t, cs, ns, reader)
			asReader := rest.AnonymousClientConfig(cfg)
			asReader.BearerToken = token
			client := dynamicFor(t, asReader)
			// The control plane's RBAC sees the grant once its informers
			// have; the aggregated server, which authorizes the request
			// again through a SubjectAccessReview, caches denials, but
			// the control plane refused the first request before it.
			eventually(t, reader+" may list flunders", func(ctx context.Context) (bool, error) {
				_, err := client.Resource(flunders).Namespace(ns).List(ctx, metav1.ListOptions{})
				return err == nil, ignoreForbidden(err)
			})
			if res := getFlunders(); res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "flunder.wardle.example.com/through-kubectl" {
				t.Errorf("kubectl get flunders as %s with a role: exit code %d, stdout %q, stderr:\n%s", reader, res.ExitCode, res.Stdout, res.Stderr)
			}
		})

		// NAME SERVICE AVAILABLE AGE
		fields := strings.Fields(kubectl(t, c, "get", "apiservices", wardleAPIName, "--no-headers"))
		if len(fields) != 4 || fields[1] != wardleServiceNamespace+"/"+wardleServiceName || fields[2] != "True" {
			t.Errorf("kubectl get apiservices %s: %q, want service %s/%s and available True", wardleAPIName, fields, wardleServiceNamespace, wardleServiceName)
		}

		if err := apiServices.Delete(t.Context(), wardleAPIName, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting APIService %s: %v", wardleAPIName, err)
		}
		waitDiscovery(t, cfg, wardle, flunders.Resource, false)
		eventually(t, "the aggregated discovery document no longer lists "+wardle.Group, func(ctx context.Context) (bool, error) {
			listed, err := aggregatedDiscoveryLists(ctx, cfg, flunders)
			return !listed, err
		})
	})
}

// locateService creates the ServiceLocation that tells the control plane
// that the wardle service's port is served on the test's loopback at
// port, and deletes it when the test ends.
func locateService(t *testing.T, c *Cluster, port int) {
	t.Helper()
	name := wardleServiceName + "." + wardleServiceNamespace
	client := dynamicClient(t, c).Resource(serviceLocated)
	if err := client.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting a leftover ServiceLocation %s: %v", name, err)
	}
	location := object(serviceLocated.GroupVersion().String(), "ServiceLocation", name)
	location.Object["spec"] = map[string]any{
		"address": "127.0.0.1",
		"ports":   []any{map[string]any{"port": int64(wardleServicePort), "targetPort": int64(port)}},
	}
	if _, err := client.Create(t.Context(), location, metav1.CreateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			t.Fatalf("creating ServiceLocation %s: %v: the control plane does not serve %s in %s", name, err, serviceLocated.Resource, serviceLocated.GroupVersion())
		}
		t.Fatalf("creating ServiceLocation %s: %v", name, err)
	}
	deleteOnCleanup(t, "ServiceLocation "+name, func(ctx context.Context) error {
		return client.Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// waitAPIServiceAvailable waits until the APIService is Available with
// reason Passed, the availability controller's verdict once it has reached
// the server, and fails saying what the condition was last.
func waitAPIServiceAvailable(t *testing.T, cfg *rest.Config, name string) {
	t.Helper()
	apiServices := aggregatorclient.NewForConfigOrDie(cfg).ApiregistrationV1().APIServices()
	last := "no Available condition"
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, specTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := apiServices.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := apiregistrationv1helper.GetAPIServiceConditionByType(got, apiregistrationv1.Available)
		if cond == nil {
			return false, nil
		}
		last = fmt.Sprintf("%s, reason %q: %s", cond.Status, cond.Reason, cond.Message)
		return cond.Status == apiregistrationv1.ConditionTrue && cond.Reason == "Passed", nil
	})
	if err != nil {
		t.Fatalf("waiting until APIService %s is Available (True, reason Passed): %v; last: %s", name, err, last)
	}
}

// aggregatedDiscoveryLists reports whether the aggregated discovery
// document of /apis lists resource.
func aggregatedDiscoveryLists(ctx context.Context, cfg *rest.Config, resource schema.GroupVersionResource) (bool, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	raw, err := disco.RESTClient().Get().AbsPath("/apis").
		SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").Do(ctx).Raw()
	if err != nil {
		return false, err
	}
	var doc apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(raw, &doc); err != nil {
		return false, fmt.Errorf("decoding /apis: %w", err)
	}
	if doc.Kind != "APIGroupDiscoveryList" {
		return false, fmt.Errorf("/apis answered with a %q, not an aggregated APIGroupDiscoveryList", doc.Kind)
	}
	for _, g := range doc.Items {
		if g.Name != resource.Group {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == resource.Version && slices.ContainsFunc(v.Resources, func(r apidiscoveryv2.APIResourceDiscovery) bool { return r.Resource == resource.Resource }) {
				return true, nil
			}
		}
	}
	return false, nil
}

// groupPrefers reports whether the unaggregated document of gv's group,
// /apis/<group>, lists gv and prefers it.
func groupPrefers(ctx context.Context, cfg *rest.Config, gv schema.GroupVersion) (bool, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	raw, err := disco.RESTClient().Get().AbsPath("/apis/"+gv.Group).SetHeader("Accept", "application/json").Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var group metav1.APIGroup
	if err := json.Unmarshal(raw, &group); err != nil {
		return false, fmt.Errorf("decoding /apis/%s: %w", gv.Group, err)
	}
	listed := slices.ContainsFunc(group.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.GroupVersion == gv.String() })
	return listed && group.PreferredVersion.GroupVersion == gv.String(), nil
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
