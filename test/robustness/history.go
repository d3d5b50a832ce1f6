// Package robustness puts the Kubernetes API and the NetworkClaim registry
// through faults (kills, pauses, partitions, restarts, member replacement,
// compaction) while client-go traffic runs, records what every client saw,
// and checks the recorded history: linearizability of the object
// operations (porcupine, against a model of Kubernetes object semantics),
// the watch guarantees as etcd documents them, the registry's invariants,
// and that nothing acknowledged is lost. etcd's tests/robustness and
// Jepsen's etcd analyses are the anchors.
//
// The checkers are plain functions over recorded histories, tested here
// with histories known to be broken; the fault runs are behind the
// robustness build tag (make robustness).
package robustness

import (
	"fmt"
	"strconv"
)

// OpKind is what a client asked of the API.
type OpKind string

const (
	// Create creates an object that must not exist yet.
	Create OpKind = "create"
	// Update replaces an object whose resourceVersion is Precondition.
	Update OpKind = "update"
	// Delete deletes an object, with a resourceVersion precondition when
	// Precondition is set.
	Delete OpKind = "delete"
	// Get reads one object with a quorum read (no resourceVersion).
	Get OpKind = "get"
	// List reads the whole key space at ResourceVersion, a consistent list
	// when it asked for none.
	List OpKind = "list"
)

// Outcome is what the client learnt of its operation.
type Outcome string

const (
	// OK is a success: the server answered it did what was asked.
	OK Outcome = "ok"
	// Conflict is a refused precondition (409 Conflict).
	Conflict Outcome = "conflict"
	// NotFound is an object that does not exist (404).
	NotFound Outcome = "not-found"
	// AlreadyExists is a create of an object that exists (409).
	AlreadyExists Outcome = "already-exists"
	// Unknown is no answer: a timeout, a connection reset, a 5xx. The
	// operation may or may not have taken effect, at any time after it
	// was called.
	Unknown Outcome = "unknown"
	// Failed is an answer that it did nothing (e.g. 429 before it was
	// admitted): it took no effect.
	Failed Outcome = "failed"
)

// Object is an object of the key space as a client saw it.
type Object struct {
	Name string `json:"name"`
	// ResourceVersion is the object's, an etcd revision.
	ResourceVersion string `json:"resourceVersion"`
	// Value is the data the test writes, unique per write.
	Value string `json:"value"`
}

// Op is one operation of one client, with its call and return time (in
// nanoseconds of one clock) and its outcome.
type Op struct {
	Client int    `json:"client"`
	Kind   OpKind `json:"kind"`
	// Name is the object's, for every kind but List.
	Name string `json:"name,omitempty"`
	// Value is what a create or update writes.
	Value string `json:"value,omitempty"`
	// Precondition is the resourceVersion an update or delete requires.
	Precondition string `json:"precondition,omitempty"`
	// ListAt is the resourceVersion a list asked for (with
	// resourceVersionMatch=Exact, page by page); empty for a consistent
	// list.
	ListAt string `json:"listAt,omitempty"`

	Outcome Outcome `json:"outcome"`
	// Result is the object a create, update or get returned (its new
	// resourceVersion), or that a delete deleted.
	Result *Object `json:"result,omitempty"`
	// ListRV is the resourceVersion of a list's answer, and Items its
	// objects (all pages).
	ListRV string   `json:"listRV,omitempty"`
	Items  []Object `json:"items,omitempty"`

	Call   int64 `json:"call"`
	Return int64 `json:"return"`
}

func (o Op) String() string {
	s := fmt.Sprintf("client %d %s", o.Client, o.Kind)
	if o.Name != "" {
		s += " " + o.Name
	}
	if o.Value != "" {
		s += " value=" + o.Value
	}
	if o.Precondition != "" {
		s += " if rv=" + o.Precondition
	}
	s += " → " + string(o.Outcome)
	if o.Result != nil {
		s += fmt.Sprintf(" (rv=%s value=%s)", o.Result.ResourceVersion, o.Result.Value)
	}
	if o.Kind == List {
		s += fmt.Sprintf(" (rv=%s, %d items)", o.ListRV, len(o.Items))
	}
	return s
}

// revision parses a resourceVersion; the API server's are etcd revisions.
func revision(rv string) (int64, error) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("resourceVersion %q is not an etcd revision", rv)
	}
	return n, nil
}
