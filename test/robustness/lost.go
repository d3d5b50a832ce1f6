package robustness

import (
	"errors"
	"fmt"
)

// CheckNothingLost checks that final, the key space read once the faults
// have healed and the traffic has stopped, holds every acknowledged write
// that nothing could have overwritten: for each object, the acknowledged
// create, update or delete that returned last, unless another write of it
// may have come after it: an acknowledged one that returned after that one
// was called, or one of unknown outcome (which may take effect any time
// after its call).
func CheckNothingLost(history []Op, final []Object) (int, error) {
	last := map[string]Op{}
	for _, op := range history {
		if op.Outcome != OK || (op.Kind != Create && op.Kind != Update && op.Kind != Delete) {
			continue
		}
		if prev, ok := last[op.Name]; !ok || op.Return > prev.Return {
			last[op.Name] = op
		}
	}
	got := map[string]Object{}
	for _, o := range final {
		got[o.Name] = o
	}
	var errs []error
	checked := 0
	for name, w := range last {
		superseded := false
		for _, op := range history {
			if op.Name != name || (op.Client == w.Client && op.Call == w.Call) || (op.Kind != Create && op.Kind != Update && op.Kind != Delete) {
				continue
			}
			// A write that may have taken effect, and that may come
			// after w: it had not returned when w was called.
			if (op.Outcome == OK || op.Outcome == Unknown) && (op.Outcome == Unknown || op.Return > w.Call) {
				superseded = true
				break
			}
		}
		if superseded {
			continue
		}
		checked++
		o, ok := got[name]
		switch {
		case w.Kind == Delete && ok:
			errs = append(errs, fmt.Errorf("%s was acknowledged, and %s is still there (rv=%s value=%s)", w, name, o.ResourceVersion, o.Value))
		case w.Kind != Delete && !ok:
			errs = append(errs, fmt.Errorf("%s was acknowledged, and %s is gone", w, name))
		case w.Kind != Delete && o.Value != w.Value:
			errs = append(errs, fmt.Errorf("%s was acknowledged, and %s holds value=%s", w, name, o.Value))
		}
	}
	return checked, errors.Join(errs...)
}
