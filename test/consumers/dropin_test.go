package consumers

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/sample-generic-controlplane/testenv"
)

// The envtest suites of launcher-consumer that docs/testing.md shows as a
// diff: what a suite written for envtest changes to run on our server. The
// doc's diff must turn an envtest suite into the file CI runs.
var dropInSuites = []string{
	"internal/controller/suite_test.go", // Ginkgo, kubebuilder's shape
	"internal/testmain/suite_test.go",   // a plain TestMain
}

// docs/testing.md shows the envtest drop-in as diffs of the suites CI runs,
// and a suite on the launcher from go.mod on: each must be what the
// checkout holds.
func TestTestingDocIsCurrent(t *testing.T) {
	root := checkout(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	consumer := filepath.Join("testdata", "launcher-consumer")
	for _, suite := range dropInSuites {
		if _, err := suiteBefore(string(doc), consumer, suite); err != nil {
			t.Errorf("docs/testing.md: %v", err)
		}
	}

	example, err := os.ReadFile(filepath.Join(consumer, "suite_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := goCmd(t, root, "list", "-m", "-f", "{{.GoVersion}}")
	crPath, crVersion, _ := strings.Cut(controllerRuntime, " ")
	tests := []struct {
		region string // what the doc's markers name
		want   string
		fix    string
	}{
		{
			region: "test/consumers/testdata/launcher-consumer/suite_test.go",
			want:   string(example),
			fix:    "copy the file",
		},
		{
			region: "go.mod of a suite on the launcher",
			// A require of testenv and of the controller-runtime release
			// that TestLauncherConsumer runs; go mod tidy adds the rest.
			want: fmt.Sprintf("module example.com/widgets\n\ngo %s\n\nrequire (\n\t%s %s\n\t%s/testenv vX.Y.Z\n)\n", goVersion, crPath, crVersion, module),
			fix:  "write the go line of our go.mod and the controller-runtime release test/consumers requires",
		},
	}
	for _, tc := range tests {
		got, err := region(string(doc), tc.region)
		if err != nil {
			t.Errorf("docs/testing.md: %v", err)
			continue
		}
		if got != tc.want {
			t.Errorf("docs/testing.md shows another %s than the checkout's: %s between its markers\n--- doc\n%s\n--- want\n%s", tc.region, tc.fix, got, tc.want)
		}
	}
}

// checkSuitesBefore writes, into the consumer module in dir, each drop-in
// suite's package as it was before the doc's diff, under testdata/before
// (which go test ./... leaves alone) beside a copy of config/, and vets
// them: the diff's "before" is an envtest suite that compiles. Then it runs
// the Ginkgo one unchanged on a server of the launcher's, the drop-in
// without a code change: USE_EXISTING_CLUSTER=true and KUBECONFIG.
func checkSuitesBefore(t *testing.T, root, dir string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	beforeDir := filepath.Join(dir, "testdata", "before")
	if err := os.CopyFS(filepath.Join(beforeDir, "config"), os.DirFS(filepath.Join(dir, "config"))); err != nil {
		t.Fatal(err)
	}
	var packages []string
	for _, suite := range dropInSuites {
		before, err := suiteBefore(string(doc), dir, suite)
		if err != nil {
			t.Fatalf("docs/testing.md: %v", err)
		}
		if strings.Contains(before, module) {
			t.Errorf("docs/testing.md: the diff of %s leaves %s in the suite before it: the suite before uses envtest alone", suite, module)
		}
		pkg := filepath.Dir(filepath.FromSlash(suite))
		if err := os.CopyFS(filepath.Join(beforeDir, pkg), os.DirFS(filepath.Join(dir, pkg))); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(beforeDir, pkg, filepath.Base(suite)), []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		packages = append(packages, "./"+filepath.ToSlash(filepath.Join("testdata", "before", pkg)))
	}
	goCmd(t, dir, append([]string{"vet"}, packages...)...)

	// One suite only: envtest's Stop leaves the webhook configurations it
	// installed, so a second suite on the same server would call a webhook
	// server that has gone (docs/testing.md says so).
	t.Run("unchanged with USE_EXISTING_CLUSTER", func(t *testing.T) {
		s := testenv.StartTestServer(t, testenv.Options{})
		t.Setenv("USE_EXISTING_CLUSTER", "true")
		t.Setenv("KUBECONFIG", s.KubeconfigPath)
		goCmd(t, dir, "test", "-count=1", "-timeout=5m", packages[0])
	})
}

// suiteBefore returns the file that the doc's diff of suite (a path in the
// consumer module in dir) was made from: the diff, between the markers
// <!-- begin diff test/consumers/testdata/launcher-consumer/SUITE --> and
// <!-- end … -->, undone on the file in dir.
func suiteBefore(doc, dir, suite string) (string, error) {
	name := "diff test/consumers/testdata/launcher-consumer/" + suite
	diff, err := region(doc, name)
	if err != nil {
		return "", err
	}
	after, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(suite)))
	if err != nil {
		return "", err
	}
	before, err := unapply(diff, string(after))
	if err != nil {
		return "", fmt.Errorf("%s: %w: make the diff again (diff -u before after) and paste it between the markers", name, err)
	}
	return before, nil
}

// unapply returns the file that the unified diff turned into after. Each
// hunk's context and added lines must be after's lines where its header
// says. An empty line in a hunk is an empty context line, for editors
// that strip the space a diff starts it with.
func unapply(diff, after string) (string, error) {
	afterLines := strings.SplitAfter(after, "\n")
	var before []string
	next := 0 // the first line of after not yet in before
	hunks := 0
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	for i := 0; i < len(lines); {
		line := lines[i]
		if hunks == 0 && (strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ ")) {
			i++
			continue
		}
		oldStart, oldCount, newStart, newCount, err := hunkHeader(line)
		if err != nil {
			return "", err
		}
		hunks++
		at := hunkStart(newStart, newCount)
		if at < next || at > len(afterLines) {
			return "", fmt.Errorf("hunk %q: the hunks are out of order", line)
		}
		before = append(before, afterLines[next:at]...)
		next = at
		if len(before) != hunkStart(oldStart, oldCount) {
			return "", fmt.Errorf("hunk %q starts at line %d of the file before, not %d", line, len(before)+1, oldStart)
		}
		oldSeen, newSeen := 0, 0
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "@@ "); i++ {
			op, text := " ", "\n" // an empty line: an empty context line
			if l := lines[i]; l != "" {
				op, text = l[:1], l[1:]+"\n"
			}
			switch op {
			case " ", "+":
				if next >= len(afterLines) || afterLines[next] != text {
					return "", fmt.Errorf("hunk %q: line %d of the file is not %q", line, next+1, strings.TrimSuffix(text, "\n"))
				}
				next++
				newSeen++
				if op == " " {
					before = append(before, text)
					oldSeen++
				}
			case "-":
				before = append(before, text)
				oldSeen++
			default:
				return "", fmt.Errorf("hunk %q: %q starts with none of ' ', '+' and '-'", line, lines[i])
			}
		}
		if oldSeen != oldCount || newSeen != newCount {
			return "", fmt.Errorf("hunk %q has %d lines before and %d after", line, oldSeen, newSeen)
		}
	}
	if hunks == 0 {
		return "", fmt.Errorf("no hunk")
	}
	return strings.Join(append(before, afterLines[next:]...), ""), nil
}

