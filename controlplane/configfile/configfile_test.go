package configfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

// flags are a command's flags of each kind a config file sets.
type flags struct {
	dataDir   string
	port      int
	timeout   time.Duration
	sans      []string
	issuers   []string
	runtime   cliflag.ConfigurationMap
	sniCerts  []cliflag.NamedCertKey
	token     string
	tokenFile string
	fs        *pflag.FlagSet
}

func newFlags() *flags {
	f := &flags{runtime: cliflag.ConfigurationMap{}}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.StringVar(&f.dataDir, "data-dir", "/default", "")
	fs.IntVar(&f.port, "secure-port", 6443, "")
	fs.DurationVar(&f.timeout, "request-timeout", time.Minute, "")
	fs.StringSliceVar(&f.sans, "tls-san", nil, "")
	fs.StringArrayVar(&f.issuers, "service-account-issuer", nil, "")
	fs.Var(&f.runtime, "runtime-config", "")
	fs.Var(cliflag.NewNamedCertKeyArray(&f.sniCerts), "tls-sni-cert-key", "")
	fs.StringVar(&f.token, "token", "", "")
	fs.StringVar(&f.tokenFile, "token-file", "", "")
	fs.String("config", "", "")
	f.fs = fs
	return f
}

// write writes files under a temporary directory, by relative name, and
// returns the path of config.yaml there.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "config.yaml")
}

// parse parses args as the command line, then applies the config file.
func parse(t *testing.T, path string, args ...string) (*flags, map[string]Source) {
	t.Helper()
	f := newFlags()
	if err := f.fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, f.fs)
	if err != nil {
		t.Fatal(err)
	}
	sources, err := c.Apply(f.fs)
	if err != nil {
		t.Fatal(err)
	}
	return f, sources
}

func TestApply(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		args  []string
		check func(t *testing.T, f *flags, sources map[string]Source)
	}{{
		name: "each kind of value",
		files: map[string]string{"config.yaml": `
data-dir: /var/lib/sgcp
secure-port: 7443
request-timeout: 30s
tls-san: [a.example, "10.0.0.1"]
service-account-issuer:
  - https://one
  - https://two,with-comma
runtime-config: {api/all: "true"}
token-file: /etc/sgcp/token
`},
		check: func(t *testing.T, f *flags, sources map[string]Source) {
			want := flags{dataDir: "/var/lib/sgcp", port: 7443, timeout: 30 * time.Second, sans: []string{"a.example", "10.0.0.1"},
				issuers: []string{"https://one", "https://two,with-comma"}, runtime: cliflag.ConfigurationMap{"api/all": "true"}, tokenFile: "/etc/sgcp/token"}
			got := *f
			got.fs = nil
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(flags{})); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
			if s := sources["secure-port"]; s.Kind != File || s.Line != 3 {
				t.Errorf("secure-port comes from %s, want file, line 3", s)
			}
			if s := sources["token"]; s.Kind != Default {
				t.Errorf("token comes from %s, want default", s)
			}
		},
	}, {
		name: "the flag's string form, and null leaves the default",
		files: map[string]string{"config.yaml": `
tls-san: a.example,b.example
runtime-config: api/all=false
data-dir:
`},
		check: func(t *testing.T, f *flags, _ map[string]Source) {
			if diff := cmp.Diff([]string{"a.example", "b.example"}, f.sans); diff != "" {
				t.Errorf("tls-san (-want +got):\n%s", diff)
			}
			if f.runtime["api/all"] != "false" {
				t.Errorf("runtime-config is %v, want api/all=false", f.runtime)
			}
			if f.dataDir != "/default" {
				t.Errorf("data-dir is %q, want the default", f.dataDir)
			}
		},
	}, {
		name: "drop-ins follow in lexical order, the command line wins",
		files: map[string]string{
			"config.yaml":           "data-dir: /from-file\nsecure-port: 1\ntls-san: [file]\n",
			"config.yaml.d/20.yaml": "secure-port: 3\n",
			"config.yaml.d/10.yaml": "secure-port: 2\ntls-san: [dropin]\n",
			"config.yaml.d/30.yml":  "secure-port: 4\n", // not *.yaml: not read
		},
		args: []string{"--data-dir=/from-flag"},
		check: func(t *testing.T, f *flags, sources map[string]Source) {
			if f.port != 3 || f.dataDir != "/from-flag" || len(f.sans) != 1 || f.sans[0] != "dropin" {
				t.Errorf("secure-port %d, data-dir %q, tls-san %v; want 3 (the last drop-in), /from-flag and [dropin]", f.port, f.dataDir, f.sans)
			}
			if s := sources["secure-port"]; s.Kind != DropIn || !strings.HasSuffix(s.File, "20.yaml") {
				t.Errorf("secure-port comes from %s, want drop-in 20.yaml", s)
			}
			if s := sources["data-dir"]; s.Kind != CommandLine || s.Overrides == nil || s.Overrides.Line != 1 {
				t.Errorf("data-dir comes from %s, want the command line over the file's line 1", s)
			}
		},
	}, {
		name:  "an empty file sets nothing",
		files: map[string]string{"config.yaml": "# nothing yet\n"},
		check: func(t *testing.T, f *flags, _ map[string]Source) {
			if f.dataDir != "/default" || f.port != 6443 {
				t.Errorf("data-dir %q, secure-port %d: want the defaults", f.dataDir, f.port)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, sources := parse(t, write(t, tc.files), tc.args...)
			tc.check(t, f, sources)
		})
	}
}

