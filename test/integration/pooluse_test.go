package integration

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	applyv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/applyconfiguration/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
)

// The pools of these tests hold IPv6 space no other test claims on the
// shared server, so that their allocations block no one.
const (
	usePoolA = "use-pool-a" // fd75:a::/32
	usePoolB = "use-pool-b" // fd75:b::/32
)

// grantClaims makes user's claims client, bound to a ClusterRole of rules
// (deleted when the test ends).
func grantClaims(t *testing.T, s *cptesting.TestServer, user string, rules ...rbacv1.PolicyRule) clientv1alpha1.NetworkClaimInterface {
	t.Helper()
	ctx := t.Context()
	rbac := kubernetes.NewForConfigOrDie(s.ClientConfig).RbacV1()
	if len(rules) > 0 {
		if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{}) })
		bindClusterRole(t, s, user, user)
	}
	cfg, err := s.ClientConfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	return versioned.NewForConfigOrDie(cfg).NetworkingV1alpha1().NetworkClaims()
}

// bindClusterRole binds the ClusterRole role to user (until the test ends).
func bindClusterRole(t *testing.T, s *cptesting.TestServer, user, role string) {
	t.Helper()
	rbac := kubernetes.NewForConfigOrDie(s.ClientConfig).RbacV1()
	name := user + "-" + role
	if _, err := rbac.ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

var (
	writeClaims = rbacv1.PolicyRule{APIGroups: []string{networkingv1alpha1.GroupName}, Resources: []string{"networkclaims"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
	usePool     = func(names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{networkingv1alpha1.GroupName}, Resources: []string{"networkclaims"}, ResourceNames: names, Verbs: []string{"use"}}
	}
)

// untilAuthorized retries write while RBAC refuses it (bindings take
// effect within a moment), and returns its last error: nil, the plugin's
// refusal, or another.
func untilAuthorized(t *testing.T, write func(context.Context) error) error {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		last = write(ctx)
		return !apierrors.IsForbidden(last) || isPoolRefusal(last), nil
	})
	if err != nil {
		t.Fatalf("RBAC still refuses: %v (%v)", last, err)
	}
	return last
}

// isPoolRefusal reports whether err is NetworkClaimPoolUse's refusal.
func isPoolRefusal(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may not take address space from NetworkClaim")
}

// expectPoolRefusal fails unless err is the refusal of pool for user at
// field, naming the rule to grant.
func expectPoolRefusal(t *testing.T, what string, err error, user, pool, field string) {
	t.Helper()
	want := `user "` + user + `" may not take address space from NetworkClaim ` + pool + `: ` + field + `: grant the verb use on networkclaims "` + pool +
		`" in group networking.x-k8s.io (e.g. a ClusterRole with the rule {apiGroups: [networking.x-k8s.io], resources: [networkclaims], resourceNames: [` + pool + `], verbs: [use]}, bound to the user)`
	if !isPoolRefusal(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: %v\nwant Forbidden containing %q", what, err, want)
	}
}

// updateClaim changes the claim name with mutate and updates it, again on
// a conflict with the allocator's status writes.
func updateClaim(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, name string, mutate func(*networkingv1alpha1.NetworkClaim)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(c)
		_, err = claims.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
}

func poolClaim(name, pool string, length int32) *networkingv1alpha1.NetworkClaim {
	return claimOf(name, poolRecord("pods", pool, length))
}

