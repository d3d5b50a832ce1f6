package robustness

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// CheckLists checks that every list answered with the key space as it was
// at the revision it names: the previous list, with the changes since
// applied (every watch's events, as CheckWatches gathers them). A list is
// checked only when the watches saw every revision since the previous one
// without a break (a watch ended with 410 Gone leaves one); otherwise it
// becomes the base of the next. Run it once CheckWatches has found the
// watches complete.
func CheckLists(history []Op, watches []Watch) (int, error) {
	var lists []Op
	for _, op := range history {
		if op.Kind == List && op.Outcome == OK {
			lists = append(lists, op)
		}
	}
	if len(lists) == 0 {
		return 0, nil
	}
	slices.SortStableFunc(lists, func(a, b Op) int { return cmpRV(a.ListRV, b.ListRV) })
	var changes []change
	seen := map[int64]bool{}
	var covered []span
	for _, w := range watches {
		from := int64(0)
		if w.From != "" && w.From != "0" {
			from, _ = revision(w.From)
		}
		reached := from
		for _, e := range w.Events {
			rv, err := revision(e.Object.ResourceVersion)
			if err != nil {
				continue
			}
			reached = max(reached, rv)
			if e.Type == Bookmark || seen[rv] {
				continue
			}
			seen[rv] = true
			changes = append(changes, change{rv: rv, typ: e.Type, name: e.Object.Name, value: e.Object.Value})
		}
		if from > 0 && reached > from {
			covered = append(covered, span{from, reached})
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return int(a.rv - b.rv) })

	var errs []error
	checked, next := 0, 0
	var state map[string]Object
	prev := int64(0)
	for _, list := range lists {
		rv, err := revision(list.ListRV)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", list, err))
			continue
		}
		// Changes up to the previous list are in state already.
		for next < len(changes) && changes[next].rv <= prev {
			next++
		}
		if state != nil && isCovered(covered, prev, rv) {
			for ; next < len(changes) && changes[next].rv <= rv; next++ {
				c := changes[next]
				if c.typ == Deleted {
					delete(state, c.name)
				} else {
					state[c.name] = Object{Name: c.name, ResourceVersion: fmt.Sprint(c.rv), Value: c.value}
				}
			}
			got := map[string]Object{}
			for _, item := range list.Items {
				got[item.Name] = item
			}
			checked++
			if !maps.Equal(got, state) {
				errs = append(errs, fmt.Errorf("%s, at %s: %s", list, list.ListRV, diffObjects(state, got)))
			}
		}
		// The next list is checked against this one.
		state = map[string]Object{}
		for _, item := range list.Items {
			state[item.Name] = item
		}
		prev = rv
	}
	return checked, errors.Join(errs...)
}

// span is the revisions (from, to] a watch saw without a break.
type span struct{ from, to int64 }

// isCovered reports whether the spans cover (from, to] without a break.
func isCovered(spans []span, from, to int64) bool {
	if to <= from {
		return true
	}
	reached := from
	for progress := true; progress && reached < to; {
		progress = false
		for _, s := range spans {
			if s.from <= reached && s.to > reached {
				reached, progress = s.to, true
			}
		}
	}
	return reached >= to
}

// diffObjects says how got differs from want.
func diffObjects(want, got map[string]Object) string {
	var d []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[name]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%s missing (want rv=%s value=%s)", name, want[name].ResourceVersion, want[name].Value))
		case g != want[name]:
			d = append(d, fmt.Sprintf("%s is rv=%s value=%s, want rv=%s value=%s", name, g.ResourceVersion, g.Value, want[name].ResourceVersion, want[name].Value))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			d = append(d, fmt.Sprintf("%s should not be there (rv=%s)", name, got[name].ResourceVersion))
		}
	}
	return fmt.Sprint(d)
}

func cmpRV(a, b string) int {
	x, _ := revision(a)
	y, _ := revision(b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