// hunkStart is the index of a hunk's first line in its file: a hunk of no
// lines names the line it follows.
func hunkStart(start, count int) int {
	if count == 0 {
		return start
	}
	return start - 1
}

// hunkHeader parses "@@ -oldStart,oldCount +newStart,newCount @@".
func hunkHeader(line string) (oldStart, oldCount, newStart, newCount int, err error) {
	fields := strings.Fields(line)
	if len(fields) < 4 || fields[0] != "@@" || fields[3] != "@@" || !strings.HasPrefix(fields[1], "-") || !strings.HasPrefix(fields[2], "+") {
		return 0, 0, 0, 0, fmt.Errorf("%q is no hunk header (@@ -l,s +l,s @@)", line)
	}
	if oldStart, oldCount, err = lineRange(fields[1][1:]); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("%q: %w", line, err)
	}
	if newStart, newCount, err = lineRange(fields[2][1:]); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("%q: %w", line, err)
	}
	return oldStart, oldCount, newStart, newCount, nil
}

// lineRange parses a hunk's "start,count", or "start" for one line.
func lineRange(s string) (start, count int, err error) {
	startText, countText, found := strings.Cut(s, ",")
	if start, err = strconv.Atoi(startText); err != nil {
		return 0, 0, err
	}
	if !found {
		return start, 1, nil
	}
	count, err = strconv.Atoi(countText)
	return start, count, err
}

func TestUnapply(t *testing.T) {
	const after = "package a\n\nimport \"b\"\n\nfunc f() {\n\tb.G()\n}\n"
	tests := []struct {
		name    string
		diff    string
		want    string // the file before; "" when unapply fails
		wantErr string
	}{
		{
			name: "one hunk, headers and an empty context line",
			diff: "--- a.go\n+++ a.go\n@@ -1,4 +1,4 @@\n package a\n\n-import \"c\"\n+import \"b\"\n \n",
			want: "package a\n\nimport \"c\"\n\nfunc f() {\n\tb.G()\n}\n",
		},
		{
			name: "two hunks, lines added and removed",
			diff: "@@ -4 +3,0 @@\n-import \"c\"\n@@ -6,2 +5,3 @@\n func f() {\n+\tb.G()\n }\n",
			want: "package a\n\nimport \"b\"\nimport \"c\"\n\nfunc f() {\n}\n",
		},
		{
			name:    "context that is not the file's",
			diff:    "@@ -1,2 +1,2 @@\n package b\n \n",
			wantErr: `line 1 of the file is not "package b"`,
		},
		{
			name:    "a count that is not the hunk's",
			diff:    "@@ -1,3 +1,3 @@\n package a\n \n",
			wantErr: "has 2 lines before and 2 after",
		},
		{
			name:    "a start that is not where the lines before are",
			diff:    "@@ -2,1 +1,1 @@\n package a\n",
			wantErr: "starts at line 1 of the file before, not 2",
		},
		{
			name:    "hunks out of order",
			diff:    "@@ -5,1 +5,1 @@\n func f() {\n@@ -1,1 +1,1 @@\n package a\n",
			wantErr: "out of order",
		},
		{
			name:    "no hunk",
			diff:    "--- a.go\n+++ a.go\n",
			wantErr: "no hunk",
		},
		{
			name:    "a line of no diff",
			diff:    "@@ -1,1 +1,1 @@\n*package a\n",
			wantErr: "starts with none of",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := unapply(tc.diff, after)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("unapply: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("unapply gave\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
