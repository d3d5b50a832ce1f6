package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
)

// sharedServer is the server of the tests that need no fresh one of their own.
func sharedServer(t *testing.T) *cptesting.TestServer {
	t.Helper()
	if shared == nil {
		t.Fatal("the shared control plane did not start; see TestMain's output")
	}
	return shared
}

func TestCoreResourcesCRUDAndWatch(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)

	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crud"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	nsWatch, err := client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=crud", ResourceVersion: ns.ResourceVersion})
	if err != nil {
		t.Fatalf("watch namespaces: %v", err)
	}
	defer nsWatch.Stop()

	cmWatch, err := client.CoreV1().ConfigMaps("crud").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch configmaps: %v", err)
	}
	defer cmWatch.Stop()
	secretWatch, err := client.CoreV1().Secrets("crud").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch secrets: %v", err)
	}
	defer secretWatch.Stop()

	// configmaps: create, read, update, list, delete, each seen by the watch
	cm, err := client.CoreV1().ConfigMaps("crud").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"color": "blue"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	expectEvent(t, cmWatch, watch.Added, "settings")
	cm.Data["color"] = "green"
	if _, err := client.CoreV1().ConfigMaps("crud").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update configmap: %v", err)
	}
	expectEvent(t, cmWatch, watch.Modified, "settings")
	got, err := client.CoreV1().ConfigMaps("crud").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil || got.Data["color"] != "green" {
		t.Fatalf("get configmap after update: %v, data %v", err, got.Data)
	}
	list, err := client.CoreV1().ConfigMaps("crud").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps: %v", err)
	}
	if !slices.ContainsFunc(list.Items, func(c corev1.ConfigMap) bool { return c.Name == "settings" }) {
		t.Fatalf("list configmaps: settings missing from %d items", len(list.Items))
	}
	if err := client.CoreV1().ConfigMaps("crud").Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete configmap: %v", err)
	}
	expectEvent(t, cmWatch, watch.Deleted, "settings")
	if _, err := client.CoreV1().ConfigMaps("crud").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get deleted configmap: want NotFound, got %v", err)
	}

	// secrets: the stored data round-trips byte for byte
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token"}, Data: map[string][]byte{"key": {0, 1, 2, 255}}}
	if _, err := client.CoreV1().Secrets("crud").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	expectEvent(t, secretWatch, watch.Added, "token")
	gotSecret, err := client.CoreV1().Secrets("crud").Get(ctx, "token", metav1.GetOptions{})
	if err != nil || string(gotSecret.Data["key"]) != string([]byte{0, 1, 2, 255}) {
		t.Fatalf("get secret: %v, data %v", err, gotSecret.Data)
	}
	if err := client.CoreV1().Secrets("crud").Delete(ctx, "token", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete secret: %v", err)
	}
	expectEvent(t, secretWatch, watch.Deleted, "token")

	// namespaces: deletion marks the namespace Terminating
	ns.Labels = map[string]string{"team": "a"}
	if _, err := client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update namespace: %v", err)
	}
	expectEvent(t, nsWatch, watch.Modified, "crud")
	if err := client.CoreV1().Namespaces().Delete(ctx, "crud", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	ev := expectEvent(t, nsWatch, watch.Modified, "crud")
	if phase := ev.Object.(*corev1.Namespace).Status.Phase; phase != corev1.NamespaceTerminating {
		t.Fatalf("deleted namespace phase = %q, want Terminating", phase)
	}
}

func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) watch.Event {
	t.Helper()
	timeout := time.After(wait.ForeverTestTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed while waiting for %s %s", typ, name)
			}
			obj, err := metaName(ev)
			if err != nil {
				t.Fatalf("watch event %s: %v", ev.Type, err)
			}
			if ev.Type == typ && obj == name {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event for %s", typ, name)
		}
	}
}

func metaName(ev watch.Event) (string, error) {
	if ev.Type == watch.Error {
		return "", apierrors.FromObject(ev.Object)
	}
	accessor, ok := ev.Object.(metav1.Object)
	if !ok {
		return "", fmt.Errorf("unexpected object %T", ev.Object)
	}
	return accessor.GetName(), nil
}

func TestCustomResourceDefinitionAndCustomResource(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	crds := apiextensionsclient.NewForConfigOrDie(s.ClientConfig).ApiextensionsV1().CustomResourceDefinitions()

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer", Minimum: ptr(1.0)},
						}},
					},
				}},
			}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD never became Established: %v", err)
	}

	widgets := dynamic.NewForConfigOrDie(s.ClientConfig).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	// The endpoint may need a moment after Established to be served.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := widgets.Create(ctx, w, metav1.CreateOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("create custom resource: %v", err)
	}
	got, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get custom resource: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Fatalf("spec.size = %d, want 3", size)
	}

	// The CRD's schema is enforced.
	bad := w.DeepCopy()
	bad.SetName("w2")
	_ = unstructured.SetNestedField(bad.Object, int64(0), "spec", "size")
	if _, err := widgets.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("create with spec.size=0: want Invalid, got %v", err)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ptr[T any](v T) *T { return &v }

