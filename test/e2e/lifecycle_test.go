package e2e

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// etcdInfoLogs makes the embedded etcd log at info level, where it reports
// WAL repairs (storage/wal/repair.go and etcdserver/bootstrap.go in
// go.etcd.io/etcd/server/v3 log "repairing", "repaired" and "repaired WAL"
// with Info). At the default level, warn, a repair would go unseen.
var etcdInfoLogs = []string{"--embedded-etcd-log-level=info"}

// stoppingLine is what the binary logs on the first SIGTERM or SIGINT.
const stoppingLine = "Stopping; send SIGTERM or SIGINT again to exit at once"

// recoverySignals are what, case-insensitively, etcd's log lines about
// repairing or recovering from an unclean shutdown contain.
var recoverySignals = []string{"repair", "recovering", "unclean", "torn"}

// benignRecoveryLines contain a recovery signal but are logged on every start
// of a member that has not taken its first snapshot (one per 10,000 raft
// entries), clean or not (etcdserver/bootstrap.go).
var benignRecoveryLines = []string{"No snapshot found. Recovering WAL from scratch!"}

// recoveryMessages returns the lines of c's log that tell of a recovery or
// repair of etcd's data. Paths under the test's temporary directory, which
// is named after the test, are left out of the search.
func recoveryMessages(c *Cluster, log string) []string {
	log = strings.ReplaceAll(log, filepath.Dir(c.WorkDir), "<tmp>")
	var found []string
	for line := range strings.Lines(log) {
		lower := strings.ToLower(line)
		if !slices.ContainsFunc(recoverySignals, func(s string) bool { return strings.Contains(lower, s) }) {
			continue
		}
		if slices.ContainsFunc(benignRecoveryLines, func(s string) bool { return strings.Contains(line, s) }) {
			continue
		}
		found = append(found, strings.TrimSpace(line))
	}
	return found
}

// After a stop by SIGTERM the control plane starts again on the same data
// dir and port with its objects, and etcd finds nothing to repair.
func TestRestartKeepsObjectsAndNeedsNoRepair(t *testing.T) {
	c := startCluster(t, Spec{Flags: etcdInfoLogs})
	kubectl(t, c, "create", "configmap", "survivor", "-n", "default", "--from-literal=color=blue")
	port, firstStderr := c.Port, c.StderrPath

	if err := provider.Restart(t.Context(), c); err != nil {
		t.Fatalf("restart: %v", err)
	}
	// The signal is acknowledged once, with the way to exit at once.
	if n := strings.Count(readFile(t, firstStderr), stoppingLine); n != 1 {
		t.Errorf("the stopped run's stderr (%s) has %d lines %q, want 1", firstStderr, n, stoppingLine)
	}
	if c.Port != port {
		t.Errorf("restarted on port %d, want %d", c.Port, port)
	}
	if got := kubectl(t, c, "get", "configmap", "survivor", "-n", "default", "-o", "jsonpath={.data.color}"); got != "blue" {
		t.Errorf("after restart: configmap survivor has data.color %q, want blue", got)
	}

	stderr := readFile(t, c.StderrPath)
	// Proof that etcd's info-level lines reach the log and that it found its
	// member: otherwise the absence of repair messages would prove nothing.
	if !strings.Contains(stderr, "restarting local member") {
		t.Errorf("second start's stderr (%s) lacks etcd's %q line: are etcd's info logs lost, or did it start a new member?", c.StderrPath, "restarting local member")
	}
	if msgs := recoveryMessages(c, stderr); len(msgs) > 0 {
		t.Errorf("after a clean stop, etcd repaired or recovered its data on the second start (%s):\n%s", c.StderrPath, strings.Join(msgs, "\n"))
	}
}

// A WAL whose last record was torn by a crash is repaired when the control
// plane starts, which then serves. It is also the control of the test above:
// recoveryMessages must see the repair.
func TestTornWALIsRepairedAndReported(t *testing.T) {
	first := startCluster(t, Spec{Flags: etcdInfoLogs})
	kubectl(t, first, "create", "configmap", "before-crash", "-n", "default")
	if err := provider.Stop(t.Context(), first); err != nil {
		t.Fatalf("stop: %v", err)
	}
	tearLastWALRecord(t, filepath.Join(first.DataDir, "etcd", "member", "wal"))

	second := startCluster(t, Spec{WorkDir: first.WorkDir, DataDir: first.DataDir, Flags: etcdInfoLogs})
	if got := kubectl(t, second, "get", "namespace", "default", "-o", "name"); strings.TrimSpace(got) != "namespace/default" {
		t.Errorf("after the WAL repair: kubectl get namespace default printed %q", got)
	}
	stderr := readFile(t, second.StderrPath)
	if !strings.Contains(stderr, "repaired WAL") {
		t.Errorf("etcd did not log %q on the start after the WAL was torn (%s)", "repaired WAL", second.StderrPath)
	}
	if msgs := recoveryMessages(second, stderr); len(msgs) == 0 {
		t.Errorf("recoveryMessages found nothing in the log of a start that repaired the WAL (%s)", second.StderrPath)
	}
}

// tearLastWALRecord zeroes the data of the last record of the newest WAL
// file in dir, as a crash in the middle of writing it would leave it: etcd
// reads such a record as torn (io.ErrUnexpectedEOF) and repairs the file.
func tearLastWALRecord(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no WAL files in %s (%v)", dir, err)
	}
	slices.Sort(files) // named <seq>-<index>.wal in hex, so the newest sorts last
	path := files[len(files)-1]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A record is an 8-byte little-endian frame length (record size in the
	// low 56 bits; padding size in bits 56-58 when bit 63 is set), then the
	// record and its padding. A zero length marks the preallocated tail.
	var off, lastData, lastLen int64 = 0, -1, 0
	for off+8 <= int64(len(data)) {
		frame := binary.LittleEndian.Uint64(data[off:])
		if frame == 0 {
			break
		}
		size := int64(frame & (1<<56 - 1))
		if frame&(1<<63) != 0 {
			size += int64(frame>>56) & 0x7
		}
		if off+8+size > int64(len(data)) {
			t.Fatalf("%s: record at offset %d runs past the end of the file", path, off)
		}
		lastData, lastLen = off+8, size
		off += 8 + size
	}
	if lastData < 0 {
		t.Fatalf("%s holds no records", path)
	}
	copy(data[lastData:lastData+lastLen], make([]byte, lastLen))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A second control plane on a data dir in use exits at once and says why,
// and the first one keeps serving.
func TestSecondInstanceOnSameDataDirFails(t *testing.T) {
	first := startCluster(t, Spec{})
	kubeconfigBefore := readFile(t, first.Kubeconfig)

	exit := startExpectingFailure(t, Spec{DataDir: first.DataDir}, 30*time.Second)
	if exit.Code == 0 {
		t.Errorf("second instance exited with code 0, want non-zero")
	}
	last := exit.LastStderrLine()
	if !strings.HasPrefix(last, "Error: ") || !strings.Contains(last, "in use") {
		t.Errorf("second instance's last line of stderr is %q, want an \"Error: \" saying the data dir is in use", last)
	}

	if got := kubectl(t, first, "get", "namespace", "default", "-o", "name"); strings.TrimSpace(got) != "namespace/default" {
		t.Errorf("first instance after the second failed: kubectl get namespace default printed %q", got)
	}
	if readFile(t, first.Kubeconfig) != kubeconfigBefore {
		t.Errorf("the failed second instance changed the first one's kubeconfig %s", first.Kubeconfig)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
