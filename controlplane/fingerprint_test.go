package controlplane

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// fingerprint renders every value reachable from v (through pointers,
// structs, slices, arrays, maps and interfaces, unexported fields
// included) as path → value, so that a test can tell which of them a call
// changed. Functions and channels count by their address; a pointer seen
// before is rendered once.
func fingerprint(v any) map[string]string {
	out := map[string]string{}
	walk(reflect.ValueOf(v), "", out, map[uintptr]bool{})
	return out
}

func walk(v reflect.Value, path string, out map[string]string, seen map[uintptr]bool) {
	if !v.IsValid() {
		out[path] = "<invalid>"
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			out[path] = "nil"
			return
		}
		if seen[v.Pointer()] {
			out[path] = fmt.Sprintf("seen %#x", v.Pointer())
			return
		}
		seen[v.Pointer()] = true
		walk(v.Elem(), path+"*", out, seen)
	case reflect.Interface:
		if v.IsNil() {
			out[path] = "nil"
			return
		}
		walk(v.Elem(), path+"("+v.Elem().Type().String()+")", out, seen)
	case reflect.Struct:
		for i := range v.NumField() {
			walk(v.Field(i), path+"."+v.Type().Field(i).Name, out, seen)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			out[path] = "nil"
			return
		}
		out[path+".len"] = fmt.Sprint(v.Len())
		for i := range v.Len() {
			walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out, seen)
		}
	case reflect.Map:
		if v.IsNil() {
			out[path] = "nil"
			return
		}
		keys := v.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = fmt.Sprint(k)
		}
		out[path+".keys"] = strings.Join(slices.Sorted(slices.Values(names)), ",")
		for i, k := range keys {
			walk(v.MapIndex(k), path+"["+names[i]+"]", out, seen)
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		out[path] = fmt.Sprintf("%s %#x", v.Kind(), v.Pointer())
	case reflect.Bool:
		out[path] = fmt.Sprint(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out[path] = fmt.Sprint(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		out[path] = fmt.Sprint(v.Uint())
	case reflect.Float32, reflect.Float64:
		out[path] = fmt.Sprint(v.Float())
	case reflect.Complex64, reflect.Complex128:
		out[path] = fmt.Sprint(v.Complex())
	case reflect.String:
		out[path] = v.String()
	default:
		out[path] = v.Kind().String()
	}
}

// changed lists the paths whose values differ between two fingerprints.
func changed(before, after map[string]string) []string {
	var paths []string
	for p, b := range before {
		if a, ok := after[p]; !ok || a != b {
			paths = append(paths, fmt.Sprintf("%s: %q → %q", p, b, a))
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok {
			paths = append(paths, fmt.Sprintf("%s: (none) → %q", p, a))
		}
	}
	slices.Sort(paths)
	return paths
}
