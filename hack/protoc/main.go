// Command protoc is the part of protoc that go-to-protobuf uses, in Go, so that
// hack/update-codegen.sh needs nothing but Go (docs/architecture.md, "Code
// generation"). go-to-protobuf runs
//
//	protoc -I DIR... --gogo_out=OUT FILE.proto
//
// to have protoc-gen-gogo write FILE's marshalling code. This command compiles
// FILE and its imports with github.com/bufbuild/protocompile, then speaks the
// plugin protocol as protoc does: a CodeGeneratorRequest on the plugin's
// standard input (the files to generate and every file they import, imports
// first, with source info for the files to generate), a
// CodeGeneratorResponse on its standard output, whose files it writes under
// OUT.
//
// Flags understood: -I DIR, -IDIR, --proto_path=DIR, --NAME_out=[PARAMS:]DIR,
// --NAME_opt=PARAMS and --plugin=protoc-gen-NAME=PATH; the plugin is
// protoc-gen-NAME on PATH unless --plugin names it. Anything else is refused,
// so that a new flag from go-to-protobuf fails loudly instead of being
// ignored.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"github.com/bufbuild/protocompile/protoutil"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// compilerVersion is what the plugin is told protoc's version is: the
// release whose behaviour this command reproduces.
var compilerVersion = &pluginpb.Version{Major: proto.Int32(3), Minor: proto.Int32(19), Patch: proto.Int32(6)}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "protoc: %v\n", err)
		os.Exit(1)
	}
}

// invocation is a parsed command line.
type invocation struct {
	importPaths []string
	outputs     []output
	plugins     map[string]string // protoc-gen-NAME: path
	files       []string
}

// output is one --NAME_out.
type output struct {
	name, dir, parameter string
}

func parseArgs(args []string) (invocation, error) {
	inv := invocation{plugins: map[string]string{}}
	opts := map[string][]string{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "-I" || arg == "--proto_path":
			if i+1 == len(args) {
				return inv, fmt.Errorf("%s needs a directory", arg)
			}
			i++
			inv.importPaths = append(inv.importPaths, args[i])
		case strings.HasPrefix(arg, "--proto_path="):
			inv.importPaths = append(inv.importPaths, strings.TrimPrefix(arg, "--proto_path="))
		case strings.HasPrefix(arg, "-I"):
			inv.importPaths = append(inv.importPaths, strings.TrimPrefix(arg, "-I"))
		case strings.HasPrefix(arg, "--plugin="):
			name, path, ok := strings.Cut(strings.TrimPrefix(arg, "--plugin="), "=")
			if !ok {
				return inv, fmt.Errorf("%s: want --plugin=protoc-gen-NAME=PATH", arg)
			}
			inv.plugins[name] = path
		case strings.HasPrefix(arg, "--descriptor_set_out=") || strings.HasPrefix(arg, "--dependency_out="):
			return inv, fmt.Errorf("%s is not supported", arg)
		case strings.HasPrefix(arg, "--") && strings.Contains(arg, "_out="):
			flag, value, _ := strings.Cut(arg[2:], "=")
			out := output{name: strings.TrimSuffix(flag, "_out"), dir: value}
			if params, dir, ok := strings.Cut(value, ":"); ok {
				out.parameter, out.dir = params, dir
			}
			inv.outputs = append(inv.outputs, out)
		case strings.HasPrefix(arg, "--") && strings.Contains(arg, "_opt="):
			flag, value, _ := strings.Cut(arg[2:], "=")
			name := strings.TrimSuffix(flag, "_opt")
			opts[name] = append(opts[name], value)
		case strings.HasPrefix(arg, "-"):
			return inv, fmt.Errorf("unknown flag %s", arg)
		default:
			inv.files = append(inv.files, arg)
		}
	}
	for i, out := range inv.outputs {
		params := opts[out.name]
		if out.parameter != "" {
			params = append([]string{out.parameter}, params...)
		}
		inv.outputs[i].parameter = strings.Join(params, ",")
	}
	switch {
	case len(inv.files) == 0:
		return inv, errors.New("no input files")
	case len(inv.outputs) == 0:
		return inv, errors.New("no --NAME_out: nothing to generate")
	}
	if len(inv.importPaths) == 0 {
		inv.importPaths = []string{"."}
	}
	return inv, nil
}

func run(args []string) error {
	inv, err := parseArgs(args)
	if err != nil {
		return err
	}
	// protoc names a file by its path under the first import path that holds it.
	var names []string
	for _, file := range inv.files {
		name, err := virtualName(file, inv.importPaths)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	compiler := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: inv.importPaths}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := compiler.Compile(context.Background(), names...)
	if err != nil {
		return err
	}
	request := &pluginpb.CodeGeneratorRequest{
		FileToGenerate:  names,
		CompilerVersion: compilerVersion,
		ProtoFile:       withImports(compiled),
	}
	for _, out := range inv.outputs {
		if out.parameter != "" {
			request.Parameter = proto.String(out.parameter)
		} else {
			request.Parameter = nil
		}
		if err := generate(out, inv.plugins, request); err != nil {
			return err
		}
	}
	return nil
}

// virtualName is file's name relative to the first import path holding it.
func virtualName(file string, importPaths []string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	for _, dir := range importPaths {
		dirAbs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(dirAbs, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		return filepath.ToSlash(rel), nil
	}
	return "", fmt.Errorf("%s: file does not reside within any path specified using -I (%s)", file, strings.Join(importPaths, ", "))
}

// withImports lists the compiled files and everything they import, each
// after its imports, as protoc puts them in a CodeGeneratorRequest. Only the
// files to generate keep their source info.
func withImports(files linker.Files) []*descriptorpb.FileDescriptorProto {
	requested := map[string]bool{}
	for _, f := range files {
		requested[f.Path()] = true
	}
	seen := map[string]bool{}
	var ordered []*descriptorpb.FileDescriptorProto
	var visit func(protoreflect.FileDescriptor)
	visit = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			visit(imports.Get(i).FileDescriptor)
		}
		fdp := protoutil.ProtoFromFileDescriptor(f)
		if !requested[f.Path()] && fdp.SourceCodeInfo != nil {
			fdp = proto.Clone(fdp).(*descriptorpb.FileDescriptorProto)
			fdp.SourceCodeInfo = nil
		}
		ordered = append(ordered, fdp)
	}
	for _, f := range files {
		visit(f)
	}
	return ordered
}

// generate runs out's plugin on request and writes the files it returns.
func generate(out output, plugins map[string]string, request *pluginpb.CodeGeneratorRequest) error {
	pluginName := "protoc-gen-" + out.name
	path := plugins[pluginName]
	if path == "" {
		var err error
		if path, err = exec.LookPath(pluginName); err != nil {
			return fmt.Errorf("--%s_out: %w", out.name, err)
		}
	}
	input, err := proto.Marshal(request)
	if err != nil {
		return err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(input), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", pluginName, err, stderr.String())
	}
	os.Stderr.Write(stderr.Bytes())
	response := &pluginpb.CodeGeneratorResponse{}
	if err := proto.Unmarshal(stdout.Bytes(), response); err != nil {
		return fmt.Errorf("%s: reading its response: %w", pluginName, err)
	}
	if response.Error != nil {
		return fmt.Errorf("--%s_out: %s", out.name, response.GetError())
	}
	for _, file := range response.File {
		if file.GetInsertionPoint() != "" || file.GetName() == "" {
			return fmt.Errorf("%s: file %q: insertion points and nameless files are not supported", pluginName, file.GetName())
		}
		name := filepath.Join(out.dir, filepath.FromSlash(file.GetName()))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, []byte(file.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
