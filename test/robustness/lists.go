package robustness

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// CheckLists checks that every list answered with the key space as it was
// at the revision it names: the changes up to that revision (every watch's
// events and every acknowledged write, as CheckWatches gathers them),
// applied to the first list, which is where the watches start. Lists before
// the first one's revision, and lists that failed, are not checked. Run it
// once CheckWatches has found the watches complete: a change no watch saw
// would make a list look wrong.
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
	base := lists[0]
	baseRV, err := revision(base.ListRV)
	if err != nil {
		return 0, fmt.Errorf("the first list: %w", err)
	}
	var changes []change
	seen := map[int64]bool{}
	for _, w := range watches {
		for _, e := range w.Events {
			rv, err := revision(e.Object.ResourceVersion)
			if err != nil || e.Type == Bookmark || seen[rv] || rv <= baseRV {
				continue
			}
			seen[rv] = true
			changes = append(changes, change{rv: rv, typ: e.Type, name: e.Object.Name, value: e.Object.Value})
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return int(a.rv - b.rv) })

	state := map[string]Object{}
	for _, item := range base.Items {
		state[item.Name] = item
	}
	var errs []error
	next := 0
	checked := 0
	for _, list := range lists[1:] {
		rv, err := revision(list.ListRV)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", list, err))
			continue
		}
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
	return checked, errors.Join(errs...)
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
