package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bufbuild/protocompile"
)

// The command line go-to-protobuf passes (protobuf.Run), and protoc's other
// spellings of the same flags.
func TestParseArgs(t *testing.T) {
	got, err := parseArgs([]string{"-I", ".", "-I", "/out", "-I/extra", "--proto_path=/more",
		"--gogo_out=/out", "--gogo_opt=plugins=marshal", "--plugin=protoc-gen-gogo=/bin/gogo", "/out/a/generated.proto"})
	if err != nil {
		t.Fatal(err)
	}
	want := invocation{
		importPaths: []string{".", "/out", "/extra", "/more"},
		outputs:     []output{{name: "gogo", dir: "/out", parameter: "plugins=marshal"}},
		plugins:     map[string]string{"protoc-gen-gogo": "/bin/gogo"},
		files:       []string{"/out/a/generated.proto"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	params, err := parseArgs([]string{"--gogo_out=paths=source_relative:/out", "x.proto"})
	if err != nil {
		t.Fatal(err)
	}
	if out := params.outputs[0]; out.dir != "/out" || out.parameter != "paths=source_relative" {
		t.Errorf("--gogo_out=PARAMS:DIR: got %+v", out)
	}
	for _, bad := range [][]string{
		{"--gogo_out=/out"},                       // no file
		{"x.proto"},                               // nothing to generate
		{"--descriptor_set_out=x", "x.proto"},     // a flag go-to-protobuf does not pass
		{"--gogo_out=/out", "x.proto", "-I"},      // -I without a directory
		{"--plugin=gogo", "--gogo_out=/out", "x"}, // --plugin without a path
	} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("parseArgs(%q) succeeded, want an error", bad)
		}
	}
}

// A file is named by its path under the first import path that holds it,
// as protoc names it.
func TestVirtualName(t *testing.T) {
	dir := t.TempDir()
	name, err := virtualName(filepath.Join(dir, "out", "k8s.io", "a", "generated.proto"), []string{filepath.Join(dir, "elsewhere"), filepath.Join(dir, "out")})
	if err != nil || name != "k8s.io/a/generated.proto" {
		t.Errorf("got %q, %v; want k8s.io/a/generated.proto", name, err)
	}
	if _, err := virtualName("/nowhere/x.proto", []string{dir}); err == nil {
		t.Error("a file outside every import path was named")
	}
}

// The request lists every file after the files it imports, as protoc's
// does and protoc-gen-gogo expects, with source info only for the files to
// generate.
func TestWithImports(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("meta/meta.proto", "syntax = \"proto2\";\npackage meta;\nmessage ObjectMeta { optional string name = 1; }\n")
	write("api/generated.proto", "syntax = \"proto2\";\npackage api;\nimport \"meta/meta.proto\";\nimport \"google/protobuf/descriptor.proto\";\n// A comment.\nmessage Claim { optional meta.ObjectMeta metadata = 1; }\n")
	compiler := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{dir}}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := compiler.Compile(context.Background(), "api/generated.proto")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range withImports(files) {
		names = append(names, f.GetName())
		if hasInfo := f.GetSourceCodeInfo() != nil; hasInfo != (f.GetName() == "api/generated.proto") {
			t.Errorf("%s: source info %v", f.GetName(), hasInfo)
		}
	}
	want := []string{"meta/meta.proto", "google/protobuf/descriptor.proto", "api/generated.proto"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("files in the request: %v, want %v", names, want)
	}
}
