package integration

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	applyv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/applyconfiguration/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
)

func newClaim(name string, prefixes ...string) *networkingv1alpha1.NetworkClaim {
	c := &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, p := range prefixes {
		c.Spec.AddressSpace = append(c.Spec.AddressSpace, networkingv1alpha1.AddressSpaceRecord{Prefix: p})
	}
	return c
}

func TestNetworkClaimSpecAndStatusStayApart(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	claims := versioned.NewForConfigOrDie(s.ClientConfig).NetworkingV1alpha1().NetworkClaims()

	// Status in a create is dropped; generation starts at 1.
	c := newClaim("apart", "10.96.0.0/12")
	c.Status.ObservedGeneration = 7
	created, err := claims.Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 || created.Status.ObservedGeneration != 0 {
		t.Fatalf("after create: generation %d, status %+v", created.Generation, created.Status)
	}

	// A status write changes status only, and not the generation.
	created.Status.ObservedGeneration = 1
	created.Status.AddressSpace = []networkingv1alpha1.AddressSpaceStatus{{Prefix: "10.96.0.0/12", Status: networkingv1alpha1.AllocationAllocated, Date: metav1.Now()}}
	created.Spec.AddressSpace[0].Description = "smuggled through status"
	updated, err := claims.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.AddressSpace[0].Description != "" || updated.Generation != 1 || len(updated.Status.AddressSpace) != 1 {
		t.Fatalf("after status update: %+v", updated)
	}

	// A spec write changes spec only and bumps the generation.
	updated.Spec.AddressSpace[0].Description = "Service ClusterIP range"
	updated.Status = networkingv1alpha1.NetworkClaimStatus{}
	again, err := claims.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Generation != 2 || len(again.Status.AddressSpace) != 1 || again.Spec.AddressSpace[0].Description != "Service ClusterIP range" {
		t.Fatalf("after spec update: generation %d, %+v", again.Generation, again)
	}
	// An update that changes nothing in spec keeps the generation.
	again.Labels = map[string]string{"team": "net"}
	relabelled, err := claims.Update(ctx, again, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if relabelled.Generation != 2 {
		t.Fatalf("a label change bumped the generation to %d", relabelled.Generation)
	}

	// Validation errors name the field.
	_, err = claims.Create(ctx, newClaim("invalid", "10.0.0.1/8"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("host bits set: want Invalid, got %v", err)
	}
}

// Two field managers apply a record each; server-side apply merges the
// records by prefix instead of one replacing the other.
func TestNetworkClaimServerSideApplyMergesRecords(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	claims := versioned.NewForConfigOrDie(s.ClientConfig).NetworkingV1alpha1().NetworkClaims()
	apply := func(manager, prefix string) {
		t.Helper()
		cfg := applyv1alpha1.NetworkClaim("merged").WithSpec(applyv1alpha1.NetworkClaimSpec().
			WithAddressSpace(applyv1alpha1.AddressSpaceRecord().WithPrefix(prefix)))
		if _, err := claims.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
			t.Fatalf("apply by %s: %v", manager, err)
		}
	}
	apply("ipv4-owner", "10.96.0.0/12")
	apply("ipv6-owner", "fd00:10:96::/112")
	got, err := claims.Get(ctx, "merged", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.AddressSpace) != 2 {
		t.Fatalf("records after two appliers: %+v, want both", got.Spec.AddressSpace)
	}
}

func TestKANAGateOffServesNoNetworkingGroup(t *testing.T) {
	// Feature gates are process-global: give the next tests the default back.
	t.Cleanup(func() {
		if err := utilfeature.DefaultMutableFeatureGate.Set("KANA=true"); err != nil {
			t.Error(err)
		}
	})
	s := cptesting.StartTestServer(t, cptesting.Options{Flags: []string{"--feature-gates=KANA=false"}})
	groups, err := kubernetes.NewForConfigOrDie(s.ClientConfig).Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == networkingv1alpha1.GroupName {
			t.Fatalf("%s served with KANA=false", g.Name)
		}
	}
}
