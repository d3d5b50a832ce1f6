package robustness

import (
	"strings"
	"testing"
)

func ev(typ EventType, name, rv, value string) Event {
	return Event{Type: typ, Object: Object{Name: name, ResourceVersion: rv, Value: value}}
}

func TestCheckWatches(t *testing.T) {
	writes := []Op{
		{Kind: Create, Name: "a", Value: "1", Outcome: OK, Result: obj("a", "10", "1")},
		{Kind: Update, Name: "a", Value: "2", Outcome: OK, Result: obj("a", "11", "2")},
		{Kind: Create, Name: "b", Value: "3", Outcome: OK, Result: obj("b", "12", "3")},
	}
	complete := []Event{ev(Added, "a", "10", "1"), ev(Modified, "a", "11", "2"), ev(Added, "b", "12", "3")}
	for _, tc := range []struct {
		name    string
		watches []Watch
		want    string // "" for no violation
	}{
		{name: "complete and ordered", watches: []Watch{{From: "9", Events: complete}, {From: "10", Events: complete[1:]}}},
		{name: "resumed with a bookmark", watches: []Watch{{From: "9", Events: append([]Event{ev(Bookmark, "", "9", "")}, complete...)}}},
		{name: "410 Gone ends a watch", watches: []Watch{{From: "9", Events: complete}, {From: "2", Gone: true}}},
		{name: "a missed event", watches: []Watch{{From: "9", Events: []Event{complete[0], complete[2]}}}, want: "missed 1 changes"},
		{name: "out of order", watches: []Watch{{From: "9", Events: []Event{complete[1], complete[0], complete[2]}}}, want: "out of order or twice"},
		{name: "delivered twice", watches: []Watch{{From: "9", Events: []Event{complete[0], complete[0], complete[1], complete[2]}}}, want: "out of order or twice"},
		{name: "an event at the revision it started from", watches: []Watch{{From: "10", Events: complete}}, want: "out of order or twice"},
		{name: "a bookmark ahead of its events", watches: []Watch{{From: "9", Events: []Event{complete[0], ev(Bookmark, "", "12", ""), complete[1], complete[2]}}}, want: "after a bookmark"},
		{name: "two histories", watches: []Watch{{From: "9", Events: []Event{complete[0], ev(Modified, "a", "11", "other"), complete[2]}}}, want: "two changes at revision 11"},
		{name: "a gap after a resume", watches: []Watch{{From: "9", Events: complete[:1]}, {From: "11", Events: complete[2:]}, {From: "10", Events: complete[2:]}}, want: "missed 1 changes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckWatches(tc.watches, writes)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("a good history: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a violation saying %q", err, tc.want)
			}
		})
	}
}

func TestCheckLists(t *testing.T) {
	watches := []Watch{{From: "9", Events: []Event{ev(Added, "a", "10", "1"), ev(Modified, "a", "11", "2"), ev(Deleted, "a", "12", "2"), ev(Added, "b", "13", "3")}}}
	base := Op{Kind: List, Outcome: OK, ListRV: "9"}
	for _, tc := range []struct {
		name string
		list Op
		want string
	}{
		{name: "at a revision", list: Op{Kind: List, Outcome: OK, ListAt: "11", ListRV: "11", Items: []Object{*obj("a", "11", "2")}}},
		{name: "after a delete", list: Op{Kind: List, Outcome: OK, ListRV: "13", Items: []Object{*obj("b", "13", "3")}}},
		{name: "an old version", list: Op{Kind: List, Outcome: OK, ListAt: "11", ListRV: "11", Items: []Object{*obj("a", "10", "1")}}, want: "a is rv=10"},
		{name: "a deleted object", list: Op{Kind: List, Outcome: OK, ListRV: "13", Items: []Object{*obj("a", "11", "2"), *obj("b", "13", "3")}}, want: "a should not be there"},
		{name: "a missing object", list: Op{Kind: List, Outcome: OK, ListRV: "13"}, want: "b missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked, err := CheckLists([]Op{base, tc.list}, watches)
			if checked != 1 {
				t.Errorf("%d lists checked, want 1", checked)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("a good list: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a violation saying %q", err, tc.want)
			}
		})
	}
}

func TestCheckNothingLost(t *testing.T) {
	history := []Op{
		{Client: 0, Kind: Create, Name: "a", Value: "1", Outcome: OK, Call: 0, Return: 10},
		{Client: 0, Kind: Update, Name: "a", Value: "2", Outcome: OK, Call: 20, Return: 30},
		{Client: 0, Kind: Create, Name: "b", Value: "3", Outcome: OK, Call: 0, Return: 10},
		{Client: 0, Kind: Delete, Name: "b", Outcome: OK, Call: 20, Return: 30},
		// c's last acknowledged write may be followed by one of unknown
		// outcome: either value will do.
		{Client: 0, Kind: Create, Name: "c", Value: "4", Outcome: OK, Call: 0, Return: 10},
		{Client: 1, Kind: Update, Name: "c", Value: "5", Outcome: Unknown, Call: 20, Return: 30},
	}
	for _, tc := range []struct {
		name  string
		final []Object
		want  string
	}{
		{name: "everything there", final: []Object{*obj("a", "11", "2"), *obj("c", "10", "4")}},
		{name: "the unknown update took effect", final: []Object{*obj("a", "11", "2"), *obj("c", "12", "5")}},
		{name: "an update lost", final: []Object{*obj("a", "10", "1"), *obj("c", "10", "4")}, want: "holds value=1"},
		{name: "an object lost", final: []Object{*obj("c", "10", "4")}, want: "a is gone"},
		{name: "a delete lost", final: []Object{*obj("a", "11", "2"), *obj("b", "10", "3"), *obj("c", "10", "4")}, want: "b is still there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckNothingLost(history, tc.final)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("a good final state: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a violation saying %q", err, tc.want)
			}
		})
	}
}

// A list after a break in the watches (one ended with 410 Gone, and the
// next started later) cannot be checked: it is not, and it is taken as
// the base of the next.
func TestCheckListsAfterAGap(t *testing.T) {
	watches := []Watch{
		{From: "9", Events: []Event{ev(Added, "a", "10", "1")}, Gone: true},
		{From: "12", Events: []Event{ev(Added, "b", "13", "3")}},
	}
	history := []Op{
		{Kind: List, Outcome: OK, ListRV: "9"},
		{Kind: List, Outcome: OK, ListRV: "12", Items: []Object{*obj("a", "11", "2")}},
		{Kind: List, Outcome: OK, ListRV: "13", Items: []Object{*obj("a", "11", "2"), *obj("b", "13", "3")}},
	}
	checked, err := CheckLists(history, watches)
	if err != nil || checked != 1 {
		t.Errorf("CheckLists = %d, %v; want the last list checked against the one before the gap, and no violation", checked, err)
	}
}