func TestUserWithoutBindingsIsForbidden(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	cfg, err := s.ClientConfigFor("alice", "developers")
	if err != nil {
		t.Fatalf("client certificate for alice: %v", err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)

	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami as alice: %v", err)
	}
	if review.Status.UserInfo.Username != "alice" || !slices.Contains(review.Status.UserInfo.Groups, "developers") {
		t.Fatalf("authenticated as %+v, want alice in developers", review.Status.UserInfo)
	}
	_, err = client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("alice lists configmaps: want Forbidden, got %v", err)
	}
	_, err = client.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("alice creates a secret: want Forbidden, got %v", err)
	}
}

func TestAnonymousReachesOnlyHealthAndVersion(t *testing.T) {
	s := sharedServer(t)
	anonymous, err := rest.HTTPClientFor(rest.AnonymousClientConfig(s.ClientConfig))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"/healthz":                          http.StatusOK,
		"/livez":                            http.StatusOK,
		"/readyz":                           http.StatusOK,
		"/version":                          http.StatusOK,
		"/api":                              http.StatusForbidden,
		"/apis":                             http.StatusForbidden,
		"/api/v1/namespaces":                http.StatusForbidden,
		"/api/v1/secrets":                   http.StatusForbidden,
		"/openapi/v2":                       http.StatusForbidden,
		"/metrics":                          http.StatusForbidden,
		"/.well-known/openid-configuration": http.StatusForbidden,
	} {
		resp, err := anonymous.Get(s.ClientConfig.Host + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close() //nolint:errcheck
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// The served API surface is the generic one, nothing of the container domain.
func TestServesExactlyTheGenericAPIs(t *testing.T) {
	s := sharedServer(t)
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	_, lists, err := client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	served := sets.New[string]()
	for _, list := range lists {
		for _, r := range list.APIResources {
			served.Insert(list.GroupVersion + "/" + r.Name)
		}
	}
	want := sets.New(
		"v1/namespaces", "v1/namespaces/status", "v1/namespaces/finalize",
		"v1/configmaps", "v1/secrets", "v1/serviceaccounts", "v1/serviceaccounts/token",
		"v1/events", "v1/resourcequotas", "v1/resourcequotas/status",
		"events.k8s.io/v1/events",
		"rbac.authorization.k8s.io/v1/roles", "rbac.authorization.k8s.io/v1/rolebindings",
		"rbac.authorization.k8s.io/v1/clusterroles", "rbac.authorization.k8s.io/v1/clusterrolebindings",
		"coordination.k8s.io/v1/leases",
		"admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
		"admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
		"admissionregistration.k8s.io/v1/validatingadmissionpolicies",
		"admissionregistration.k8s.io/v1/validatingadmissionpolicies/status",
		"admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
		"flowcontrol.apiserver.k8s.io/v1/flowschemas", "flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
		"authentication.k8s.io/v1/tokenreviews", "authentication.k8s.io/v1/selfsubjectreviews",
		"authorization.k8s.io/v1/subjectaccessreviews", "authorization.k8s.io/v1/selfsubjectaccessreviews",
		"authorization.k8s.io/v1/localsubjectaccessreviews", "authorization.k8s.io/v1/selfsubjectrulesreviews",
		"certificates.k8s.io/v1/certificatesigningrequests", "certificates.k8s.io/v1/certificatesigningrequests/approval",
		"apiextensions.k8s.io/v1/customresourcedefinitions",
		"apiregistration.k8s.io/v1/apiservices",
		"storagemigration.k8s.io/v1/storageversionmigrations", "storagemigration.k8s.io/v1/storageversionmigrations/status",
		"networking.x-k8s.io/v1alpha1/networkclaims", "networking.x-k8s.io/v1alpha1/networkclaims/status",
	)
	if missing := want.Difference(served); missing.Len() > 0 {
		t.Errorf("not served: %v", sets.List(missing))
	}
	forbidden := []string{
		"v1/pods", "v1/nodes", "v1/services", "v1/endpoints", "v1/persistentvolumes", "v1/replicationcontrollers",
		"apps/v1/deployments", "batch/v1/jobs", "networking.k8s.io/v1/ingresses", "storage.k8s.io/v1/storageclasses",
		"discovery.k8s.io/v1/endpointslices", "policy/v1/poddisruptionbudgets", "scheduling.k8s.io/v1/priorityclasses",
		"node.k8s.io/v1/runtimeclasses", "resource.k8s.io/v1/resourceclaims", "autoscaling/v2/horizontalpodautoscalers",
	}
	for _, r := range forbidden {
		if served.Has(r) {
			t.Errorf("serves %s, which belongs to the container domain", r)
		}
	}
	groups, err := client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		switch g.Name {
		case "apps", "batch", "networking.k8s.io", "storage.k8s.io", "discovery.k8s.io", "policy", "node.k8s.io", "scheduling.k8s.io", "resource.k8s.io", "autoscaling":
			t.Errorf("serves API group %q", g.Name)
		}
	}
}
