package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// Deleting an owner with each propagation policy does to its dependents
// what the policy promises, across resources (a ConfigMap owns a ConfigMap
// and a Secret):
//   - Background: the owner goes at once, the dependents after it;
//   - Foreground: the owner stays, marked with the foregroundDeletion
//     finalizer, for as long as a dependent with blockOwnerDeletion does,
//     and goes once it is gone;
//   - Orphan: the owner goes and the dependents stay, without the
//     ownerReference.
func TestSpecGarbageCollection(t *testing.T) {
	onEveryProvider(t, func(t *testing.T, c *Cluster) {
		ns := specNamespace(t, clientset(t, c), "e2e-spec-gc")
		dc := dynamicClient(t, c)
		configMaps := dc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
		secrets := dc.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(ns)

		for _, tc := range []struct {
			policy metav1.DeletionPropagation
			// hold keeps the blocking dependent with a finalizer of the
			// spec's own until check releases it.
			hold  bool
			check func(t *testing.T, owner string, blocking, other dependent)
		}{
			{
				policy: metav1.DeletePropagationBackground,
				check: func(t *testing.T, owner string, blocking, other dependent) {
					if _, err := configMaps.Get(t.Context(), owner, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
						t.Errorf("owner right after its Background deletion: want NotFound, got %v", err)
					}
					blocking.waitGone(t)
					other.waitGone(t)
				},
			},
			{
				policy: metav1.DeletePropagationForeground,
				hold:   true,
				check: func(t *testing.T, owner string, blocking, other dependent) {
					// The collector deletes every dependent; the one
					// without blockOwnerDeletion goes, the held one is
					// marked deleted and stays.
					other.waitGone(t)
					eventually(t, "the collector deletes "+blocking.name, func(ctx context.Context) (bool, error) {
						obj, err := blocking.client.Get(ctx, blocking.name, metav1.GetOptions{})
						if err != nil {
							return false, err
						}
						return obj.GetDeletionTimestamp() != nil, nil
					})
					// So the owner waits.
					got, err := configMaps.Get(t.Context(), owner, metav1.GetOptions{})
					if err != nil {
						t.Fatalf("owner while a blocking dependent stays: %v", err)
					}
					if got.GetDeletionTimestamp() == nil || !slices.Contains(got.GetFinalizers(), metav1.FinalizerDeleteDependents) {
						t.Errorf("owner while a blocking dependent stays: deletionTimestamp %v, finalizers %v; want it deleted, with finalizer %s",
							got.GetDeletionTimestamp(), got.GetFinalizers(), metav1.FinalizerDeleteDependents)
					}
					if err := releaseHold(t.Context(), blocking.client, blocking.name); err != nil {
						t.Fatal(err)
					}
					blocking.waitGone(t)
					eventually(t, "owner "+owner+" is gone after its dependents", func(ctx context.Context) (bool, error) {
						_, err := configMaps.Get(ctx, owner, metav1.GetOptions{})
						return apierrors.IsNotFound(err), ignoreNotFound(err)
					})
				},
			},
			{
				policy: metav1.DeletePropagationOrphan,
				check: func(t *testing.T, owner string, blocking, other dependent) {
					eventually(t, "owner "+owner+" is gone", func(ctx context.Context) (bool, error) {
						_, err := configMaps.Get(ctx, owner, metav1.GetOptions{})
						return apierrors.IsNotFound(err), ignoreNotFound(err)
					})
					// The collector removes the ownerReferences before it
					// lets the owner go: by now the dependents are orphans.
					for _, d := range []dependent{blocking, other} {
						obj, err := d.client.Get(t.Context(), d.name, metav1.GetOptions{})
						if err != nil {
							t.Fatalf("orphaned dependent %s: %v", d.name, err)
						}
						if refs := obj.GetOwnerReferences(); len(refs) != 0 || obj.GetDeletionTimestamp() != nil {
							t.Errorf("orphaned dependent %s: ownerReferences %v, deletionTimestamp %v; want none and not deleted", d.name, refs, obj.GetDeletionTimestamp())
						}
					}
				},
			},
		} {
			t.Run(string(tc.policy), func(t *testing.T) {
				ctx := t.Context()
				prefix := "e2e-spec-" + strings.ToLower(string(tc.policy))
				owner, err := configMaps.Create(ctx, object("v1", "ConfigMap", prefix+"-owner"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.GetName(), UID: owner.GetUID()}

				blocking := dependent{configMaps, prefix + "-blocking"}
				obj := object("v1", "ConfigMap", blocking.name)
				blockingRef := ref
				blockingRef.BlockOwnerDeletion = new(true)
				obj.SetOwnerReferences([]metav1.OwnerReference{blockingRef})
				if tc.hold {
					obj.SetFinalizers([]string{holdFinalizer})
					holdUntilCleanup(t, configMaps, blocking.name)
				}
				if _, err := configMaps.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				other := dependent{secrets, prefix + "-other"}
				obj = object("v1", "Secret", other.name)
				obj.SetOwnerReferences([]metav1.OwnerReference{ref})
				if _, err := secrets.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}

				gcObserved(t, configMaps, secrets, prefix)
				policy := tc.policy
				if err := configMaps.Delete(ctx, owner.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
					t.Fatalf("deleting the owner: %v", err)
				}
				tc.check(t, owner.GetName(), blocking, other)
			})
		}
	})
}

// gcObserved returns once the garbage collector has seen every ConfigMap
// and Secret created before the call. A policy applies to the dependents
// in the collector's graph: one it has not seen yet when its owner goes is
// later found dangling and deleted, even under Orphan (upstream's own
// integration test waits for its graph the same way, from inside). The
// collector takes each resource's changes in order, so a sentinel of that
// resource collected proves the ones created before it seen: an owner
// deleted after the call's dependents, with a ConfigMap and a Secret
// created after them, which the collector deletes.
func gcObserved(t *testing.T, configMaps, secrets dynamic.ResourceInterface, prefix string) {
	t.Helper()
	ctx := t.Context()
	owner, err := configMaps.Create(ctx, object("v1", "ConfigMap", prefix+"-sentinel-owner"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.GetName(), UID: owner.GetUID()}
	var sentinels []dependent
	for _, s := range []struct {
		client dynamic.ResourceInterface
		kind   string
	}{{configMaps, "ConfigMap"}, {secrets, "Secret"}} {
		d := dependent{s.client, prefix + "-sentinel-" + strings.ToLower(s.kind)}
		obj := object("v1", s.kind, d.name)
		obj.SetOwnerReferences([]metav1.OwnerReference{ref})
		if _, err := s.client.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sentinels = append(sentinels, d)
	}
	background := metav1.DeletePropagationBackground
	if err := configMaps.Delete(ctx, owner.GetName(), metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	for _, d := range sentinels {
		d.waitGone(t)
	}
}
