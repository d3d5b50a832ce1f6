package networkregistry

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/fake"
)

func TestWaitForDecision(t *testing.T) {
	const uid = types.UID("applied-uid")
	// version is the claim svc at generation and resourceVersion rv,
	// decided (allocated or not) or pending.
	version := func(generation int64, rv string, decided, allocated bool) *v1alpha1.NetworkClaim {
		status := v1alpha1.AllocationAllocated
		if !allocated {
			status = v1alpha1.AllocationUnavailable
		}
		c := newClaim("svc", rec{prefix: "10.96.0.0/12", status: status, message: "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver"})
		c.UID, c.ResourceVersion, c.Generation = uid, rv, generation
		if decided {
			setReady(c, allocated)
		} else {
			c.Status = v1alpha1.NetworkClaimStatus{}
		}
		return c
	}
	pending := func(generation int64, rv string) *v1alpha1.NetworkClaim { return version(generation, rv, false, false) }
	allocated := func(generation int64, rv string) *v1alpha1.NetworkClaim { return version(generation, rv, true, true) }
	// A status that decides generation 1 and was written after the apply
	// of generation 2 began: a decision, but not on what was applied.
	decidedBefore := allocated(1, "6")
	replaced := allocated(1, "7")
	replaced.UID = "another-uid"
	expired := watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("too old resource version: 5 (8)").ErrStatus}
	deletedErr := "NetworkClaim svc was deleted while waiting for its allocation"

	tests := []struct {
		name    string
		applied *v1alpha1.NetworkClaim
		// watches are the events each watch delivers, in turn.
		watches [][]watch.Event
		// stored is what a read of the claim returns; nil: not found.
		stored *v1alpha1.NetworkClaim
		// wantRVs are the resourceVersions the watches start from.
		wantRVs []string
		// wantRV is the resourceVersion of the claim returned; "" when
		// wantErr.
		wantRV, wantErr string
		// wantUnavailable: the claim comes with an *UnavailableError.
		wantUnavailable bool
		// watchErr fails every watch.
		watchErr error
		// giveUp ends ctx, with the cause "gave up", once the first watch
		// is made.
		giveUp bool
	}{
		{
			name:    "decided when applied",
			applied: allocated(1, "5"),
			wantRV:  "5",
		},
		{
			name:    "decided later",
			applied: pending(2, "5"),
			watches: [][]watch.Event{{
				{Type: watch.Modified, Object: decidedBefore},
				{Type: watch.Modified, Object: pending(2, "7")},
				{Type: watch.Modified, Object: allocated(2, "8")},
			}},
			wantRVs: []string{"5"},
			wantRV:  "8",
		},
		{
			name:            "unavailable",
			applied:         pending(1, "5"),
			watches:         [][]watch.Event{{{Type: watch.Modified, Object: version(1, "6", true, false)}}},
			wantRVs:         []string{"5"},
			wantRV:          "6",
			wantUnavailable: true,
		},
		{
			name:    "a later generation decided",
			applied: pending(1, "5"),
			watches: [][]watch.Event{{{Type: watch.Modified, Object: allocated(3, "9")}}},
			wantRVs: []string{"5"},
			wantRV:  "9",
		},
		{
			name:    "deleted",
			applied: pending(1, "5"),
			watches: [][]watch.Event{{{Type: watch.Deleted, Object: pending(1, "6")}}},
			wantRVs: []string{"5"},
			wantErr: deletedErr,
		},
		{
			name:    "deleted and created again",
			applied: pending(1, "5"),
			watches: [][]watch.Event{{{Type: watch.Added, Object: replaced}}},
			wantRVs: []string{"5"},
			wantErr: deletedErr,
		},
		{
			// The watch was down until etcd compacted its resourceVersion.
			name:    "resourceVersion compacted",
			applied: pending(1, "5"),
			watches: [][]watch.Event{{expired}, {{Type: watch.Modified, Object: allocated(1, "12")}}},
			stored:  pending(1, "11"),
			wantRVs: []string{"5", "11"},
			wantRV:  "12",
		},
		{
			name:    "resourceVersion compacted, decided meanwhile",
			applied: pending(1, "5"),
			watches: [][]watch.Event{{expired}},
			stored:  allocated(1, "11"),
			wantRVs: []string{"5"},
			wantRV:  "11",
		},
		{
			name:    "resourceVersion compacted, deleted meanwhile",
			applied: pending(1, "5"),
			watches: [][]watch.Event{{expired}},
			wantRVs: []string{"5"},
			wantErr: deletedErr,
		},
		{
			name:    "resourceVersion compacted, created again meanwhile",
			applied: pending(1, "5"),
			watches: [][]watch.Event{{expired}},
			stored:  replaced,
			wantRVs: []string{"5"},
			wantErr: deletedErr,
		},
		{
			name:    "ctx ends",
			applied: pending(1, "5"),
			watches: [][]watch.Event{{{Type: watch.Modified, Object: pending(1, "6")}}},
			giveUp:  true,
			wantRVs: []string{"5"},
			wantErr: "waiting for NetworkClaim svc to be allocated: gave up",
		},
		{
			name:     "watch forbidden",
			applied:  pending(1, "5"),
			watchErr: apierrors.NewForbidden(v1alpha1.Resource("networkclaims"), "", errors.New("no")),
			wantRVs:  []string{"5"},
			wantErr:  "watching NetworkClaim svc: networkclaims.networking.x-k8s.io is forbidden: no",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.stored != nil {
				objects = append(objects, tc.stored)
			}
			client := fake.NewSimpleClientset(objects...)
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			ctx, giveUp := context.WithCancelCause(ctx)
			defer giveUp(nil)
			watches := watchesOf(client, tc.watches)
			watches.err = tc.watchErr
			if tc.giveUp {
				watches.made = func() { giveUp(errors.New("gave up")) }
			}

			claim, err := New(client, "").WaitForDecision(ctx, tc.applied)

			// One claim is watched, by name, from where the wait is.
			var rvs []string
			for _, w := range watches.asked() {
				rvs = append(rvs, w.ResourceVersion)
				if selector := w.Fields.String(); selector != "metadata.name=svc" {
					t.Errorf("watched NetworkClaims with field selector %q, want metadata.name=svc", selector)
				}
			}
			if !slices.Equal(rvs, tc.wantRVs) {
				t.Errorf("watched from resourceVersions %q, want %q", rvs, tc.wantRVs)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || claim != nil {
					t.Fatalf("WaitForDecision = %v, %v; want error %q", claim, err, tc.wantErr)
				}
				return
			}
			var unavailable *UnavailableError
			if claim == nil || claim.ResourceVersion != tc.wantRV || (err != nil) != tc.wantUnavailable || (err != nil && !errors.As(err, &unavailable)) {
				t.Fatalf("WaitForDecision = %v, %v; want the claim at resourceVersion %s (unavailable: %t)", claim, err, tc.wantRV, tc.wantUnavailable)
			}
			if tc.wantUnavailable && (unavailable.Claim != "svc" || len(unavailable.Records) != 1) {
				t.Errorf("UnavailableError %+v, want svc's record", unavailable)
			}
		})
	}
}

