package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	applyv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/applyconfiguration/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controllers/allocation"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

func newClaim(name string, prefixes ...string) *networkingv1alpha1.NetworkClaim {
	c := &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, p := range prefixes {
		c.Spec.AddressSpace = append(c.Spec.AddressSpace, networkingv1alpha1.AddressSpaceRecord{Prefix: p})
	}
	return c
}

func TestNetworkClaimSpecAndStatusStayApart(t *testing.T) {
	// Without the allocator, whose status writes would race the test's.
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: []string{"--controllers=*,-" + allocation.Name}})
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

// Discovery, aggregated and not, lists the group; older clients and
// RESTMappers read the unaggregated one, which needs an APIService.
func TestNetworkingGroupIsDiscovered(t *testing.T) {
	s := sharedServer(t)
	expectGroupDiscovered(t, s.ClientConfig, networkingv1alpha1.GroupName, true)
	if _, err := aggregatorclient.NewForConfigOrDie(s.ClientConfig).ApiregistrationV1().APIServices().Get(t.Context(), "v1alpha1."+networkingv1alpha1.GroupName, metav1.GetOptions{}); err != nil {
		t.Errorf("APIService of %s: %v", networkingv1alpha1.SchemeGroupVersion, err)
	}
}

// expectGroupDiscovered checks both discovery endpoints for the group.
func expectGroupDiscovered(t *testing.T, cfg *rest.Config, group string, want bool) {
	t.Helper()
	for name, client := range map[string]discovery.DiscoveryInterface{
		"aggregated":   discovery.NewDiscoveryClientForConfigOrDie(cfg),
		"unaggregated": discovery.NewDiscoveryClientForConfigOrDie(cfg).WithLegacy(),
	} {
		groups, err := client.ServerGroups()
		if err != nil {
			t.Fatalf("%s discovery: %v", name, err)
		}
		found := slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == group })
		if found != want {
			t.Errorf("%s discovery lists %s: %v, want %v", name, group, found, want)
		}
	}
}

func TestKANAGateOffServesNoNetworkingGroup(t *testing.T) {
	// Not even --runtime-config=api/all=true serves it with the gate off.
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: []string{"--feature-gates=KANA=false", "--runtime-config=api/all=true"}})
	expectGroupDiscovered(t, s.ClientConfig, networkingv1alpha1.GroupName, false)
	expectNoAllocationController(t, s.ClientConfig)
	if _, err := kubernetes.NewForConfigOrDie(s.ClientConfig).RbacV1().ClusterRoles().Get(t.Context(), "system:aggregate-to-view:networkclaims", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("with KANA off the NetworkClaim roles were applied: want NotFound, got %v", err)
	}
	// The test server gives the process-wide gate back when it stops.
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !utilfeature.DefaultFeatureGate.Enabled(kana.KANA) {
		t.Error("KANA stays off after the test server with --feature-gates=KANA=false stopped")
	}
	// Nor does the next server started without --feature-gates get the
	// previous server's value.
	s = cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	expectGroupDiscovered(t, s.ClientConfig, networkingv1alpha1.GroupName, true)
}

// Naming the group in --runtime-config with the gate off is refused, saying
// which flag to change.
func TestRuntimeConfigCannotEnableNetworkingWithKANAOff(t *testing.T) {
	_, err := cptesting.Start(t.Context(), t.TempDir, cptesting.Options{Customize: kana.Install, Flags: []string{"--feature-gates=KANA=false", "--runtime-config=networking.x-k8s.io/v1alpha1=true"}})
	if err == nil || !strings.Contains(err.Error(), "--feature-gates=KANA=true") {
		t.Fatalf("start with KANA off and the group in --runtime-config: %v; want an error naming --feature-gates=KANA=true", err)
	}
	if !utilfeature.DefaultFeatureGate.Enabled(kana.KANA) {
		t.Error("KANA stays off after the failed start")
	}
}

