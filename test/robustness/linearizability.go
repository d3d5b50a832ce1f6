package robustness

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// LinearizabilityResult is the verdict on a history's object operations.
type LinearizabilityResult struct {
	// Verdict is porcupine's: Ok, Illegal, or Unknown (it ran out of
	// time).
	Verdict porcupine.CheckResult
	// Operations is how many operations were checked, Unknowns how many
	// of them had an unknown outcome.
	Operations, Unknowns int
	// Visualization is porcupine's HTML view of the history, written for
	// a verdict other than Ok when a directory was given.
	Visualization string
}

// CheckLinearizable checks that the object operations of history are
// linearizable against the model of Kubernetes object semantics
// (objectModel), object by object. A consistent list counts as a read of
// every object of the key space, at the time it ran; a list at a given
// resourceVersion is left to CheckLists. An operation whose outcome is
// unknown may have taken effect any time after its call, so it is checked as
// one that returned at the end of the history. On a verdict other than Ok,
// porcupine's visualization is written into dir (unless empty).
func CheckLinearizable(history []Op, timeout time.Duration, dir string) (LinearizabilityResult, error) {
	ops := porcupineOperations(history)
	r := LinearizabilityResult{Operations: len(history)}
	for _, op := range history {
		if op.Outcome == Unknown {
			r.Unknowns++
		}
	}
	model := objectModel.ToModel()
	model.Partition = partitionByObject
	result, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	r.Verdict = result
	if result != porcupine.Ok && dir != "" {
		r.Visualization = filepath.Join(dir, "linearizability.html")
		if err := porcupine.VisualizePath(model, info, r.Visualization); err != nil {
			return r, fmt.Errorf("writing porcupine's visualization: %w", err)
		}
	}
	return r, nil
}

// porcupineOperations turns the history into porcupine's operations: one
// per object operation, and one read per object of the key space for each
// consistent list. Unknown outcomes return at the end of time.
func porcupineOperations(history []Op) []porcupine.Operation {
	var names []string
	for _, op := range history {
		if op.Name != "" && !slices.Contains(names, op.Name) {
			names = append(names, op.Name)
		}
		for _, item := range op.Items {
			if !slices.Contains(names, item.Name) {
				names = append(names, item.Name)
			}
		}
	}
	var ops []porcupine.Operation
	add := func(op Op) {
		ret := op.Return
		if op.Outcome == Unknown {
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: op, Call: op.Call, Output: op, Return: ret})
	}
	for _, op := range history {
		if op.Outcome == Failed || (op.Outcome == Unknown && (op.Kind == Get || op.Kind == List)) {
			// It changed nothing and read nothing: it cannot change the
			// verdict, only lengthen the search.
			continue
		}
		if op.Kind != List {
			add(op)
			continue
		}
		if op.Outcome != OK || op.ListAt != "" {
			// A failed list read nothing; a list at a resourceVersion
			// is not a read of the latest state (CheckLists).
			continue
		}
		for _, name := range names {
			read := Op{Client: op.Client, Kind: List, Name: name, Outcome: NotFound, Call: op.Call, Return: op.Return}
			for _, item := range op.Items {
				if item.Name == name {
					read.Outcome, read.Result = OK, &item
				}
			}
			add(read)
		}
	}
	return ops
}

func partitionByObject(history []porcupine.Operation) [][]porcupine.Operation {
	byName := map[string][]porcupine.Operation{}
	var names []string
	for _, op := range history {
		name := op.Input.(Op).Name
		if _, ok := byName[name]; !ok {
			names = append(names, name)
		}
		byName[name] = append(byName[name], op)
	}
	var parts [][]porcupine.Operation
	for _, name := range names {
		parts = append(parts, byName[name])
	}
	return parts
}
