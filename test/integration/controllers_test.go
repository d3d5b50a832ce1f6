package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// resourceClient is a dynamic client for one resource in one namespace.
type resourceClient struct {
	dynamic.ResourceInterface
	gvk schema.GroupVersionKind
	// spec, if set, is the spec of the objects createOwned creates.
	spec map[string]any
}

func configMaps(t *testing.T, cfg *rest.Config, ns string) resourceClient {
	return resourceClient{
		ResourceInterface: dynamic.NewForConfigOrDie(cfg).Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns),
		gvk:               corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	}
}

// createOwned creates an object of the client's kind, owned by owners.
func (c resourceClient) createOwned(t *testing.T, name string, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(c.gvk)
	obj.SetName(name)
	var refs []metav1.OwnerReference
	for _, o := range owners {
		refs = append(refs, metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID()})
	}
	obj.SetOwnerReferences(refs)
	if c.spec != nil {
		obj.Object["spec"] = c.spec
	}
	created, err := c.Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", c.gvk.Kind, name, err)
	}
	return created
}

func (c resourceClient) waitGone(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("%s %s was not collected: %v", c.gvk.Kind, name, err)
	}
}

func (c resourceClient) waitFor(t *testing.T, name string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		obj, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = obj
		return cond(obj), nil
	})
	if err != nil {
		t.Fatalf("%s %s never reached the expected state (last: %v): %v", c.gvk.Kind, name, last, err)
	}
	return last
}

func newNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// testPropagationPolicies deletes an owner with each propagation policy and
// checks what becomes of its dependent.
func testPropagationPolicies(t *testing.T, c resourceClient) {
	policies := []struct {
		policy metav1.DeletionPropagation
		check  func(t *testing.T, owner, dependent string)
	}{
		{metav1.DeletePropagationBackground, func(t *testing.T, owner, dependent string) {
			c.waitGone(t, owner)
			c.waitGone(t, dependent)
		}},
		{metav1.DeletePropagationForeground, func(t *testing.T, owner, dependent string) {
			// The owner goes only after its dependent.
			c.waitGone(t, dependent)
			c.waitGone(t, owner)
		}},
		{metav1.DeletePropagationOrphan, func(t *testing.T, owner, dependent string) {
			c.waitGone(t, owner)
			c.waitFor(t, dependent, func(u *unstructured.Unstructured) bool { return len(u.GetOwnerReferences()) == 0 })
		}},
	}
	for _, tc := range policies {
		t.Run(string(tc.policy), func(t *testing.T) {
			owner := c.createOwned(t, "owner-"+strings.ToLower(string(tc.policy)))
			dependent := c.createOwned(t, "dependent-"+strings.ToLower(string(tc.policy)), owner)
			policy := tc.policy
			if err := c.Delete(t.Context(), owner.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
				t.Fatalf("delete owner: %v", err)
			}
			tc.check(t, owner.GetName(), dependent.GetName())
		})
	}
}

func TestGarbageCollectionOfConfigMaps(t *testing.T) {
	s := sharedServer(t)
	newNamespace(t, kubernetes.NewForConfigOrDie(s.ClientConfig), "gc-configmaps")
	testPropagationPolicies(t, configMaps(t, s.ClientConfig, "gc-configmaps"))
}

// The CRD is created after the control plane started: the collector must
// discover its resource by itself.
func TestGarbageCollectionOfCustomResources(t *testing.T) {
	s := sharedServer(t)
	newNamespace(t, kubernetes.NewForConfigOrDie(s.ClientConfig), "gc-custom")
	gadgets := createCRD(t, s.ClientConfig, "gadgets", "Gadget")
	testPropagationPolicies(t, resourceClient{ResourceInterface: gadgets.Namespace("gc-custom"), gvk: gadgetGVK("Gadget")})
}

// The collector watches NetworkClaims through the allocator's informer,
// which it shares, rather than through a metadata-only informer of its own.
func TestGarbageCollectionOfNetworkClaims(t *testing.T) {
	s := sharedServer(t)
	testPropagationPolicies(t, resourceClient{
		ResourceInterface: dynamic.NewForConfigOrDie(s.ClientConfig).Resource(networkingv1alpha1.SchemeGroupVersion.WithResource("networkclaims")),
		gvk:               networkingv1alpha1.SchemeGroupVersion.WithKind("NetworkClaim"),
		spec:              map[string]any{"addressSpace": []any{map[string]any{"prefix": "fd00:6763::/64"}}},
	})
}

