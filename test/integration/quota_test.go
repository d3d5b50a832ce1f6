package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// quotaServer starts a control plane whose quota controller recalculates
// every quota in full only once an hour: usage that is right within a test
// was calculated because of an event (the quota's creation, a deletion),
// as kube-controller-manager does, not by a periodic resync.
func quotaServer(t *testing.T) *cptesting.TestServer {
	t.Helper()
	return cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: []string{"--resource-quota-sync-period=1h"}})
}

// quotaNamespace creates a namespace and waits for what the controllers put
// in every namespace (kube-root-ca.crt, the default service account), so
// that counts stay still while the test runs.
func quotaNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	newNamespace(t, client, name)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		if _, err := client.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
			return false, ignoreNotFound(err)
		}
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("namespace %s never got kube-root-ca.crt and the default service account: %v", name, err)
	}
}

// waitForUsed waits until the quota's status.used satisfies cond, and
// returns how long that took.
func waitForUsed(t *testing.T, client kubernetes.Interface, ns, name, what string, cond func(corev1.ResourceQuotaStatus) bool) time.Duration {
	t.Helper()
	start := time.Now()
	var last corev1.ResourceQuotaStatus
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = q.Status
		return cond(q.Status), nil
	})
	if err != nil {
		t.Fatalf("quota %s/%s: %s never happened (status hard %v, used %v): %v", ns, name, what, last.Hard, last.Used, err)
	}
	return time.Since(start)
}

