package robustness

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// objectState is one object of the key space, as the model knows it.
type objectState struct {
	Exists bool
	// RV is the object's resourceVersion; 0 while unknown (it was written
	// by an operation whose outcome is unknown, and nobody has read it
	// since).
	RV    int64
	Value string
	// LastRV is the highest resourceVersion the object has had that the
	// model knows: a write gives it a higher one, even after a delete.
	LastRV int64
}

func (s objectState) String() string {
	if !s.Exists {
		return fmt.Sprintf("absent (last rv %d)", s.LastRV)
	}
	rv := "?"
	if s.RV != 0 {
		rv = fmt.Sprint(s.RV)
	}
	return fmt.Sprintf("rv=%s value=%s", rv, s.Value)
}

// objectModel is Kubernetes' object semantics for one object, as the API
// server promises them on top of etcd: a create succeeds only when the
// object is absent, an update and a delete with a resourceVersion
// precondition only when the object has that version, a write gives the
// object a higher resourceVersion than any it had, and a read (a quorum get,
// or the object's part of a consistent list) returns the latest state. An
// operation whose outcome is unknown may or may not have taken effect: the
// model keeps both states (porcupine's NondeterministicModel), until a read
// tells them apart.
var objectModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{objectState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, op := state.(objectState), output.(Op)
		return stepObject(s, op)
	},
	Equal: func(a, b interface{}) bool { return a.(objectState) == b.(objectState) },
	DescribeOperation: func(input, output interface{}) string {
		return output.(Op).String()
	},
	DescribeState: func(state interface{}) string { return state.(objectState).String() },
}

// stepObject returns the states op can leave s in; none when op cannot
// have happened in s.
func stepObject(s objectState, op Op) []interface{} {
	same := []interface{}{s}
	none := []interface{}{}
	switch op.Outcome {
	case Failed:
		return same
	case Unknown:
		if op.Kind == Get || op.Kind == List {
			return same
		}
		// It did nothing, or it did what was asked, at a
		// resourceVersion nobody saw.
		states := []interface{}{s}
		if next, ok := apply(s, op, 0); ok {
			states = append(states, next)
		}
		return states
	}

	switch op.Kind {
	case Create:
		switch op.Outcome {
		case OK:
			return written(s, op)
		case AlreadyExists:
			return when(s.Exists, same)
		}
	case Update:
		switch op.Outcome {
		case OK:
			return written(s, op)
		case Conflict:
			return when(s.Exists && (s.RV == 0 || fmt.Sprint(s.RV) != op.Precondition), same)
		case NotFound:
			return when(!s.Exists, same)
		}
	case Delete:
		switch op.Outcome {
		case OK:
			if op.Result != nil && s.Exists && op.Result.Value != s.Value {
				return none
			}
			next, ok := apply(s, op, 0)
			return when(ok, []interface{}{next})
		case Conflict:
			return when(s.Exists && op.Precondition != "" && (s.RV == 0 || fmt.Sprint(s.RV) != op.Precondition), same)
		case NotFound:
			return when(!s.Exists, same)
		}
	case Get, List:
		switch op.Outcome {
		case OK:
			if op.Result == nil || !s.Exists || s.Value != op.Result.Value {
				return none
			}
			rv, err := revision(op.Result.ResourceVersion)
			if err != nil || (s.RV != 0 && s.RV != rv) || (s.RV == 0 && rv <= s.LastRV) {
				return none
			}
			s.RV, s.LastRV = rv, max(s.LastRV, rv)
			return []interface{}{s}
		case NotFound:
			return when(!s.Exists, same)
		}
	}
	return none
}

// written is the state after a successful create or update that returned
// the object op.Result.
func written(s objectState, op Op) []interface{} {
	if op.Result == nil || op.Result.Value != op.Value {
		return []interface{}{}
	}
	rv, err := revision(op.Result.ResourceVersion)
	if err != nil || rv <= s.LastRV {
		return []interface{}{}
	}
	next, ok := apply(s, op, rv)
	return when(ok, []interface{}{next})
}

// apply is s after the write op, at resourceVersion rv (0: unknown), if
// op's preconditions hold (or may hold) in s.
func apply(s objectState, op Op, rv int64) (objectState, bool) {
	// While the object's resourceVersion is unknown (a write of unknown
	// outcome gave it one above LastRV), only a precondition above LastRV
	// may match it.
	matches := func() bool {
		if s.RV != 0 {
			return fmt.Sprint(s.RV) == op.Precondition
		}
		pre, err := revision(op.Precondition)
		return err == nil && pre > s.LastRV
	}
	switch op.Kind {
	case Create:
		if s.Exists {
			return s, false
		}
		return objectState{Exists: true, RV: rv, Value: op.Value, LastRV: max(s.LastRV, rv)}, true
	case Update:
		if !s.Exists || !matches() {
			return s, false
		}
		return objectState{Exists: true, RV: rv, Value: op.Value, LastRV: max(s.LastRV, rv)}, true
	case Delete:
		if !s.Exists || (op.Precondition != "" && !matches()) {
			return s, false
		}
		return objectState{LastRV: max(s.LastRV, s.RV)}, true
	}
	return s, false
}

func when(ok bool, states []interface{}) []interface{} {
	if ok {
		return states
	}
	return []interface{}{}
}