func TestGarbageCollectionOfOwnershipCycle(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	newNamespace(t, kubernetes.NewForConfigOrDie(s.ClientConfig), "gc-cycle")
	c := configMaps(t, s.ClientConfig, "gc-cycle")
	a := c.createOwned(t, "a")
	b := c.createOwned(t, "b", a)
	// a is owned by b: a cycle.
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"b","uid":%q}]}}`, b.GetUID())
	if _, err := c.Patch(ctx, "a", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("make the cycle: %v", err)
	}
	foreground := metav1.DeletePropagationForeground
	if err := c.Delete(ctx, "a", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, "a")
	c.waitGone(t, "b")
}

func TestNamespaceDeletionEmptiesAndRemovesNamespace(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	gizmos := createCRD(t, s.ClientConfig, "gizmos", "Gizmo")
	const ns = "doomed"
	newNamespace(t, client, ns)
	for i := range 5 {
		name := fmt.Sprintf("item-%d", i)
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resourceClient{ResourceInterface: gizmos.Namespace(ns), gvk: gadgetGVK("Gizmo")}.createOwned(t, "g1")

	deleteNamespaceAndWait(t, client, ns)
}

// deleteNamespaceAndWait deletes a namespace and waits until the namespace
// controller has emptied and removed it.
func deleteNamespaceAndWait(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	if err != nil {
		got, _ := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		t.Fatalf("namespace %s still there (status %+v): %v", ns, got.Status, err)
	}
}

// With the garbage collector disabled, dependents stay; the namespace
// controller, still enabled, serves as proof that controllers run. The
// storage version migrator, which needs the collector, cannot start and
// fails its liveness check, saying what to do, as kube-controller-manager
// refuses to start.
func TestControllersFlagDisablesGarbageCollector(t *testing.T) {
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: []string{"--controllers=*,-garbage-collector-controller"}})
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	c := configMaps(t, s.ClientConfig, "default")
	owner := c.createOwned(t, "owner")
	c.createOwned(t, "dependent", owner)
	if err := c.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	newNamespace(t, client, "barrier")
	deleteNamespaceAndWait(t, client, "barrier") // proves the controllers run
	if _, err := c.Get(ctx, "dependent", metav1.GetOptions{}); err != nil {
		t.Fatalf("dependent of a deleted owner, with the garbage collector disabled: %v", err)
	}
	if _, err := client.CoreV1().ServiceAccounts("kube-system").Get(ctx, "generic-garbage-collector", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the disabled garbage collector obtained its identity: %v", err)
	}
	report, _ := livezCheck(t, s.ClientConfig, "")
	if strings.Contains(report, "controller-garbagecollector") || !strings.Contains(report, "[+]controller-namespace ok") {
		t.Fatalf("/livez?verbose should list the namespace controller and not the disabled collector:\n%s", report)
	}
	// The storage version migrator needs the collector's caches: it is
	// left out too, and the control plane stays live.
	if reason, live := livezCheck(t, s.ClientConfig, ""); !live {
		t.Fatalf("/livez fails with the garbage collector disabled:\n%s", reason)
	}
	if _, err := client.CoreV1().ServiceAccounts("kube-system").Get(ctx, names.StorageVersionMigratorController, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the storage version migrator obtained its identity without the garbage collector: %v", err)
	}
}

func gadgetGVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "gc.example.com", Version: "v1", Kind: kind}
}

// createCRD creates a namespaced CRD in gc.example.com and waits until its
// resource is served.
func createCRD(t *testing.T, cfg *rest.Config, plural, kind string) dynamic.NamespaceableResourceInterface {
	t.Helper()
	ctx := t.Context()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".gc.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gc.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
			}},
		},
	}
	if _, err := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	resource := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: plural})
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := resource.List(ctx, metav1.ListOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("CRD %s never served: %v", crd.Name, err)
	}
	return resource
}

func TestNewNamespaceGetsDefaultServiceAccountAndRootCA(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	newNamespace(t, client, "fresh")
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts("fresh").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("no default service account in a new namespace: %v", err)
	}
	var rootCA *corev1.ConfigMap
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		rootCA, err = client.CoreV1().ConfigMaps("fresh").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("no kube-root-ca.crt in a new namespace: %v", err)
	}
	if got, want := rootCA.Data["ca.crt"], string(s.ClientConfig.CAData); got != want {
		t.Fatalf("kube-root-ca.crt holds\n%s\nwant the CA that verifies the server:\n%s", got, want)
	}
}

func TestLabelledClusterRoleIsAggregatedIntoView(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	roles := kubernetes.NewForConfigOrDie(s.ClientConfig).RbacV1().ClusterRoles()
	rule := rbacv1.PolicyRule{APIGroups: []string{"gc.example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch"}}
	if _, err := roles.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets-view", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules:      []rbacv1.PolicyRule{rule},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		view, err := roles.Get(ctx, "view", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, r := range view.Rules {
			if equality(r, rule) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("view did not aggregate the rule of widgets-view: %v", err)
	}
}

func equality(a, b rbacv1.PolicyRule) bool {
	return fmt.Sprint(a.APIGroups, a.Resources, a.Verbs) == fmt.Sprint(b.APIGroups, b.Resources, b.Verbs)
}

// A legacy service-account token secret is filled and its token authenticates.
func TestServiceAccountTokenSecretIsFilled(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	newNamespace(t, client, "legacy")
	if _, err := client.CoreV1().ServiceAccounts("legacy").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("legacy").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bot-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "bot"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var secret *corev1.Secret
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		secret, err = client.CoreV1().Secrets("legacy").Get(ctx, "bot-token", metav1.GetOptions{})
		return err == nil && len(secret.Data[corev1.ServiceAccountTokenKey]) > 0, err
	})
	if err != nil {
		t.Fatalf("token secret never filled: %v", err)
	}
	if string(secret.Data[corev1.ServiceAccountRootCAKey]) != string(s.ClientConfig.CAData) || string(secret.Data[corev1.ServiceAccountNamespaceKey]) != "legacy" {
		t.Fatalf("token secret has ca.crt %q and namespace %q", secret.Data[corev1.ServiceAccountRootCAKey], secret.Data[corev1.ServiceAccountNamespaceKey])
	}
	cfg := rest.AnonymousClientConfig(s.ClientConfig)
	cfg.BearerToken = string(secret.Data[corev1.ServiceAccountTokenKey])
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("authenticate with the secret's token: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:legacy:bot" {
		t.Fatalf("the token authenticates as %q", got)
	}
}

// livez returns the verbose /livez report of a server that is live.
func livez(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	report, live := livezCheck(t, cfg, "")
	if !live {
		t.Fatalf("/livez fails:\n%s", report)
	}
	return report
}

// livezCheck returns what /livez/<check> answers (for check "", the
// verbose report of every check) and whether it passed. A failed check
// gives its reason only when asked for by name.
func livezCheck(t *testing.T, cfg *rest.Config, check string) (string, bool) {
	t.Helper()
	var code int
	body, err := kubernetes.NewForConfigOrDie(cfg).Discovery().RESTClient().Get().AbsPath("/livez", check).Param("verbose", "true").
		Do(t.Context()).StatusCode(&code).Raw()
	if code != http.StatusOK && code != http.StatusInternalServerError {
		t.Fatalf("/livez/%s: %d %v: %s", check, code, err, body)
	}
	return string(body), code == http.StatusOK
}

func TestEveryControllerHasAHealthCheck(t *testing.T) {
	s := sharedServer(t)
	report := livez(t, s.ClientConfig)
	// The binary's controllers: the generic ones and KANA's.
	known := manager.NewOptions()
	if err := known.AddControllers(kana.Controllers()...); err != nil {
		t.Fatal(err)
	}
	checks := manager.NewHealth(known).Checks()
	if len(checks) != len(known.KnownControllers()) {
		t.Fatalf("%d health checks for the controllers %v", len(checks), known.KnownControllers())
	}
	for _, check := range checks {
		if want := "[+]" + check.Name() + " ok"; !strings.Contains(report, want) {
			t.Errorf("/livez?verbose lacks %q:\n%s", want, report)
		}
	}
}

// A namespace holding custom resources whose CRD is deleted meanwhile still
// finishes deleting.
func TestNamespaceDeletionFinishesAfterItsCRDIsDeleted(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	doodads := createCRD(t, s.ClientConfig, "doodads", "Doodad")
	newNamespace(t, client, "orphaned-crs")
	resourceClient{ResourceInterface: doodads.Namespace("orphaned-crs"), gvk: gadgetGVK("Doodad")}.createOwned(t, "d1")

	if err := apiextensionsclient.NewForConfigOrDie(s.ClientConfig).ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "doodads.gc.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteNamespaceAndWait(t, client, "orphaned-crs")
}