// Taking space from a pool takes use on it, through the API with real
// users: create, update, server-side apply; the edit role has it (the
// upgrade story); records already admitted keep their space, and the
// allocator, which writes only status, needs no use.
func TestPoolUseIsAuthorized(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	admin := versioned.NewForConfigOrDie(s.ClientConfig).NetworkingV1alpha1().NetworkClaims()
	createClaims(t, admin,
		claimOf(usePoolA, networkingv1alpha1.AddressSpaceRecord{Prefix: "fd75:a::/32", Delegable: true}),
		claimOf(usePoolB, networkingv1alpha1.AddressSpaceRecord{Prefix: "fd75:b::/32", Delegable: true}))

	tenant := grantClaims(t, s, "use-tenant", writeClaims, usePool(usePoolA))
	stranger := grantClaims(t, s, "use-stranger", writeClaims, usePool(usePoolB))
	noUse := grantClaims(t, s, "use-writer", writeClaims)
	bindClusterRole(t, s, "use-editor", "edit")
	editor := grantClaims(t, s, "use-editor")
	cleanup := func(names ...string) {
		t.Cleanup(func() {
			for _, name := range names {
				if err := admin.Delete(context.Background(), name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
					t.Errorf("delete NetworkClaim %s: %v", name, err)
				}
			}
		})
	}
	cleanup("use-tenant-a", "use-tenant-apply")

	t.Run("create", func(t *testing.T) {
		if err := untilAuthorized(t, func(ctx context.Context) error {
			_, err := tenant.Create(ctx, poolClaim("use-tenant-a", usePoolA, 48), metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatalf("the tenant takes from pool A: %v", err)
		}
		// The allocator writes status with no use: the record is allocated.
		expectChosen(t, waitDecided(t, admin, "use-tenant-a"), "pods", "fd75:a::/48", usePoolA, "fd75:a::/32")

		err := untilAuthorized(t, func(ctx context.Context) error {
			_, err := tenant.Create(ctx, claimOf("use-tenant-b", networkingv1alpha1.AddressSpaceRecord{Prefix: "fd75:c::/48"}, poolRecord("pods", usePoolB, 48)), metav1.CreateOptions{})
			return err
		})
		expectPoolRefusal(t, "the tenant takes from pool B", err, "use-tenant", usePoolB, "spec.addressSpace[1].from.claim")

		err = untilAuthorized(t, func(ctx context.Context) error {
			_, err := stranger.Create(ctx, poolClaim("use-stranger-a", usePoolA, 48), metav1.CreateOptions{})
			return err
		})
		expectPoolRefusal(t, "a user with use on pool B only takes from pool A", err, "use-stranger", usePoolA, "spec.addressSpace[0].from.claim")

		// An exact sub-prefix with from is checked as a pool record is.
		err = untilAuthorized(t, func(ctx context.Context) error {
			_, err := noUse.Create(ctx, claimOf("use-writer-a", networkingv1alpha1.AddressSpaceRecord{Prefix: "fd75:a:ff::/48", From: &networkingv1alpha1.PrefixSource{Claim: usePoolA}}), metav1.CreateOptions{})
			return err
		})
		expectPoolRefusal(t, "a user without use takes an exact sub-prefix", err, "use-writer", usePoolA, "spec.addressSpace[0].from.claim")

		// edit has use on every claim: who drew from pools before the
		// check still does. Its aggregation takes a moment.
		for _, pool := range []string{usePoolA, usePoolB} {
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
				_, err := editor.Create(ctx, poolClaim("use-editor", pool, 48), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err == nil, ignoreForbidden(err)
			})
			if err != nil {
				t.Fatalf("a user bound to edit takes from %s: %v", pool, err)
			}
		}
	})

	t.Run("update", func(t *testing.T) {
		// Another record from the same pool, an unchanged from: allowed.
		if err := updateClaim(ctx, tenant, "use-tenant-a", func(c *networkingv1alpha1.NetworkClaim) {
			c.Spec.AddressSpace[0].Description = "pods"
			c.Spec.AddressSpace = append(c.Spec.AddressSpace, poolRecord("services", usePoolA, 64))
		}); err != nil {
			t.Fatalf("the tenant adds a record from pool A: %v", err)
		}
		// A changed from is checked.
		err := updateClaim(ctx, tenant, "use-tenant-a", func(c *networkingv1alpha1.NetworkClaim) {
			c.Spec.AddressSpace[1].From.Claim = usePoolB
		})
		expectPoolRefusal(t, "the tenant moves a record to pool B", err, "use-tenant", usePoolB, "spec.addressSpace[1].from.claim")
		// So is a new record of a pool already used by an unchanged one,
		// and a JSON patch is an update like any other.
		patch := []byte(`[{"op":"add","path":"/spec/addressSpace/-","value":{"name":"lab","from":{"claim":"` + usePoolB + `"},"prefixLength":64}}]`)
		_, err = tenant.Patch(ctx, "use-tenant-a", types.JSONPatchType, patch, metav1.PatchOptions{})
		expectPoolRefusal(t, "the tenant patches in a record from pool B", err, "use-tenant", usePoolB, "spec.addressSpace[2].from.claim")

		// What the admin took from pool B stays editable by the tenant,
		// who may not use it: records whose from is unchanged are not
		// checked again, so losing use takes nothing away.
		createClaims(t, admin, poolClaim("use-admin-b", usePoolB, 48))
		if err := updateClaim(ctx, tenant, "use-admin-b", func(c *networkingv1alpha1.NetworkClaim) {
			c.Spec.AddressSpace[0].Description = "edited by the tenant"
			c.Spec.AddressSpace = append(c.Spec.AddressSpace, networkingv1alpha1.AddressSpaceRecord{Prefix: "fd75:d::/48"})
		}); err != nil {
			t.Fatalf("the tenant edits a claim that takes from pool B, leaving its from alone: %v", err)
		}
		expectChosen(t, waitForClaim(t, admin, "use-admin-b", "decided at its new generation", func(c *networkingv1alpha1.NetworkClaim) bool {
			return c.Status.ObservedGeneration == c.Generation && len(c.Status.AddressSpace) == 2
		}), "pods", "fd75:b::/48", usePoolB, "fd75:b::/32")
	})

	t.Run("server-side apply", func(t *testing.T) {
		apply := func(pool string) error {
			_, err := tenant.Apply(ctx, applyv1alpha1.NetworkClaim("use-tenant-apply").WithSpec(applyv1alpha1.NetworkClaimSpec().
				WithAddressSpace(applyv1alpha1.AddressSpaceRecord().WithName("pods").WithFrom(applyv1alpha1.PrefixSource().WithClaim(pool)).WithPrefixLength(48))),
				metav1.ApplyOptions{FieldManager: "use-test", Force: true})
			return err
		}
		// Creating by apply, then changing from by apply.
		expectPoolRefusal(t, "the tenant applies a new claim from pool B", apply(usePoolB), "use-tenant", usePoolB, "spec.addressSpace[0].from.claim")
		if err := apply(usePoolA); err != nil {
			t.Fatalf("the tenant applies a claim from pool A: %v", err)
		}
		if err := apply(usePoolA); err != nil {
			t.Fatalf("the tenant applies the same claim again: %v", err)
		}
		expectPoolRefusal(t, "the tenant applies the claim's record from pool B", apply(usePoolB), "use-tenant", usePoolB, "spec.addressSpace[0].from.claim")
	})
}

// The tenant role of docs/networkclaim.md ("Who may do what"), applied as
// written: cluster alpha's operator takes from org-pods and org-services,
// in one claim or three, and from no other pool, and changes no claim but
// alpha's. The pools here hold space that no other test claims.
func TestDocumentedTenantRole(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	rbac := kubernetes.NewForConfigOrDie(s.ClientConfig).RbacV1()
	role, binding := documentedTenantRole(t)
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	user := binding.Subjects[0].Name

	admin := versioned.NewForConfigOrDie(s.ClientConfig).NetworkingV1alpha1().NetworkClaims()
	createClaims(t, admin,
		claimOf("org-pods", networkingv1alpha1.AddressSpaceRecord{Prefix: "fd75:e::/32", Delegable: true}),
		claimOf("org-services", networkingv1alpha1.AddressSpaceRecord{Prefix: "fd75:f::/32", Delegable: true}),
		claimOf("org-secret", networkingv1alpha1.AddressSpaceRecord{Prefix: "fd75:10::/32", Delegable: true}))
	cfg, err := s.ClientConfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	operator := versioned.NewForConfigOrDie(cfg).NetworkingV1alpha1().NetworkClaims()
	t.Cleanup(func() {
		for _, name := range []string{"alpha", "alpha-pods-v4", "alpha-services"} {
			if err := admin.Delete(context.Background(), name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
				t.Errorf("delete NetworkClaim %s: %v", name, err)
			}
		}
	})
	applyFrom := func(ctx context.Context, claim string, records ...*applyv1alpha1.AddressSpaceRecordApplyConfiguration) error {
		_, err := operator.Apply(ctx, applyv1alpha1.NetworkClaim(claim).WithSpec(applyv1alpha1.NetworkClaimSpec().WithAddressSpace(records...)),
			metav1.ApplyOptions{FieldManager: "registry-claim", Force: true})
		return err
	}
	record := func(name, pool string, length int32) *applyv1alpha1.AddressSpaceRecordApplyConfiguration {
		return applyv1alpha1.AddressSpaceRecord().WithName(name).WithFrom(applyv1alpha1.PrefixSource().WithClaim(pool)).WithPrefixLength(length)
	}
	// One claim, three records (Story 3's YAML), as kubectl apply --server-side writes it.
	if err := untilAuthorized(t, func(ctx context.Context) error {
		return applyFrom(ctx, "alpha", record("pods-v4", "org-pods", 48), record("pods-v6", "org-pods", 56), record("services", "org-services", 48))
	}); err != nil {
		t.Fatalf("alpha's operator applies alpha: %v", err)
	}
	// One claim per record, as registry claim writes them.
	for claim, pool := range map[string]string{"alpha-pods-v4": "org-pods", "alpha-services": "org-services"} {
		if err := applyFrom(ctx, claim, record(pool, pool, 48)); err != nil {
			t.Errorf("alpha's operator applies %s from %s: %v", claim, pool, err)
		}
	}
	expectPoolRefusal(t, "alpha's operator takes from org-secret", applyFrom(ctx, "alpha-pods-v6", record("org-secret", "org-secret", 48)),
		user, "org-secret", "spec.addressSpace[0].from.claim")
	expectPoolRefusal(t, "alpha's operator moves alpha's services to org-secret",
		applyFrom(ctx, "alpha", record("pods-v4", "org-pods", 48), record("pods-v6", "org-pods", 56), record("services", "org-secret", 48)),
		user, "org-secret", "spec.addressSpace[2].from.claim")
	// RBAC's own refusal: the pools are not alpha's to change.
	if err := applyFrom(ctx, "org-pods", applyv1alpha1.AddressSpaceRecord().WithPrefix("fd75:e::/32").WithDelegable(false)); !apierrors.IsForbidden(err) || isPoolRefusal(err) {
		t.Errorf("alpha's operator changes org-pods: %v, want RBAC's Forbidden", err)
	}
}

// documentedTenantRole is the ClusterRole and ClusterRoleBinding in the
// first YAML block of docs/networkclaim.md's "Who may do what".
func documentedTenantRole(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/networkclaim.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Who may do what\n")
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/networkclaim.md: no yaml block in "Who may do what"`)
	}
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	// The block is indented with its list item.
	var dedented strings.Builder
	for line := range strings.Lines(block) {
		dedented.WriteString(strings.TrimPrefix(line, "  "))
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(dedented.String())))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ClusterRole":
			role = &rbacv1.ClusterRole{}
			err = yaml.UnmarshalStrict(doc, role)
		case "ClusterRoleBinding":
			binding = &rbacv1.ClusterRoleBinding{}
			err = yaml.UnmarshalStrict(doc, binding)
		}
		if err != nil {
			t.Fatalf("docs/networkclaim.md, the %s: %v", meta.Kind, err)
		}
	}
	if role == nil || binding == nil || len(binding.Subjects) != 1 || binding.RoleRef.Name != role.Name {
		t.Fatalf("docs/networkclaim.md: want a ClusterRole and a ClusterRoleBinding of it to one user, got %+v and %+v", role, binding)
	}
	return role, binding
}
