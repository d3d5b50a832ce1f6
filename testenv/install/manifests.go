package install

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// manifestFileExtensions are the files a directory of manifests is read
// for, as envtest reads them.
var manifestFileExtensions = []string{".yaml", ".yml", ".json"}

// strictDecoder decodes the kinds read from files strictly: a misspelt or
// misplaced field is an error naming it, not a field the server silently
// drops and a test that fails for a reason nobody sees.
var strictDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{apiextensionsv1.AddToScheme, admissionregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err) // a registration of generated types; cannot fail
		}
	}
	return serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme, scheme, serializerjson.SerializerOptions{Strict: true})
}()

// decodeStrict decodes the JSON data into into, strictly.
func decodeStrict(data []byte, into runtime.Object) error {
	_, _, err := strictDecoder.Decode(data, nil, into)
	return err
}

// manifestKind says what a list of paths holds, for its errors.
type manifestKind struct {
	what    string // "CRD": "a CRD file"
	plural  string // "CRDs": "the directory the CRDs are in"
	example string // a path to write, in Go
}

// files lists the files path stands for: itself, or the manifest files in
// it. Unlike envtest it fails on what a test author did not mean: a path
// that does not exist, a file named explicitly that is not .yaml, .yml or
// .json, a directory with no such files.
func (k manifestKind) files(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			where := ""
			if wd, err := os.Getwd(); err == nil && !filepath.IsAbs(path) {
				where = fmt.Sprintf(" (relative paths start at %s, under go test the package directory)", wd)
			}
			return nil, fmt.Errorf("%q does not exist%s; write the path of a %s file (.yaml, .yml, .json) or of a directory of them, e.g. %s", path, where, k.what, k.example)
		}
		return nil, err
	}
	if !info.IsDir() {
		// A file named explicitly must be one we read: skipping it, as
		// envtest does, would install nothing without saying so.
		if !slices.Contains(manifestFileExtensions, filepath.Ext(path)) {
			return nil, fmt.Errorf("%q is not a .yaml, .yml or .json file; give it one of these extensions", path)
		}
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		name := filepath.Join(path, e.Name())
		if !slices.Contains(manifestFileExtensions, filepath.Ext(name)) {
			continue
		}
		// Stat, not the entry's type, so that a symbolic link to a file
		// counts and one to a directory does not.
		if info, err := os.Stat(name); err != nil {
			return nil, err
		} else if info.IsDir() {
			continue
		}
		files = append(files, name)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("directory %q holds no .yaml, .yml or .json file (subdirectories are not read); name the directory the %s are in", path, k.plural)
	}
	return files, nil
}

// read calls decode with every document of the files paths stand for
// (eachDocument), reading a file named twice once.
func (k manifestKind) read(paths []string, decode func(data []byte, gvk *schema.GroupVersionKind, where string) error) error {
	read := sets.New[string]()
	for _, path := range paths {
		files, err := k.files(path)
		if err != nil {
			return err
		}
		for _, file := range files {
			abs, err := filepath.Abs(file)
			if err != nil {
				return fmt.Errorf("%q: %w", file, err)
			}
			if read.Has(abs) {
				continue
			}
			read.Insert(abs)
			if err := eachDocument(file, decode); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachDocument calls decode with every YAML (or JSON) document in file, as
// JSON, with its kind and its place for errors ("file (document 2)"); empty
// documents, such as one before a leading "---", are skipped and not
// counted. An error of decode is returned with the place.
func eachDocument(file string, decode func(data []byte, gvk *schema.GroupVersionKind, where string) error) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	// n counts the documents that are not empty, as a reader counts the
	// objects: controller-gen's files start with "---".
	for n := 1; ; {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		where := fmt.Sprintf("%s (document %d)", file, n)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		data, err := yaml.ToJSON(doc)
		if err != nil {
			return fmt.Errorf("%s: not valid YAML or JSON: %w", where, err)
		}
		if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || string(trimmed) == "null" {
			continue
		}
		n++
		gvk, err := serializerjson.DefaultMetaFactory.Interpret(data)
		if err != nil {
			return fmt.Errorf("%s: not an object: %w", where, err)
		}
		if err := decode(data, gvk, where); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
}

func describeKind(gvk *schema.GroupVersionKind) string {
	if gvk.Kind == "" {
		return "no kind"
	}
	if gvk.Group == "" && gvk.Version == "" {
		return "kind " + gvk.Kind
	}
	return fmt.Sprintf("kind %s (apiVersion %s)", gvk.Kind, gvk.GroupVersion())
}
