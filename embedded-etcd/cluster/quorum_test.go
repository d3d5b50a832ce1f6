package cluster

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckQuorum(t *testing.T) {
	voter := func(name string, healthy bool) MemberStatus {
		return MemberStatus{Name: name, ID: name + "-id", Healthy: healthy}
	}
	learner := func(name string, healthy bool) MemberStatus {
		return MemberStatus{Name: name, ID: name + "-id", Healthy: healthy, Learner: true}
	}
	cases := []struct {
		name    string
		members []MemberStatus
		target  string
		// wantErr is empty for an allowed removal.
		wantErr  string
		wantLast bool
	}{
		{name: "three healthy, remove one", members: []MemberStatus{voter("a", true), voter("b", true), voter("c", true)}, target: "b"},
		{name: "one down, remove it", members: []MemberStatus{voter("a", true), voter("b", true), voter("c", false)}, target: "c"},
		{name: "one down, remove a healthy one", members: []MemberStatus{voter("a", true), voter("b", true), voter("c", false)}, target: "b",
			wantErr: "removing member b would leave 2 voters of which 1 are healthy, fewer than the 2 a quorum needs (unhealthy: c): bring those members back or remove them first, or pass --force to remove b anyway"},
		{name: "two of five down, remove a healthy one", members: []MemberStatus{voter("a", true), voter("b", true), voter("c", true), voter("d", false), voter("e", false)}, target: "a",
			wantErr: "would leave 4 voters of which 2 are healthy, fewer than the 3 a quorum needs (unhealthy: d, e)"},
		{name: "two of five down, remove a down one", members: []MemberStatus{voter("a", true), voter("b", true), voter("c", true), voter("d", false), voter("e", false)}, target: "d"},
		{name: "two voters, the other down", members: []MemberStatus{voter("a", true), voter("b", false)}, target: "a",
			wantErr: "would leave 1 voters of which 0 are healthy, fewer than the 1 a quorum needs (unhealthy: b)"},
		{name: "two voters, remove the one down", members: []MemberStatus{voter("a", true), voter("b", false)}, target: "b"},
		{name: "learners do not count", members: []MemberStatus{voter("a", true), voter("b", false), learner("l", true)}, target: "a",
			wantErr: "would leave 1 voters of which 0 are healthy"},
		{name: "a learner may always go", members: []MemberStatus{voter("a", false), learner("l", true)}, target: "l"},
		{name: "the last voter", members: []MemberStatus{voter("a", true), learner("l", true)}, target: "a",
			wantErr: "member a is the last voter: etcd cannot remove it", wantLast: true},
		{name: "unnamed members by ID", members: []MemberStatus{voter("a", true), {ID: "4"}, voter("c", true)}, target: "a",
			wantErr: "(unhealthy: 4)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var target MemberStatus
			for _, m := range tc.members {
				if m.Name == tc.target {
					target = m
				}
			}
			err := checkQuorum(tc.members, target)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "":
			case err == nil:
				t.Fatalf("allowed, want refused with %q", tc.wantErr)
			case !errors.Is(err, ErrQuorum) || !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want ErrQuorum with %q", err, tc.wantErr)
			case errors.Is(err, errLastVoter) != tc.wantLast:
				t.Fatalf("errLastVoter %v, want %v", errors.Is(err, errLastVoter), tc.wantLast)
			}
		})
	}
}