// createQuota creates the quota q in ns.
func createQuota(t *testing.T, client kubernetes.Interface, ns string, hard corev1.ResourceList) {
	t.Helper()
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(t.Context(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating quota %s/q: %v", ns, err)
	}
}

func usedIs(name corev1.ResourceName, want int) func(corev1.ResourceQuotaStatus) bool {
	return func(s corev1.ResourceQuotaStatus) bool {
		used, ok := s.Used[name]
		return ok && used.Value() == int64(want)
	}
}

func countObjects(t *testing.T, r dynamic.NamespaceableResourceInterface, ns string) int {
	t.Helper()
	list, err := r.Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestObjectCountQuotaNames checks, for each object-count name
// kube-controller-manager computes for a resource we serve, that the
// controller calculates it (status.used matches the objects present, at
// once) and that admission enforces it (the create over the limit is
// refused with "exceeded quota"), and that deleting an object gives its
// place back without waiting for a resync.
func TestObjectCountQuotaNames(t *testing.T) {
	s := quotaServer(t)
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	dyn := dynamic.NewForConfigOrDie(s.ClientConfig)
	core := func(resource string) schema.GroupVersionResource {
		return corev1.SchemeGroupVersion.WithResource(resource)
	}
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	things := schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "quotathings"}

	tests := []struct {
		name     corev1.ResourceName
		resource schema.GroupVersionResource
		kind     string
		// newCRD creates the resource's CRD moments before the quota:
		// the controller has not discovered it yet.
		newCRD bool
	}{
		{name: "configmaps", resource: core("configmaps"), kind: "ConfigMap"},
		{name: "count/configmaps", resource: core("configmaps"), kind: "ConfigMap"},
		{name: "secrets", resource: core("secrets"), kind: "Secret"},
		{name: "count/secrets", resource: core("secrets"), kind: "Secret"},
		{name: "resourcequotas", resource: core("resourcequotas"), kind: "ResourceQuota"},
		{name: "count/resourcequotas", resource: core("resourcequotas"), kind: "ResourceQuota"},
		{name: "count/serviceaccounts", resource: core("serviceaccounts"), kind: "ServiceAccount"},
		{name: "count/leases.coordination.k8s.io", resource: leases, kind: "Lease"},
		{name: "count/quotathings.gc.example.com", resource: things, newCRD: true, kind: "QuotaThing"},
	}
	for i, tc := range tests {
		t.Run(string(tc.name), func(t *testing.T) {
			ctx := t.Context()
			ns := fmt.Sprintf("quota-names-%d", i)
			quotaNamespace(t, client, ns)
			if tc.newCRD {
				createCRD(t, s.ClientConfig, tc.resource.Resource, tc.kind)
			}
			objects := dyn.Resource(tc.resource)
			object := func(name string) *unstructured.Unstructured {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion(tc.resource.GroupVersion().String())
				u.SetKind(tc.kind)
				u.SetName(name)
				return u
			}
			// One object exists before the quota, as in a namespace in
			// use: the controller must count it, admission cannot.
			if _, err := objects.Namespace(ns).Create(ctx, object("before"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating the first object: %v", err)
			}
			present := countObjects(t, objects, ns)
			if tc.resource.Resource == "resourcequotas" {
				present++ // the quota counts itself
			}
			limit := present + 2
			// The quota first allows nothing more than what is present:
			// admission reads quotas from its informer, and only a refusal
			// tells that it has this one (a create it admitted before
			// would not be charged).
			createQuota(t, client, ns, corev1.ResourceList{tc.name: *resource.NewQuantity(int64(present), resource.DecimalSI)})
			took := waitForUsed(t, client, ns, "q", fmt.Sprintf("used %s = %d", tc.name, present), usedIs(tc.name, present))
			t.Logf("usage of %s calculated %s after the quota's creation", tc.name, took.Round(time.Millisecond))
			waitUntilRefused(t, tc.name, func(ctx context.Context) error {
				_, err := objects.Namespace(ns).Create(ctx, object("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			})
			raiseQuota(t, client, ns, tc.name, limit)

			var created []string
			deadline := time.Now().Add(wait.ForeverTestTimeout)
			for n := 0; n < limit+2; {
				name := fmt.Sprintf("o-%d", n)
				_, err := objects.Namespace(ns).Create(ctx, object(name), metav1.CreateOptions{})
				if err == nil {
					created = append(created, name)
					n++
					continue
				}
				if !isExceededQuota(err, tc.name) {
					t.Fatalf("create %d: want Forbidden 'exceeded quota' naming %s, got %v", n, tc.name, err)
				}
				// Refused below the limit: admission still has the
				// quota's earlier limit. Try again.
				if stored := countObjects(t, objects, ns); stored < limit && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				break
			}
			if stored := countObjects(t, objects, ns); stored != limit {
				t.Fatalf("%d objects stored (%d created by the test), want the quota's %d", stored, len(created), limit)
			}
			if tc.newCRD {
				// Until the controller has discovered a new resource (up to
				// its 5 s discovery period), a deletion is seen only at
				// the full resync; creates are admitted meanwhile, as
				// checked above.
				return
			}
			if err := objects.Namespace(ns).Delete(ctx, created[0], metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			took = waitForUsed(t, client, ns, "q", fmt.Sprintf("used %s = %d after a deletion", tc.name, limit-1), usedIs(tc.name, limit-1))
			t.Logf("usage of %s recalculated %s after a deletion", tc.name, took.Round(time.Millisecond))
			createWithinQuota(t, "create after a deletion freed a place", func(ctx context.Context) error {
				_, err := objects.Namespace(ns).Create(ctx, object("after-delete"), metav1.CreateOptions{})
				return err
			})
		})
	}
}

// TestQuotaOnResourcesNotServed: names of the container domain are
// accepted, show no usage and never block a create.
func TestQuotaOnResourcesNotServed(t *testing.T) {
	s := quotaServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	const ns = "quota-not-served"
	quotaNamespace(t, client, ns)
	notServed := []corev1.ResourceName{
		"pods", "services", "cpu", "memory", "requests.storage", "persistentvolumeclaims",
		"replicationcontrollers", "services.nodeports", "count/pods", "count/deployments.apps",
		"count/widgets.nowhere.example.com",
	}
	hard := corev1.ResourceList{"count/configmaps": resource.MustParse("100")}
	for _, name := range notServed {
		hard[name] = resource.MustParse("0")
	}
	createQuota(t, client, ns, hard)
	// The controller has synced it once status.hard is the spec and the
	// one served resource has its usage.
	waitForUsed(t, client, ns, "q", "status synced", func(s corev1.ResourceQuotaStatus) bool {
		_, counted := s.Used["count/configmaps"]
		return len(s.Hard) == len(hard) && counted
	})
	q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range notServed {
		if used, ok := q.Status.Used[name]; ok {
			t.Errorf("status.used[%s] = %s; a resource that is not served has no usage", name, used.String())
		}
	}
	// Every one of them is at 0 of 0; none blocks a create.
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("configmap: %v", err)
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("secret: %v", err)
	}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("serviceaccount: %v", err)
	}
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q2"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("second resourcequota: %v", err)
	}
}

// TestQuotaChangeRecalculates: raising a quota's limit and adding a name
// to it are acted on at once, without a resync.
func TestQuotaChangeRecalculates(t *testing.T) {
	s := quotaServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	const ns = "quota-change"
	quotaNamespace(t, client, ns)
	createQuota(t, client, ns, corev1.ResourceList{"configmaps": resource.MustParse("1")})
	waitForUsed(t, client, ns, "q", "configmaps counted", usedIs("configmaps", 1)) // kube-root-ca.crt
	waitUntilRefused(t, "configmaps", func(ctx context.Context) error {
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard["configmaps"] = resource.MustParse("2")
	q.Spec.Hard["secrets"] = resource.MustParse("1")
	if _, err := client.CoreV1().ResourceQuotas(ns).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitForUsed(t, client, ns, "q", "the new name counted", func(s corev1.ResourceQuotaStatus) bool {
		hard := s.Hard["configmaps"]
		return usedIs("secrets", 0)(s) && hard.Value() == 2
	})
	t.Logf("usage recalculated %s after the quota changed", took.Round(time.Millisecond))
	createWithinQuota(t, "configmap within the raised limit", func(ctx context.Context) error {
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
		return err
	})
	createWithinQuota(t, "first secret", func(ctx context.Context) error {
		_, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
		return err
	})
}

// isExceededQuota tells a quota admission refusal naming name.
func isExceededQuota(err error, name corev1.ResourceName) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota") && strings.Contains(err.Error(), string(name))
}

// waitUntilRefused waits until dryRunCreate, a create over the quota's
// limit of name sent as a dry run, is refused with "exceeded quota". The
// ResourceQuota admission plugin, like upstream's, reads quotas from its
// informer, and a create it admits before the informer has a new quota is
// not charged to it; the dry run leaves nothing behind while it is
// admitted. Any other error fails the test.
func waitUntilRefused(t *testing.T, name corev1.ResourceName, dryRunCreate func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		last = dryRunCreate(ctx)
		switch {
		case last == nil:
			return false, nil
		case isExceededQuota(last, name):
			return true, nil
		default:
			return false, last
		}
	})
	if err != nil {
		t.Fatalf("a create over the quota of %s: want Forbidden 'exceeded quota', got %v (last: %v)", name, err, last)
	}
}

// raiseQuota sets quota q's limit of name to limit and waits until its
// status has it.
func raiseQuota(t *testing.T, client kubernetes.Interface, ns string, name corev1.ResourceName, limit int) {
	t.Helper()
	q, err := client.CoreV1().ResourceQuotas(ns).Get(t.Context(), "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[name] = *resource.NewQuantity(int64(limit), resource.DecimalSI)
	if _, err := client.CoreV1().ResourceQuotas(ns).Update(t.Context(), q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForUsed(t, client, ns, "q", fmt.Sprintf("hard %s = %d", name, limit), func(s corev1.ResourceQuotaStatus) bool {
		hard, ok := s.Hard[name]
		return ok && hard.Value() == int64(limit)
	})
}

// createWithinQuota creates what the quota's status, as read from the API,
// now allows. The ResourceQuota admission plugin, like upstream's, reads
// quotas from its informer: right after the controller wrote a lower usage
// or a raised limit, it may still see the earlier status or spec and refuse
// with "exceeded quota". Such refusals are retried until the informer
// catches up; any other error fails the test.
func createWithinQuota(t *testing.T, what string, create func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		last = create(ctx)
		if last != nil && apierrors.IsForbidden(last) && strings.Contains(last.Error(), "exceeded quota") {
			return false, nil
		}
		return last == nil, last
	})
	if err != nil {
		t.Fatalf("%s: %v (last refusal: %v)", what, err, last)
	}
}

// TestQuotaNameValidation: a bare resource name that is not one of the
// standard quota names (serviceaccounts) is refused, as kube-apiserver
// refuses it, by a message that names the field.
func TestQuotaNameValidation(t *testing.T) {
	s := sharedServer(t)
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	_, err := client.CoreV1().ResourceQuotas("default").Create(t.Context(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "bare-name"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"serviceaccounts": resource.MustParse("1")}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.hard[serviceaccounts]") {
		t.Fatalf("want Invalid naming spec.hard[serviceaccounts], got %v", err)
	}
}

// TestEveryServedResourceIsCounted: a quota naming count/<resource>.<group>
// for every namespaced resource that discovery lists (as quotable: create,
// list and delete) gets usage for each, events aside (quota ignores
// them, as upstream).
func TestEveryServedResourceIsCounted(t *testing.T) {
	s := quotaServer(t)
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	const ns = "quota-every"
	quotaNamespace(t, client, ns)
	lists, err := client.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		t.Fatal(err)
	}
	hard := corev1.ResourceList{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			verbs := sets.New(r.Verbs...)
			if strings.Contains(r.Name, "/") || !verbs.HasAll("create", "list", "delete") || r.Name == "events" {
				continue
			}
			hard[generic.ObjectCountQuotaResourceNameFor(gv.WithResource(r.Name).GroupResource())] = resource.MustParse("100")
		}
	}
	for _, name := range []corev1.ResourceName{"count/configmaps", "count/secrets", "count/serviceaccounts", "count/resourcequotas", "count/leases.coordination.k8s.io", "count/roles.rbac.authorization.k8s.io"} {
		if _, ok := hard[name]; !ok {
			t.Fatalf("discovery lists no %s among %v", name, hard)
		}
	}
	createQuota(t, client, ns, hard)
	waitForUsed(t, client, ns, "q", "usage for every served resource", func(s corev1.ResourceQuotaStatus) bool {
		for name := range hard {
			if _, ok := s.Used[name]; !ok {
				return false
			}
		}
		return true
	})
}