// Every error names the file, the line and the key, and says what to write.
func TestErrors(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		wantErr []string
	}{
		{"unknown key, with the nearest flag", map[string]string{"config.yaml": "secure-port: 1\ndata_dir: /x\n"},
			[]string{"config.yaml:2", `unknown key "data_dir"`, `did you mean "data-dir"?`}},
		{"unknown key in a drop-in", map[string]string{"config.yaml": "", "config.yaml.d/10.yaml": "\ntls-sans: [a]\n"},
			[]string{"10.yaml:2", `"tls-sans"`, `did you mean "tls-san"?`}},
		{"unknown key far from any flag", map[string]string{"config.yaml": "kubelet: x\n"},
			[]string{"config.yaml:1", `unknown key "kubelet"; keys are the long names of the flags`}},
		{"not a number", map[string]string{"config.yaml": "secure-port: https\n"},
			[]string{"config.yaml:1", `key "secure-port"`, `"https"`, `write e.g. "secure-port: 6443"`}},
		{"not a duration", map[string]string{"config.yaml": "request-timeout: 30\n"},
			[]string{"config.yaml:1", `key "request-timeout"`, `write e.g. "request-timeout: 1m0s"`}},
		{"a list for one value", map[string]string{"config.yaml": "data-dir: [a, b]\n"},
			[]string{"config.yaml:1", `key "data-dir"`, "takes one string, not a list", `write e.g. "data-dir: /default"`}},
		{"a mapping for a list", map[string]string{"config.yaml": "tls-san: {a: b}\n"},
			[]string{`key "tls-san"`, "not a mapping", `write e.g. "tls-san: [first, second]"`}},
		{"a secret", map[string]string{"config.yaml": "token: sgcp::abc\n"},
			[]string{"config.yaml:1", `key "token" holds a secret`, `write "token-file"`}},
		{"a config file names another", map[string]string{"config.yaml": "config: /etc/other.yaml\n"},
			[]string{`key "config" has no place in a config file`, "FILE.d/*.yaml"}},
		{"a key twice", map[string]string{"config.yaml": "secure-port: 1\nsecure-port: 2\n"},
			[]string{"config.yaml:2", `key "secure-port" is set twice`, "line 1"}},
		{"not a mapping", map[string]string{"config.yaml": "- data-dir: /x\n"},
			[]string{"config.yaml:1", "a mapping of flag names to values"}},
		{"two documents", map[string]string{"config.yaml": "secure-port: 1\n---\nsecure-port: 2\n"},
			[]string{"config.yaml:2", "one YAML document", "config.yaml.d/*.yaml"}},
		{"no such file", map[string]string{}, []string{"config.yaml", "no such file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, tc.files)
			f := newFlags()
			c, err := Load(path, f.fs)
			if err == nil {
				_, err = c.Apply(f.fs)
			}
			if err == nil {
				t.Fatalf("no error; want one saying %q", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// A subcommand reads the server's file: keys of the server it has no flag
// for are left alone, unknown ones are still refused.
func TestApplyToFewerFlags(t *testing.T) {
	path := write(t, map[string]string{"config.yaml": "data-dir: /var/lib/sgcp\nsecure-port: 7443\n"})
	c, err := Load(path, newFlags().fs)
	if err != nil {
		t.Fatal(err)
	}
	var dataDir string
	sub := pflag.NewFlagSet("etcd status", pflag.ContinueOnError)
	sub.StringVar(&dataDir, "data-dir", "", "")
	if _, err := c.Apply(sub); err != nil {
		t.Fatal(err)
	}
	if dataDir != "/var/lib/sgcp" {
		t.Errorf("data-dir is %q, want the file's", dataDir)
	}
}

// --print-config writes every flag with where it came from, secrets
// redacted; read back as a config file it sets the same values.
func TestPrint(t *testing.T) {
	path := write(t, map[string]string{"config.yaml": "data-dir: /var/lib/sgcp\ntls-san: [a, b]\nruntime-config: {api/all: \"true\"}\n" +
		"tls-sni-cert-key: [\"a.crt,a.key:a.example,b.example\", \"c.crt,c.key\"]\n"})
	f, sources := parse(t, path, "--token=sgcp::secret", "--secure-port=7443")
	var out bytes.Buffer
	if err := Print(&out, f.fs, sources); err != nil {
		t.Fatal(err)
	}
	printed := out.String()
	for _, want := range []string{
		"data-dir: /var/lib/sgcp # file " + path + ":1\n",
		"tls-san: [a, b] # file " + path + ":2\n",
		"runtime-config: api/all=true # file " + path + ":3\n",
		"secure-port: 7443 # flag\n",
		"tls-sni-cert-key: ['a.crt,a.key:a.example,b.example', 'c.crt,c.key'] # file " + path + ":4\n",
		"request-timeout: 1m0s # default\n",
		"token: <redacted> # flag\n",
		`token-file: "" # default` + "\n",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("--print-config does not say %q:\n%s", want, printed)
		}
	}
	if strings.Contains(printed, "sgcp::secret") || strings.Contains(printed, "\nconfig:") {
		t.Errorf("--print-config shows the token or --config:\n%s", printed)
	}

	// Read back, without the secret.
	again := write(t, map[string]string{"config.yaml": strings.ReplaceAll(printed, "token: <redacted>", "token: \"\"")})
	g, _ := parse(t, again)
	f.token, f.fs, g.fs = "", nil, nil
	if diff := cmp.Diff(*f, *g, cmp.AllowUnexported(flags{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the printed configuration read back (-want +got):\n%s", diff)
	}
}