// A user granted edit may manage claims, but not the well-known ones; an
// admin may. Read is aggregated into view.
func TestWellKnownClaimsAreForAdminsOnly(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(s.ClientConfig)
	for user, role := range map[string]string{"editor": "edit", "viewer": "view"} {
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claimsAs := func(user string) clientv1alpha1.NetworkClaimInterface {
		cfg, err := s.ClientConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return versioned.NewForConfigOrDie(cfg).NetworkingV1alpha1().NetworkClaims()
	}
	editor, viewer := claimsAs("editor"), claimsAs("viewer")

	// Aggregation into edit and view happens asynchronously; wait for it.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := editor.Create(ctx, newClaim("cni-pods", "10.244.0.0/16"), metav1.CreateOptions{})
		return err == nil, ignoreForbidden(err)
	})
	if err != nil {
		t.Fatalf("an editor cannot create an ordinary claim: %v", err)
	}
	_, err = editor.Create(ctx, newClaim("kube-apiserver", "10.96.0.0/12"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cluster admins") {
		t.Fatalf("an editor creates kube-apiserver: want Forbidden by the WellKnownNetworkClaims admission plugin, got %v", err)
	}
	if _, err := versioned.NewForConfigOrDie(s.ClientConfig).NetworkingV1alpha1().NetworkClaims().Create(ctx, newClaim("kube-apiserver", "10.96.0.0/12"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the admin creates kube-apiserver: %v", err)
	}
	if err := editor.Delete(ctx, "kube-apiserver", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("an editor deletes kube-apiserver: want Forbidden, got %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := viewer.Get(ctx, "kube-apiserver", metav1.GetOptions{})
		return err == nil, ignoreForbidden(err)
	})
	if err != nil {
		t.Fatalf("a viewer cannot read claims: %v", err)
	}
	if _, err := viewer.Create(ctx, newClaim("sneaky", "192.168.0.0/16"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a viewer creates a claim: want Forbidden, got %v", err)
	}
}

// TestWellKnownClaimsGuardedFromTheFirstRequest: the guard is compiled
// in, so it holds the moment /readyz first passes, on a fresh data dir and
// on a restart. Authorization allows everything here: only admission can
// refuse the request.
func TestWellKnownClaimsGuardedFromTheFirstRequest(t *testing.T) {
	dataDir := t.TempDir()
	for _, start := range []string{"first start", "restart"} {
		s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, DataDir: dataDir, Flags: []string{"--authorization-mode=AlwaysAllow"}})
		cfg, err := s.ClientConfigFor("alice")
		if err != nil {
			t.Fatal(err)
		}
		claims := versioned.NewForConfigOrDie(cfg).NetworkingV1alpha1().NetworkClaims()
		for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
			_, err := claims.Create(t.Context(), newClaim(name, "10.96.0.0/12"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cluster admins") {
				t.Fatalf("%s: alice creates %s as soon as the server is ready: want Forbidden naming cluster admins, got %v", start, name, err)
			}
		}
		if _, err := claims.Create(t.Context(), newClaim("alice", "10.96.0.0/12"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("%s: alice creates her own claim: %v", start, err)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLegacyWellKnownPolicyRemoved: earlier versions guarded the
// well-known claims with a ValidatingAdmissionPolicy they applied at every
// start; a data dir that holds it loses it at the next start, since the
// admission plugin guards the claims now.
func TestLegacyWellKnownPolicyRemoved(t *testing.T) {
	dataDir := t.TempDir()
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, DataDir: dataDir})
	policies := kubernetes.NewForConfigOrDie(s.ClientConfig).AdmissionregistrationV1()
	const name = "networkclaims-well-known-names"
	// What an earlier version applied, trimmed to what the API requires.
	apply := metav1.ApplyOptions{FieldManager: "sample-generic-controlplane", Force: true}
	if _, err := policies.ValidatingAdmissionPolicies().Apply(t.Context(), admissionv1ac.ValidatingAdmissionPolicy(name).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicySpec().
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(admissionv1ac.NamedRuleWithOperations().
				WithAPIGroups("networking.x-k8s.io").WithAPIVersions("*").WithResources("networkclaims").WithOperations(admissionregistrationv1.Create))).
			WithValidations(admissionv1ac.Validation().WithExpression("'system:masters' in request.userInfo.groups"))), apply); err != nil {
		t.Fatal(err)
	}
	if _, err := policies.ValidatingAdmissionPolicyBindings().Apply(t.Context(), admissionv1ac.ValidatingAdmissionPolicyBinding(name).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().WithPolicyName(name).WithValidationActions(admissionregistrationv1.Deny)), apply); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	s = cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, DataDir: dataDir})
	policies = kubernetes.NewForConfigOrDie(s.ClientConfig).AdmissionregistrationV1()
	if _, err := policies.ValidatingAdmissionPolicies().Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("policy %s after a restart: want NotFound, got %v", name, err)
	}
	if _, err := policies.ValidatingAdmissionPolicyBindings().Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("policy binding %s after a restart: want NotFound, got %v", name, err)
	}
}

func ignoreForbidden(err error) error {
	if apierrors.IsForbidden(err) {
		return nil
	}
	return err
}
