package bootstrap

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// appliedAlready reports whether applying desired (one of client-go's apply
// configurations), forced, as FieldManager would leave stored as it is: the
// fields FieldManager's apply owns are exactly those desired sets, with the
// values desired gives them. A field someone else has taken over, or one we
// applied before and desired leaves out, makes the two differ, and the
// apply puts it right.
//
// It reads the owned fields as client-go's Extract functions do, from the
// managed fields, but without a schema (theirs parses that of every built-in
// type on first use, a tenth of a second or more of CPU at every start): a
// field set leaf is a whole value, scalar or atomic (every list and struct
// of the RBAC API is atomic), and a field set with children is a map or
// struct, read key by key. Sets that name list elements (of associative or
// set lists) are not read: then it reports false, and the object is applied.
func appliedAlready(stored runtime.Object, desired any) bool {
	obj, err := meta.Accessor(stored)
	if err != nil {
		return false
	}
	var owned map[string]any
	for _, entry := range obj.GetManagedFields() {
		if entry.Manager == FieldManager && entry.Operation == metav1.ManagedFieldsOperationApply && entry.Subresource == "" && entry.FieldsV1 != nil {
			if err := json.Unmarshal(entry.FieldsV1.Raw, &owned); err != nil {
				return false
			}
			break
		}
	}
	if owned == nil {
		return false
	}
	value, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
	if err != nil {
		return false
	}
	got, ok := ownedValues(value, owned)
	if !ok {
		return false
	}
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return false
	}
	// The identity is not among the managed fields.
	delete(want, "kind")
	delete(want, "apiVersion")
	if metadata, ok := want["metadata"].(map[string]any); ok {
		delete(metadata, "name")
		delete(metadata, "namespace")
		if len(metadata) == 0 {
			delete(want, "metadata")
		}
	}
	return equality.Semantic.DeepEqual(got, want)
}

// ownedValues returns the parts of value that fields (a managed-fields set)
// names, and false when it names a part that value lacks or one it cannot
// read.
func ownedValues(value, fields map[string]any) (map[string]any, bool) {
	got := map[string]any{}
	for key, children := range fields {
		if key == "." {
			// The map or struct itself, beside its fields.
			continue
		}
		name, ok := strings.CutPrefix(key, "f:")
		if !ok {
			// "k:", "v:" or "i:": an element of a list.
			return nil, false
		}
		v, present := value[name]
		sub, ok := children.(map[string]any)
		if !present || !ok {
			return nil, false
		}
		if len(sub) == 0 {
			got[name] = v
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if got[name], ok = ownedValues(m, sub); !ok {
			return nil, false
		}
	}
	return got, true
}
