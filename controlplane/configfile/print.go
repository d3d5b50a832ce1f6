package configfile

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	yaml "go.yaml.in/yaml/v3"
	cliflag "k8s.io/component-base/cli/flag"
)

// Redacted replaces the value of a secret flag when printed.
const Redacted = "<redacted>"

// Print writes the effective configuration of fs as a config file would
// hold it, each value with where it came from (sources, from Apply; a
// flag it does not name is a default, or set on the command line), and
// secrets redacted. Hidden and deprecated flags, and those that have no
// place in a file, are left out.
func Print(w io.Writer, fs *pflag.FlagSet, sources map[string]Source) error {
	doc := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "The effective configuration: every flag, and where its value came from.\nWithout the redacted lines, it is a config file (--config) of its own."}
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := NotSettable[f.Name]; ok || f.Hidden || f.Deprecated != "" {
			return
		}
		source, ok := sources[f.Name]
		if !ok {
			source = Source{Kind: Default}
			if f.Changed {
				source = Source{Kind: CommandLine}
			}
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Value: f.Name}
		val := printed(f)
		val.LineComment = source.String()
		doc.Content = append(doc.Content, key, val)
	})
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("printing the configuration: %w", err)
	}
	return enc.Close()
}

func printed(f *pflag.Flag) *yaml.Node {
	if Secret(f.Name) && f.Value.String() != "" {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: Redacted}
	}
	if listFlag(f) {
		items := []string{}
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			items = v.GetSlice()
		case *cliflag.NamedCertKeyArray:
			// Its items hold commas (CERT,KEY:NAMES); they are
			// separated by semicolons.
			if s := strings.Trim(v.String(), "[]"); s != "" {
				items = strings.Split(s, ";")
			}
		default:
			if s := strings.Trim(f.Value.String(), "[]"); s != "" {
				items = strings.Split(s, ",")
			}
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, item := range items {
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: item})
		}
		return seq
	}
	if mapFlag(f) {
		// Its command-line form, e.g. KANA=true,Other=false. Upstream's
		// map flags print an empty map as "" or "[]", and those of several
		// components (--feature-gates) prefix a pair with its component,
		// which is empty for ours.
		pairs := strings.TrimPrefix(strings.ReplaceAll(strings.Trim(f.Value.String(), "[]"), ",:", ","), ":")
		if pairs == "" {
			return &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Value: pairs}
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: f.Value.String()}
	if n.Value == "<nil>" {
		// An unset address: null leaves it unset when read back.
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "~"}
	}
	if n.Value == "" {
		// Plain, an empty value reads back as null, which sets nothing.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}
