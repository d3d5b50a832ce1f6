package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdtest"
	"sigs.k8s.io/sample-generic-controlplane/internal/externaltlstest"
)

func TestSnapshotArguments(t *testing.T) {
	empty := t.TempDir()
	cases := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{name: "save without FILE", args: []string{"snapshot", "save"}, wantErr: []string{"snapshot save needs FILE", "e.g. sample-generic-controlplane snapshot save /backup/cp.db"}},
		{name: "save with two files", args: []string{"snapshot", "save", "a.db", "b.db"}, wantErr: []string{"takes one FILE, got 2", "a.db b.db"}},
		{name: "restore without FILE", args: []string{"snapshot", "restore"}, wantErr: []string{"snapshot restore needs FILE"}},
		{name: "list with an argument", args: []string{"snapshot", "list", "x"}, wantErr: []string{`"x"`}},
		{
			name:    "save from two etcd servers",
			args:    []string{"snapshot", "save", filepath.Join(empty, "s.db"), "--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379"},
			wantErr: []string{"--etcd-servers names 2 endpoints", "name one", "e.g. --etcd-servers=https://10.0.0.1:2379"},
		},
		{
			name:    "save from a directory of something else",
			args:    []string{"snapshot", "save", filepath.Join(empty, "s.db"), "--data-dir=" + empty},
			wantErr: []string{empty + " is not the data dir of a control plane", "check --data-dir"},
		},
		{
			name:    "save into a missing directory",
			args:    []string{"snapshot", "save", filepath.Join(empty, "missing", "s.db"), "--etcd-servers=https://10.0.0.1:2379"},
			wantErr: []string{"the directory of " + filepath.Join(empty, "missing", "s.db") + " does not exist"},
		},
		{
			name:    "restore a missing file",
			args:    []string{"snapshot", "restore", filepath.Join(empty, "missing.db"), "--data-dir=" + empty},
			wantErr: []string{"missing.db does not exist"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, tc.args...)
			if err == nil {
				t.Fatalf("%q succeeded; output:\n%s", tc.args, out)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q: error %q does not contain %q", tc.args, err, want)
				}
			}
		})
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("failed snapshot commands left %d files in %s", len(entries), empty)
	}
}

// save, list and restore, against an etcd member laid out as the control
// plane lays out its embedded one.
func TestSnapshotSaveListRestore(t *testing.T) {
	// Short: the socket path must fit in a sockaddr_un.
	dataDir, err := os.MkdirTemp("", "sgcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dataDir) }) //nolint:errcheck
	member := etcdtest.StartMember(t, embeddedetcd.Config{DataDir: filepath.Join(dataDir, "etcd"), SocketPath: filepath.Join(dataDir, "run", "etcd.sock")})

	file := filepath.Join(dataDir, "snapshots", "by-hand.db")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "snapshot", "save", file, "--data-dir="+dataDir)
	if err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	saved := regexp.MustCompile(`^Saved snapshot (\S+)\n  revision: (\d+)\n  keys:     (\d+)\n  size:     [\d.]+ [KM]iB \((\d+) bytes\)\n$`).FindStringSubmatch(out)
	if saved == nil || saved[1] != file {
		t.Fatalf("snapshot save printed:\n%s\nwant the file, its revision, keys and size", out)
	}
	// The same member through --etcd-servers, as for an external etcd.
	other := filepath.Join(dataDir, "snapshots", "through-etcd-servers.db")
	if out, err := execute(t, "snapshot", "save", other, "--etcd-servers="+member.ClientURL()); err != nil {
		t.Fatalf("snapshot save --etcd-servers: %v\n%s", err, out)
	}

	out, err = execute(t, "snapshot", "list", "--data-dir="+dataDir)
	if err != nil {
		t.Fatalf("snapshot list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^NAME\s+TIME\s+REVISION\s+KEYS\s+SIZE\s+VERIFIED$`).MatchString(lines[0]) {
		t.Fatalf("snapshot list printed:\n%s\nwant a header and two snapshots", out)
	}
	row := regexp.MustCompile(`^by-hand\.db\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+` + saved[2] + `\s+` + saved[3] + `\s+\S+ \S+\s+yes$`)
	if !row.MatchString(lines[1]) && !row.MatchString(lines[2]) {
		t.Errorf("snapshot list printed:\n%s\nwant a verified row for by-hand.db with revision %s and %s keys", out, saved[2], saved[3])
	}

	// Restore refuses nothing here: no control plane holds the lock.
	member.Close()
	out, err = execute(t, "snapshot", "restore", file, "--data-dir="+dataDir)
	if err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	for _, want := range []string{
		"Restored snapshot " + file + " (revision " + saved[2] + ", " + saved[3] + " keys) into " + filepath.Join(dataDir, "etcd"),
		"The etcd data it replaced is in " + filepath.Join(dataDir, "etcd.pre-restore-"),
		"Start the control plane",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("snapshot restore printed:\n%s\nwant %q", out, want)
		}
	}
}

// save takes a snapshot of a member that requires client certificates with
// the right --etcd-* files, and with a wrong one says which, at once.
func TestSnapshotSaveOverTLS(t *testing.T) {
	creds, err := externaltlstest.NewCredentials(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := externaltlstest.NewCredentials(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	member := externaltlstest.StartMember(t, creds)
	dir := t.TempDir()
	file := filepath.Join(dir, "over-tls.db")
	args := append([]string{"snapshot", "save", file, "--etcd-servers=" + member}, creds.ClientFlags()...)
	if out, err := execute(t, args...); err != nil || !strings.HasPrefix(out, "Saved snapshot "+file+"\n") {
		t.Fatalf("snapshot save over TLS: %v\n%s", err, out)
	}
	if out, err := execute(t, append([]string{"etcd", "status", "--etcd-servers=" + member}, creds.ClientFlags()...)...); err != nil || !strings.Contains(out, "Alarms:   none") {
		t.Fatalf("etcd status over TLS: %v\n%s", err, out)
	}

	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{name: "a CA that did not sign the member's certificate", flags: []string{"--etcd-cafile=" + foreign.CAFile, "--etcd-certfile=" + creds.ClientCertFile, "--etcd-keyfile=" + creds.ClientKeyFile}, want: "--etcd-cafile=" + foreign.CAFile + " does not trust the certificate of the etcd member at " + member},
		{name: "no client certificate", flags: []string{"--etcd-cafile=" + creds.CAFile}, want: "the etcd member at " + member + " requires a client certificate (remote error: tls: certificate required): set --etcd-certfile and --etcd-keyfile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out, err := execute(t, append([]string{"snapshot", "save", filepath.Join(dir, "refused.db"), "--etcd-servers=" + member}, tc.flags...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("snapshot save: %v\n%s\nwant an error that says %q", err, out, tc.want)
			}
			// The client's own wait for a member that does not answer is 5 s.
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("snapshot save failed after %s; want at once", took)
			}

			// The etcd commands take the same flags, and say the same.
			out, err = execute(t, append([]string{"etcd", "status", "--etcd-servers=" + member}, tc.flags...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("etcd status: %v\n%s\nwant an error that says %q", err, out, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%s holds %d files, want only the snapshot saved: the refused ones left files", dir, len(entries))
	}
}
