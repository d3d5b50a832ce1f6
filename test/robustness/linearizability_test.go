package robustness

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// obj is an object as a client saw it.
func obj(name, rv, value string) *Object {
	return &Object{Name: name, ResourceVersion: rv, Value: value}
}

func TestCheckLinearizable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history []Op
		want    porcupine.CheckResult
	}{
		{
			name: "create, update with the right version, read",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Update, Name: "a", Value: "2", Precondition: "10", Outcome: OK, Result: obj("a", "12", "2"), Call: 20, Return: 30},
				{Client: 1, Kind: Get, Name: "a", Outcome: OK, Result: obj("a", "12", "2"), Call: 40, Return: 50},
			},
			want: porcupine.Ok,
		},
		{
			name: "a stale read after an acknowledged update",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Update, Name: "a", Value: "2", Precondition: "10", Outcome: OK, Result: obj("a", "12", "2"), Call: 20, Return: 30},
				{Client: 1, Kind: Get, Name: "a", Outcome: OK, Result: obj("a", "10", "1"), Call: 40, Return: 50},
			},
			want: porcupine.Illegal,
		},
		{
			name: "a lost update: two updates from the same version both succeed",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Update, Name: "a", Value: "2", Precondition: "10", Outcome: OK, Result: obj("a", "12", "2"), Call: 20, Return: 30},
				{Client: 1, Kind: Update, Name: "a", Value: "3", Precondition: "10", Outcome: OK, Result: obj("a", "13", "3"), Call: 21, Return: 31},
			},
			want: porcupine.Illegal,
		},
		{
			name: "a resourceVersion that goes back",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Update, Name: "a", Value: "2", Precondition: "10", Outcome: OK, Result: obj("a", "9", "2"), Call: 20, Return: 30},
			},
			want: porcupine.Illegal,
		},
		{
			name: "a create of an object that exists",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 1, Kind: Create, Name: "a", Value: "2", Outcome: OK, Result: obj("a", "11", "2"), Call: 20, Return: 30},
			},
			want: porcupine.Illegal,
		},
		{
			name: "a read older than an acknowledged write, after an update of unknown outcome",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Update, Name: "a", Value: "2", Precondition: "10", Outcome: Unknown, Call: 20, Return: 30},
				{Client: 1, Kind: Get, Name: "a", Outcome: OK, Result: obj("a", "1", "1"), Call: 40, Return: 50},
			},
			want: porcupine.Illegal, // rv 1 is below the create's 10
		},
		{
			name: "an update of unknown outcome that took effect",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Update, Name: "a", Value: "2", Precondition: "10", Outcome: Unknown, Call: 20, Return: 30},
				{Client: 1, Kind: Get, Name: "a", Outcome: OK, Result: obj("a", "15", "2"), Call: 40, Return: 50},
				{Client: 1, Kind: Update, Name: "a", Value: "3", Precondition: "15", Outcome: OK, Result: obj("a", "16", "3"), Call: 60, Return: 70},
			},
			want: porcupine.Ok,
		},
		{
			name: "a lost update hidden behind one of unknown outcome",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Update, Name: "a", Value: "2", Precondition: "10", Outcome: Unknown, Call: 20, Return: 30},
				// A conflict at version 10: the update took effect...
				{Client: 1, Kind: Update, Name: "a", Value: "3", Precondition: "10", Outcome: Conflict, Call: 40, Return: 50},
				// ...so a delete at version 10 must fail.
				{Client: 2, Kind: Delete, Name: "a", Precondition: "10", Outcome: OK, Call: 60, Return: 70},
			},
			want: porcupine.Illegal,
		},
		{
			name: "a delete with a stale precondition that succeeds",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Update, Name: "a", Value: "2", Precondition: "10", Outcome: OK, Result: obj("a", "12", "2"), Call: 20, Return: 30},
				{Client: 1, Kind: Delete, Name: "a", Precondition: "10", Outcome: OK, Call: 40, Return: 50},
			},
			want: porcupine.Illegal,
		},
		{
			name: "a consistent list that misses an acknowledged create",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Create, Name: "b", Value: "2", Outcome: OK, Result: obj("b", "11", "2"), Call: 20, Return: 30},
				{Client: 1, Kind: List, Outcome: OK, ListRV: "11", Items: []Object{*obj("a", "10", "1")}, Call: 40, Return: 50},
			},
			want: porcupine.Illegal,
		},
		{
			name: "a consistent list of what was written",
			history: []Op{
				{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1"), Call: 0, Return: 10},
				{Client: 0, Kind: Create, Name: "b", Value: "2", Outcome: OK, Result: obj("b", "11", "2"), Call: 20, Return: 30},
				{Client: 1, Kind: List, Outcome: OK, ListRV: "11", Items: []Object{*obj("a", "10", "1"), *obj("b", "11", "2")}, Call: 40, Return: 50},
			},
			want: porcupine.Ok,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r, err := CheckLinearizable(tc.history, 10*time.Second, dir)
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s", r.Verdict, tc.want)
			}
			if tc.want == porcupine.Illegal {
				if _, err := os.Stat(filepath.Join(dir, "linearizability.html")); err != nil || r.Visualization == "" {
					t.Errorf("no visualization for an illegal history: %q, %v", r.Visualization, err)
				}
			}
		})
	}
}
