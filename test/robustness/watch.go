package robustness

import (
	"errors"
	"fmt"
	"slices"
)

// EventType is a watch event's type, as the API sends it.
type EventType string

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
)

// Event is one event a watch delivered: the object as the event carries
// it, whose resourceVersion is the revision of the change (of a bookmark:
// how far the watch has come).
type Event struct {
	Type   EventType `json:"type"`
	Object Object    `json:"object"`
}

// Watch is one watch stream of the key space, from its start to its end.
type Watch struct {
	Client int `json:"client"`
	// From is the resourceVersion it was started from.
	From string `json:"from"`
	// Events are what it delivered, bookmarks included, in order.
	Events []Event `json:"events"`
	// Gone is a watch the server ended with 410 Gone: From (or a
	// resourceVersion it reached) is compacted, and the client must list
	// again.
	Gone bool `json:"gone,omitempty"`
}

// change is one revision of the key space: what happened to which object.
type change struct {
	rv    int64
	typ   EventType
	name  string
	value string
}

// WatchReport is what CheckWatches checked.
type WatchReport struct {
	Watches, Events, Gone int
}

// CheckWatches checks the watch guarantees etcd documents, as seen through
// the API server, on every watch of history's key space:
//
//   - ordered: each watch delivers revisions in increasing order, none
//     twice, and none at or before the revision it was started from;
//   - one history: two events of the same revision, in any watches or in a
//     write's answer, tell the same change;
//   - complete: a watch delivers every change of the key space after the
//     revision it was started from, up to the last one it delivered or
//     bookmarked (the changes being all that any watch delivered, and every
//     acknowledged write), or ends with 410 Gone, never with a gap;
//   - bookmarks never ahead: no event after a bookmark has a revision at or
//     before it.
func CheckWatches(watches []Watch, history []Op) (WatchReport, error) {
	var report WatchReport
	var errs []error
	changes := map[int64]change{}
	record := func(c change, where string) {
		if prev, ok := changes[c.rv]; ok {
			if prev.name != c.name || prev.value != c.value || (prev.typ == Deleted) != (c.typ == Deleted) {
				errs = append(errs, fmt.Errorf("two changes at revision %d: %s %s value=%q, and %s %s value=%q (%s)", c.rv, prev.typ, prev.name, prev.value, c.typ, c.name, c.value, where))
			}
			return
		}
		changes[c.rv] = c
	}
	for _, op := range history {
		if op.Outcome != OK || (op.Kind != Create && op.Kind != Update) || op.Result == nil {
			continue
		}
		rv, err := revision(op.Result.ResourceVersion)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", op, err))
			continue
		}
		typ := Modified
		if op.Kind == Create {
			typ = Added
		}
		record(change{rv: rv, typ: typ, name: op.Name, value: op.Result.Value}, "the answer to "+op.String())
	}

	for i, w := range watches {
		report.Watches++
		report.Events += len(w.Events)
		if w.Gone {
			report.Gone++
		}
		from := int64(0)
		if w.From != "" && w.From != "0" {
			var err error
			if from, err = revision(w.From); err != nil {
				errs = append(errs, fmt.Errorf("watch %d: %w", i, err))
				continue
			}
		}
		last, bookmark := from, int64(0)
		for j, e := range w.Events {
			rv, err := revision(e.Object.ResourceVersion)
			if err != nil {
				errs = append(errs, fmt.Errorf("watch %d, event %d: %w", i, j, err))
				continue
			}
			if e.Type == Bookmark {
				if rv < last {
					errs = append(errs, fmt.Errorf("watch %d (client %d, from %s): bookmark at %d after an event at %d", i, w.Client, w.From, rv, last))
				}
				bookmark = max(bookmark, rv)
				continue
			}
			switch {
			case rv <= bookmark:
				errs = append(errs, fmt.Errorf("watch %d (client %d, from %s): %s %s at revision %d after a bookmark at %d", i, w.Client, w.From, e.Type, e.Object.Name, rv, bookmark))
			case rv <= last:
				errs = append(errs, fmt.Errorf("watch %d (client %d, from %s): %s %s at revision %d after revision %d: out of order or twice", i, w.Client, w.From, e.Type, e.Object.Name, rv, last))
			}
			last = max(last, rv)
			record(change{rv: rv, typ: e.Type, name: e.Object.Name, value: e.Object.Value}, fmt.Sprintf("watch %d", i))
		}
	}

	// Completeness, once every source of changes is in.
	revisions := make([]int64, 0, len(changes))
	for rv := range changes {
		revisions = append(revisions, rv)
	}
	slices.Sort(revisions)
	for i, w := range watches {
		from := int64(0)
		if w.From != "" && w.From != "0" {
			from, _ = revision(w.From)
		}
		seen := map[int64]bool{}
		reached := from
		for _, e := range w.Events {
			rv, err := revision(e.Object.ResourceVersion)
			if err != nil {
				continue
			}
			reached = max(reached, rv)
			if e.Type != Bookmark {
				seen[rv] = true
			}
		}
		if from == 0 {
			// From "now" or "any": it starts where the server was, which
			// the watch does not say; count from its first event.
			for _, e := range w.Events {
				if rv, err := revision(e.Object.ResourceVersion); err == nil && e.Type != Bookmark {
					from = rv - 1
					break
				}
			}
		}
		var missed []string
		for _, rv := range revisions {
			if rv > from && rv <= reached && !seen[rv] {
				c := changes[rv]
				missed = append(missed, fmt.Sprintf("%d (%s %s)", rv, c.typ, c.name))
			}
		}
		if len(missed) > 0 {
			errs = append(errs, fmt.Errorf("watch %d (client %d, from %s, reached %d) missed %d changes: %v", i, w.Client, w.From, reached, len(missed), missed))
		}
	}
	return report, errors.Join(errs...)
}
