package logging

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/zaprepeats"
)

const (
	etcdClientLoggerPackage = "k8s.io/apiserver/pkg/storage/storagebackend/factory"
	etcdClientLoggerName    = "etcd3ClientLogger"
)

// These tests guard the go:linkname of etcdclient.go, which the linker does
// not check: when one fails after a k8s.io/apiserver upgrade, see whether
// upstream now takes a logger from its caller (then drop etcdclient.go), or
// follow the variable to its new name or type.

// Upstream's source still declares the variable as a *zap.Logger and gives
// it to the etcd clients it creates. This runs first: a variable of another
// type would make the next test read it as what it is not.
func TestEtcdClientLoggerIsUpstreams(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", etcdClientLoggerPackage).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", etcdClientLoggerPackage, err)
	}
	dir := strings.TrimSpace(string(out))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var declared, given bool
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		zap := importName(f, "go.uber.org/zap")
		for _, decl := range f.Decls {
			if spec := varSpec(decl, etcdClientLoggerName); spec != nil {
				declared = true
				if got := typeString(spec.Type); zap == "" || got != "*"+zap+".Logger" {
					t.Errorf("%s declares %s as %s, want *zap.Logger (go.uber.org/zap)", name, etcdClientLoggerName, got)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Logger") && isIdent(kv.Value, etcdClientLoggerName) {
				given = true
			}
			return true
		})
	}
	if !declared {
		t.Errorf("%s (%s) declares no variable %s", etcdClientLoggerPackage, dir, etcdClientLoggerName)
	}
	if !given {
		t.Errorf("%s (%s) no longer gives %s to its etcd clients (Logger: %s)", etcdClientLoggerPackage, dir, etcdClientLoggerName, etcdClientLoggerName)
	}
}

// The variable of ours is upstream's: upstream's init set it, as the
// logger it names "etcd-client". A pull of a variable the linker does not
// find would have left ours nil.
func TestEtcdClientLoggerIsSetByUpstream(t *testing.T) {
	if etcd3ClientLogger == nil {
		t.Fatalf("%s.%s is nil: the linker did not find upstream's variable, or upstream's init no longer sets it", etcdClientLoggerPackage, etcdClientLoggerName)
	}
	if got := etcd3ClientLogger.Name(); got != "etcd-client" {
		t.Errorf("%s.%s is named %q, want upstream's etcd-client", etcdClientLoggerPackage, etcdClientLoggerName, got)
	}
}

// Once held, the etcd clients' logger holds back repeats, and holding it
// again does not wrap it twice.
func TestHoldEtcdClientRepeats(t *testing.T) {
	if etcd3ClientLogger == nil {
		t.Fatal("no etcd client logger to hold (see TestEtcdClientLoggerIsSetByUpstream)")
	}
	HoldEtcdClientRepeats()
	HoldEtcdClientRepeats()
	core, ok := etcd3ClientLogger.Core().(*zaprepeats.Core)
	if !ok {
		t.Fatalf("the etcd clients' logger writes to a %T, want a *zaprepeats.Core", etcd3ClientLogger.Core())
	}
	if _, twice := core.Core.(*zaprepeats.Core); twice {
		t.Error("the etcd clients' logger holds back repeats twice over")
	}
	if got := etcd3ClientLogger.Name(); got != "etcd-client" {
		t.Errorf("the etcd clients' logger is named %q, want upstream's etcd-client", got)
	}
}

// importName is the name f imports path under, or "".
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

// varSpec is the spec of decl that declares the variable name, or nil.
func varSpec(decl ast.Decl, name string) *ast.ValueSpec {
	gen, ok := decl.(*ast.GenDecl)
	if !ok || gen.Tok != token.VAR {
		return nil
	}
	for _, spec := range gen.Specs {
		vs := spec.(*ast.ValueSpec)
		for _, n := range vs.Names {
			if n.Name == name {
				return vs
			}
		}
	}
	return nil
}

// typeString is the declared type of a variable as Go source writes it.
func typeString(expr ast.Expr) string {
	if expr == nil {
		return "(no declared type)"
	}
	return types.ExprString(expr)
}

func isIdent(expr ast.Expr, name string) bool {
	id, ok := expr.(*ast.Ident)
	return ok && id.Name == name
}
