// Package configfile reads a command's flags from YAML files whose keys are
// the long flag names, as k3s reads /etc/rancher/k3s/config.yaml: a file,
// then the drop-ins beside it in FILE.d/*.yaml in lexical order, then the
// command line, each winning over what came before.
package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	yaml "go.yaml.in/yaml/v3"
)

// Kind says where a flag's value came from.
type Kind string

const (
	Default     Kind = "default"
	File        Kind = "file"
	DropIn      Kind = "drop-in"
	CommandLine Kind = "flag"
)

// Source is where a flag's value came from: its kind, and for a file or
// drop-in the file and line.
type Source struct {
	Kind Kind
	File string
	Line int
	// Overrides is the file value a flag on the command line replaced.
	Overrides *Source
}

func (s Source) String() string {
	switch s.Kind {
	case File, DropIn:
		return fmt.Sprintf("%s %s:%d", s.Kind, s.File, s.Line)
	case CommandLine:
		if s.Overrides != nil {
			return fmt.Sprintf("%s (over %s)", s.Kind, s.Overrides)
		}
	}
	return string(s.Kind)
}

// Config is the merged content of a file and its drop-ins.
type Config struct {
	// Path is the main file.
	Path   string
	values map[string]value
}

type value struct {
	node   *yaml.Node
	source Source
}

// NotSettable are flags that have no place in a config file, with what to
// do instead.
var NotSettable = map[string]string{
	"config":       "a config file names no other; put more settings in drop-ins, FILE.d/*.yaml",
	"print-config": "give --print-config on the command line",
	"help":         "give --help on the command line",
	"version":      "give --version on the command line",
}

// Secret reports whether the flag named carries a secret itself rather
// than the path of a file that holds one: its value is redacted when
// printed, and refused in a config file, which configuration management
// often leaves readable by many.
func Secret(name string) bool {
	if strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "-dir") {
		return false
	}
	return name == "token" || strings.HasSuffix(name, "-token") ||
		strings.Contains(name, "password") || strings.Contains(name, "secret")
}