// fakeWatches makes each watch of NetworkClaims deliver a list of events,
// and records what the watches asked for.
type fakeWatches struct {
	mu           sync.Mutex
	events       [][]watch.Event
	restrictions []clienttesting.WatchRestrictions
	// err, if set, fails every watch.
	err error
	// made, if set, is called as each watch is made.
	made func()
}

// watchesOf makes the watches of client's NetworkClaims deliver events:
// events[i] for the i-th watch, nothing for a watch beyond them.
func watchesOf(client *fake.Clientset, events [][]watch.Event) *fakeWatches {
	w := &fakeWatches{events: events}
	client.PrependWatchReactor("networkclaims", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		var events []watch.Event
		if n := len(w.restrictions); n < len(w.events) {
			events = w.events[n]
		}
		w.restrictions = append(w.restrictions, action.(clienttesting.WatchAction).GetWatchRestrictions())
		fw := watch.NewFakeWithChanSize(len(events), false)
		for _, e := range events {
			fw.Action(e.Type, e.Object)
		}
		if w.made != nil {
			w.made()
		}
		if w.err != nil {
			return true, nil, w.err
		}
		return true, fw, nil
	})
	return w
}

// asked returns the restrictions of the watches made so far.
func (w *fakeWatches) asked() []clienttesting.WatchRestrictions {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.restrictions)
}
