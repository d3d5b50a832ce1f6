package main

import (
	"reflect"
	"strings"
	"testing"
)

// A shortened -dumpdep output: a root, a direct call chain to a
// <ReflectMethod> function, a second one reached later, and a line of the
// build's own output.
const dumpdep = `# sigs.k8s.io/sample-generic-controlplane/cmd/sample-generic-controlplane
_ -> _rt0_amd64_linux
_rt0_amd64_linux -> main.main
main.main -> a.Start
a.Start -> text/template.(*state).evalField <ReflectMethod>
main.main -> type:b.T <UsedInIface>
type:b.T <UsedInIface> -> b.T.Method <ReflectMethod>
a.Start -> text/template.(*state).evalField <ReflectMethod>
`

func TestChains(t *testing.T) {
	g, err := read(strings.NewReader(dumpdep))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"_rt0_amd64_linux", "main.main", "a.Start", "text/template.(*state).evalField", "type:b.T", "b.T.Method"}; !reflect.DeepEqual(g.order, want) {
		t.Errorf("marking order %q, want %q", g.order, want)
	}
	if !g.reflect["text/template.(*state).evalField"] || !g.reflect["b.T.Method"] || g.reflect["a.Start"] {
		t.Errorf("<ReflectMethod> symbols %v, want evalField and b.T.Method only", g.reflect)
	}
	if got, want := g.chain("b.T.Method"), []string{"_rt0_amd64_linux", "main.main", "type:b.T", "b.T.Method"}; !reflect.DeepEqual(got, want) {
		t.Errorf("chain %q, want %q", got, want)
	}
	if _, _, ok := throughMethod(g.chain("text/template.(*state).evalField")); ok {
		t.Error("the chain to evalField is made of calls only, but throughMethod found a method of a type in it")
	}
	if typ, m, ok := throughMethod(g.chain("b.T.Method")); !ok || typ != "type:b.T" || m != "b.T.Method" {
		t.Errorf("throughMethod of the chain to b.T.Method = %q, %q, %v; want type:b.T, b.T.Method, true", typ, m, ok)
	}
}
