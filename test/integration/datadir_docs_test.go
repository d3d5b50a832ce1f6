package integration

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// TestDataDirCredentialsAreDocumented checks the user guide's table of the
// credentials in the data dir against a running control plane's: every
// file is listed, with its mode.
func TestDataDirCredentialsAreDocumented(t *testing.T) {
	documented := credentialsTable(t)
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	err := filepath.WalkDir(s.DataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.DataDir, p)
		switch {
		case rel == ".":
			return nil
		case d.IsDir() && (rel == "etcd" || rel == "snapshots"):
			// Listed as a whole: etcd's files, the snapshots.
			if !slices.ContainsFunc(slices.Collect(maps.Keys(documented)), func(name string) bool { return strings.HasPrefix(name, rel+"/") }) {
				t.Errorf("%s/ is not in the user guide's table of credentials", rel)
			}
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode, ok := documented[filepath.ToSlash(rel)]
		if !ok {
			t.Errorf("%s (mode %04o) is not in the user guide's table of credentials", rel, info.Mode().Perm())
			return nil
		}
		if got := fmt.Sprintf("%04o", info.Mode().Perm()); info.Mode().IsRegular() && mode != got {
			t.Errorf("%s: the user guide says mode %q, the file has %s", rel, mode, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// credentialsTable reads the table of "Credentials in the data dir" in
// docs/user-guide.md: each file it names, and the mode it gives (empty
// for rows without a plain mode, such as the socket).
func credentialsTable(t *testing.T) map[string]string {
	t.Helper()
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "user-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(guide), "### Credentials in the data dir\n")
	if !ok {
		t.Fatal(`docs/user-guide.md has no section "Credentials in the data dir"`)
	}
	names := regexp.MustCompile("`([^`]+)`")
	modes := regexp.MustCompile(`\b0[0-7]{3}\b`)
	files := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		rowModes := modes.FindAllString(cells[2], -1)
		var dir, stem string
		for i, m := range names.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			switch {
			case strings.HasPrefix(name, "."):
				// `front-proxy-client.key`, `.crt`
				name = stem + name
			case !strings.Contains(strings.TrimSuffix(name, "/"), "/") && i > 0:
				name = dir + name
			}
			dir = path.Dir(name) + "/"
			if dir == "./" {
				dir = ""
			}
			stem = strings.TrimSuffix(name, path.Ext(name))
			mode := ""
			switch {
			case len(rowModes) == 1:
				mode = rowModes[0]
			case i < len(rowModes):
				mode = rowModes[i]
			}
			files[name] = mode
		}
	}
	if len(files) == 0 {
		t.Fatal("no files in the user guide's table of credentials")
	}
	return files
}