// Load reads path, then each of path.d/*.yaml in lexical order, a key of a
// later file replacing the same key of an earlier one. Every key must be
// the long name of a flag of known (the full command's flags, so that a
// subcommand reads the file of the server): an unknown key is refused,
// naming the file, the line and the nearest flag name.
func Load(path string, known *pflag.FlagSet) (*Config, error) {
	c := &Config{Path: path, values: map[string]value{}}
	if err := c.read(path, File, known); err != nil {
		return nil, err
	}
	dropIns, err := filepath.Glob(filepath.Join(path+".d", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(dropIns)
	for _, f := range dropIns {
		if err := c.read(f, DropIn, known); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Config) read(path string, kind Kind, known *pflag.FlagSet) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file sets nothing
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s:%d: a config file holds one YAML document; put more settings in drop-ins, %s.d/*.yaml", path, more.Line, c.Path)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil // only comments
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: a config file is a mapping of flag names to values, e.g. \"data-dir: /var/lib/sample-generic-controlplane\"", path, root.Line)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		at := fmt.Sprintf("%s:%d", path, k.Line)
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: a key is a flag's long name, e.g. \"data-dir\"", at)
		}
		name := k.Value
		if line, ok := seen[name]; ok {
			return fmt.Errorf("%s: key %q is set twice in this file (first on line %d); keep one", at, name, line)
		}
		seen[name] = k.Line
		if why, ok := NotSettable[name]; ok {
			return fmt.Errorf("%s: key %q has no place in a config file: %s", at, name, why)
		}
		f := known.Lookup(name)
		if f == nil {
			return fmt.Errorf("%s: unknown key %q%s; keys are the long names of the flags (see --help)", at, name, suggest(name, known))
		}
		if Secret(name) && !(v.Kind == yaml.ScalarNode && v.Value == "") {
			return fmt.Errorf("%s: key %q holds a secret, which stays out of config files: write %q with the path of a file that holds it, readable only by the server's user", at, name, name+"-file")
		}
		c.values[name] = value{node: v, source: Source{Kind: kind, File: path, Line: k.Line}}
	}
	return nil
}

// Apply sets on fs each flag the files set and the command line did not,
// in the flag's own command-line form: a list sets it once per item, as a
// repeated flag does; a mapping is given as key=value pairs. Keys that are
// no flags of fs (a subcommand's fewer flags) are left alone. It returns
// where each flag of fs took its value from.
func (c *Config) Apply(fs *pflag.FlagSet) (map[string]Source, error) {
	sources := map[string]Source{}
	fs.VisitAll(func(f *pflag.Flag) {
		sources[f.Name] = Source{Kind: Default}
		if f.Changed {
			sources[f.Name] = Source{Kind: CommandLine}
		}
	})
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.values)) {
		v := c.values[name]
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if f.Changed {
			over := v.source
			sources[name] = Source{Kind: CommandLine, Overrides: &over}
			continue
		}
		if v.node.Tag == "!!null" {
			// "key:" or "key: ~" leaves the flag at its default, as
			// --print-config writes a flag that has no value.
			continue
		}
		if err := set(fs, f, v.node); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: key %q: %w; write e.g. \"%s: %s\"", v.source.File, v.source.Line, name, err, name, example(f)))
			continue
		}
		sources[name] = v.source
	}
	return sources, errors.Join(errs...)
}

// Value is the string form the files give the flag named, and whether they
// give one: what Apply would set, for a command that has no such flag but
// derives a default from it (a subcommand's kubeconfig in the data dir).
func (c *Config) Value(name string) (string, bool) {
	v, ok := c.values[name]
	if !ok || v.node.Kind != yaml.ScalarNode {
		return "", false
	}
	return v.node.Value, true
}

// listFlag reports whether a flag takes a value more than once: slices,
// arrays, and upstream's repeated --tls-sni-cert-key.
func listFlag(f *pflag.Flag) bool {
	t := f.Value.Type()
	return strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array") || t == "namedCertKey"
}

// mapFlag reports whether a flag takes key=value pairs.
func mapFlag(f *pflag.Flag) bool {
	t := strings.ToLower(f.Value.Type())
	return strings.Contains(t, "map") || t == "stringtostring"
}

func set(fs *pflag.FlagSet, f *pflag.Flag, n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		return fs.Set(f.Name, n.Value)
	case yaml.SequenceNode:
		if !listFlag(f) {
			return fmt.Errorf("takes one %s, not a list", f.Value.Type())
		}
		if len(n.Content) == 0 {
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				f.Changed = true
				return sv.Replace(nil)
			}
		}
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a list item is a single value", item.Line)
			}
			if err := fs.Set(f.Name, item.Value); err != nil {
				return err
			}
		}
		return nil
	case yaml.MappingNode:
		if !mapFlag(f) {
			return fmt.Errorf("takes %s, not a mapping", article(f.Value.Type()))
		}
		pairs := make([]string, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: each entry is a name and a single value", k.Line)
			}
			pairs = append(pairs, k.Value+"="+v.Value)
		}
		if len(pairs) == 0 {
			return nil // {} sets nothing, as --print-config writes an empty map
		}
		return fs.Set(f.Name, strings.Join(pairs, ","))
	default:
		return fmt.Errorf("cannot use a YAML %v here", n.Tag)
	}
}

func article(t string) string {
	if strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}

// example is a value to write for f: its default where it has one, else
// one of its type.
func example(f *pflag.Flag) string {
	switch {
	case mapFlag(f):
		if f.Name == "feature-gates" {
			return "{KANA: true}"
		}
		return "{name: value}"
	case listFlag(f):
		if sv, ok := f.Value.(pflag.SliceValue); ok && len(sv.GetSlice()) > 0 {
			return "[" + strings.Join(sv.GetSlice(), ", ") + "]"
		}
		return "[first, second]"
	}
	if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" {
		return f.DefValue
	}
	switch f.Value.Type() {
	case "bool":
		return "true"
	case "duration":
		return "30s"
	case "int", "int32", "int64", "uint", "uint32", "uint64", "float32", "float64":
		return "1"
	case "ip":
		return "192.0.2.10"
	}
	return "VALUE"
}

// suggest names the flag of known nearest to name, when one is near.
func suggest(name string, known *pflag.FlagSet) string {
	best, bestDist := "", len(name)/3+2
	normalized := strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-")
	known.VisitAll(func(f *pflag.Flag) {
		if _, ok := NotSettable[f.Name]; ok || f.Hidden {
			return
		}
		if d := editDistance(normalized, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b. cobra has one for
// its command suggestions, unexported.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
