package integration

import (
	"context"
	"maps"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// claimKeys is where the API server stores NetworkClaims in etcd: the
// default --etcd-prefix, then the resource (without its group, as for the
// built-in resources).
const claimKeys = "/registry/networkclaims/"

// storedValue is one etcd key as the API server wrote it.
type storedValue struct {
	value       string
	modRevision int64
}

// TestKANAGateOffAndOnAgainKeepsClaims: turning the KANA gate off on a
// control plane that stores claims hides the API and stops the allocator,
// and leaves the claims in etcd as they were; turning it on again serves
// them with the decisions they had, and the allocator carries on from those
// decisions. The rollback and re-enablement docs/networkclaim.md promises.
func TestKANAGateOffAndOnAgainKeepsClaims(t *testing.T) {
	// An etcd of its own, as with --etcd-servers, rather than the embedded
	// one: the test reads the stored claims from it directly, with no API
	// server in between. The data dir keeps the PKI across the restarts.
	socket := startEtcd(t)
	etcd := etcdClient(t, socket)
	dataDir := t.TempDir()
	start := func(gate string) *cptesting.TestServer {
		t.Helper()
		return cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, DataDir: dataDir,
			Flags: []string{"--etcd-servers=unix://" + socket, "--feature-gates=KANA=" + gate}})
	}
	stored := func() map[string]storedValue {
		t.Helper()
		resp, err := etcd.Get(t.Context(), claimKeys, clientv3.WithPrefix())
		if err != nil {
			t.Fatalf("reading %s from etcd: %v", claimKeys, err)
		}
		out := map[string]storedValue{}
		for _, kv := range resp.Kvs {
			out[string(kv.Key)] = storedValue{string(kv.Value), kv.ModRevision}
		}
		return out
	}

	// On: two claims allocated, one of them partly waiting for the other.
	on := start("true")
	claims := networkClaims(on.ClientConfig)
	for _, c := range []*networkingv1alpha1.NetworkClaim{
		newClaim("gate-holder", "100.90.0.0/16"),
		newClaim("gate-waiter", "100.90.1.0/24", "fd00:90::/48"),
		newClaim("gate-other", "100.91.0.0/16"),
	} {
		if _, err := claims.Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create NetworkClaim %s: %v", c.Name, err)
		}
	}
	before := map[string]*networkingv1alpha1.NetworkClaim{}
	for _, name := range []string{"gate-holder", "gate-waiter", "gate-other"} {
		before[name] = waitDecided(t, claims, name)
	}
	expectAllocated(t, before["gate-holder"], "100.90.0.0/16")
	expectUnavailable(t, before["gate-waiter"], "100.90.1.0/24", "100.90.0.0/16", "gate-holder")
	expectAllocated(t, before["gate-waiter"], "fd00:90::/48")
	expectAllocated(t, before["gate-other"], "100.91.0.0/16")
	if err := on.Stop(); err != nil {
		t.Fatal(err)
	}
	inEtcd := stored()
	for name := range before {
		if _, ok := inEtcd[claimKeys+name]; !ok {
			t.Fatalf("NetworkClaim %s is not at %s in etcd; keys there: %v", name, claimKeys+name, inEtcd)
		}
	}

	// Off: the API is gone, the rest of the control plane works, and the
	// claims stay in etcd untouched.
	off := start("false")
	// The APIService of the group, left from the run with the gate on, is
	// deleted by the aggregator's registration controller shortly after
	// the start; until then the unaggregated discovery lists the group.
	apiServices := aggregatorclient.NewForConfigOrDie(off.ClientConfig).ApiregistrationV1().APIServices()
	stale := "v1alpha1." + networkingv1alpha1.GroupName
	startedAt := time.Now()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := apiServices.Get(ctx, stale, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("APIService %s with KANA off: %v; want it deleted", stale, err)
	}
	t.Logf("APIService %s deleted %s after the server was ready", stale, time.Since(startedAt))
	expectGroupDiscovered(t, off.ClientConfig, networkingv1alpha1.GroupName, false)
	expectNoAllocationController(t, off.ClientConfig)
	var code int
	kubernetes.NewForConfigOrDie(off.ClientConfig).Discovery().RESTClient().Get().
		AbsPath("/apis", networkingv1alpha1.GroupName, "v1alpha1", "networkclaims", "gate-holder").Do(t.Context()).StatusCode(&code)
	if code != http.StatusNotFound {
		t.Errorf("GET networkclaims/gate-holder with KANA off: status %d, want 404", code)
	}
	core := kubernetes.NewForConfigOrDie(off.ClientConfig).CoreV1()
	if _, err := core.ConfigMaps(metav1.NamespaceDefault).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "while-kana-off"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("create a ConfigMap with KANA off: %v", err)
	}
	if err := off.Stop(); err != nil {
		t.Fatal(err)
	}
	if now := stored(); !maps.Equal(now, inEtcd) {
		t.Errorf("the claims in etcd changed while KANA was off:\nbefore %v\nafter  %v", inEtcd, now)
	}

	// On again: the claims are back with their decisions, and the
	// allocator decides from them.
	on = start("true")
	expectGroupDiscovered(t, on.ClientConfig, networkingv1alpha1.GroupName, true)
	claims = networkClaims(on.ClientConfig)
	createClaims(t, claims, newClaim("gate-new", "100.92.0.0/16"), newClaim("gate-late", "100.91.128.0/17"))
	expectAllocated(t, waitDecided(t, claims, "gate-new"), "100.92.0.0/16")
	expectUnavailable(t, waitDecided(t, claims, "gate-late"), "100.91.128.0/17", "100.91.0.0/16", "gate-other")
	for name, was := range before {
		now, err := claims.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("NetworkClaim %s after KANA was off: %v", name, err)
		}
		if !apiequality.Semantic.DeepEqual(now.Status, was.Status) {
			t.Errorf("NetworkClaim %s: status changed across KANA off and on:\nbefore %+v\nafter  %+v", name, was.Status, now.Status)
		}
		if now.ResourceVersion != was.ResourceVersion {
			t.Errorf("NetworkClaim %s was written again after KANA came back (resourceVersion %s, then %s)", name, was.ResourceVersion, now.ResourceVersion)
		}
	}

	// The waiting record is still first in line for its range.
	if err := claims.Delete(t.Context(), "gate-holder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waiter := waitForClaim(t, claims, "gate-waiter", "promoted", func(c *networkingv1alpha1.NetworkClaim) bool {
		return record(t, c, "100.90.1.0/24").Status == networkingv1alpha1.AllocationAllocated
	})
	expectReady(t, waiter, metav1.ConditionTrue, "Allocated")
	if r, was := record(t, waiter, "fd00:90::/48"), record(t, before["gate-waiter"], "fd00:90::/48"); !r.Date.Equal(&was.Date) {
		t.Errorf("gate-waiter's other record was allocated again on the promotion: date %s, was %s", r.Date, was.Date)
	}
}
