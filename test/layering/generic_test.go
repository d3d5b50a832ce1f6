package layering

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The generic layer (KEP-4080's library) knows nothing of KANA: the
// NetworkClaim API, its client, its plug-in and its allocator are added
// through the public extension points, as a distribution adds its own. Of
// our API and client modules it uses only its own group,
// controlplane.x-k8s.io (ServiceLocations): not the generated clientset or
// informer factory, which bring every group with them.
func TestGenericLayerDoesNotImportKANA(t *testing.T) {
	const module = "sigs.k8s.io/sample-generic-controlplane/"
	generic := []string{module + "apis/controlplane", module + "client/listers/controlplane/"}
	kana := []string{module + "apis/", module + "client/", module + "kana", module + "controllers/allocation"}
	for _, pkg := range []string{module + "controlplane", module + "controllers/manager", module + "controlplane/testing"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
	deps:
		for _, dep := range strings.Fields(string(out)) {
			for _, g := range generic {
				if strings.HasPrefix(dep, g) {
					continue deps
				}
			}
			for _, k := range kana {
				if strings.HasPrefix(dep, k) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// embedded-etcd/ is the one home of everything etcd, below the control
// plane: the control plane calls into it, never the other way round. (Its
// tests may take real certificates from controlplane/pki as fixtures: the
// rule is about what a program that imports it builds.)
func TestEmbeddedEtcdDoesNotImportTheControlPlane(t *testing.T) {
	const module = "sigs.k8s.io/sample-generic-controlplane/"
	out, err := exec.Command("go", "list", "-deps", "../../embedded-etcd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./embedded-etcd/...: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, module) {
			continue
		}
		if rel := strings.TrimPrefix(dep, module); !strings.HasPrefix(rel, "embedded-etcd") && !strings.HasPrefix(rel, "internal/atomicfile") {
			t.Errorf("embedded-etcd/ depends on %s", dep)
		}
	}
}

// The binary's generic commands (everything but registry) work on any
// composition of the library: they import nothing of KANA.
func TestGenericCommandsDoNotImportKANA(t *testing.T) {
	const module = "sigs.k8s.io/sample-generic-controlplane/"
	files, err := filepath.Glob("../../cmd/sample-generic-controlplane/app/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || filepath.Base(file) == "root.go" {
			// root.go composes the binary: it adds kana.Install, the
			// registry command and KANA's controllers.
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(path, module+"kana") || strings.HasPrefix(path, module+"apis/networking") || strings.HasPrefix(path, module+"client/") {
				t.Errorf("%s imports %s", filepath.Base(file), path)
			}
		}
	}
}
