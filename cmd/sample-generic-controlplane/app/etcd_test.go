package app

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdclient"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdtest"
)

func TestEtcdCommandsRefuseWhatIsNotOurs(t *testing.T) {
	empty := t.TempDir()
	externalOnly := t.TempDir()
	if err := os.Mkdir(filepath.Join(externalOnly, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	stopped := t.TempDir()
	for _, dir := range []string{"pki", "etcd"} {
		if err := os.Mkdir(filepath.Join(stopped, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{name: "missing data dir", args: []string{"etcd", "status", "--data-dir=" + filepath.Join(empty, "missing")}, wantErr: []string{"data dir " + filepath.Join(empty, "missing") + " does not exist", "check --data-dir"}},
		{name: "a directory of something else", args: []string{"etcd", "defrag", "--data-dir=" + empty}, wantErr: []string{empty + " is not the data dir of a control plane", "no pki/ and no etcd/", "check --data-dir"}},
		{name: "a control plane with an external etcd", args: []string{"etcd", "compact", "--data-dir=" + externalOnly}, wantErr: []string{"has no embedded etcd member", "pass --etcd-servers"}},
		{name: "a stopped control plane", args: []string{"etcd", "alarm", "list", "--data-dir=" + stopped}, wantErr: []string{"no control plane with an embedded etcd runs on data dir " + stopped, "start it"}},
		{name: "an argument", args: []string{"etcd", "status", "x"}, wantErr: []string{`"x"`}},
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
}

// TestEtcdCommands runs the commands on a data dir's embedded member, as
// a user does to recover from a full database by hand.
func TestEtcdCommands(t *testing.T) {
	const quota = 8 << 20
	// Short enough for the member's unix socket.
	dataDir, err := os.MkdirTemp("", "sgcp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dataDir) }) //nolint:errcheck
	if err := os.Mkdir(filepath.Join(dataDir, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	member := etcdtest.StartMember(t, embeddedetcd.Config{DataDir: filepath.Join(dataDir, "etcd"), SocketPath: filepath.Join(dataDir, "run", "etcd.sock"), QuotaBackendBytes: quota})
	cfg, err := etcdclient.Config([]string{member.ClientURL()}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close() //nolint:errcheck

	run := func(args ...string) string {
		t.Helper()
		out, err := execute(t, append(args, "--data-dir="+dataDir)...)
		if err != nil {
			t.Fatalf("%q: %v\n%s", args, err, out)
		}
		return out
	}
	status := run("etcd", "status")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^MEMBER\s+ID\s+ROLE\s+LEADER\s+VERSION\s+DB SIZE\s+IN USE\s+QUOTA\s+ENDPOINT$`),
		regexp.MustCompile(`(?m)^embedded\s+[0-9a-f]+\s+voter\s+yes\s+3\.\d+\.\d+\s+\S+ \S?iB\s+\S+ \S?iB\s+8\.0 MiB\s+unix://` + regexp.QuoteMeta(member.ClientURL()[len("unix://"):]) + `$`),
		regexp.MustCompile(`(?m)^Revision: \d+$`),
		regexp.MustCompile(`(?m)^Alarms:   none$`),
	} {
		if !want.MatchString(status) {
			t.Errorf("etcd status does not match %s:\n%s", want, status)
		}
	}

	// Fill it up: the NOSPACE alarm.
	value := make([]byte, 256<<10)
	for i := 0; ; i++ {
		rand.Read(value) //nolint:errcheck // never fails
		if _, err := client.Put(t.Context(), fmt.Sprintf("/fill/%d", i), string(value)); errors.Is(err, rpctypes.ErrNoSpace) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if out := run("etcd", "alarm", "list"); !strings.Contains(out, "Alarms:   NOSPACE (member embedded)") {
		t.Errorf("etcd alarm list does not show the NOSPACE alarm:\n%s", out)
	}
	// Disarming now would only see it raised again by the next write.
	if out, err := execute(t, "etcd", "alarm", "disarm", "--data-dir="+dataDir); err == nil || !strings.Contains(err.Error(), "still at its quota") {
		t.Errorf("etcd alarm disarm of a database at its quota: want a refusal, got %v\n%s", err, out)
	}

	// What the user guide says to do.
	if _, err := client.Delete(t.Context(), "/fill/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if out := run("etcd", "compact"); !regexp.MustCompile(`^Compacted etcd to revision \d+\n$`).MatchString(out) {
		t.Errorf("etcd compact printed %q", out)
	}
	if out := run("etcd", "defrag"); !strings.Contains(out, "Defragmented etcd at "+member.ClientURL()) {
		t.Errorf("etcd defrag printed %q", out)
	}
	if size, _ := member.DBSize(); size >= quota/2 {
		t.Errorf("database of %d bytes after compact and defrag; want it well under the quota of %d", size, quota)
	}
	if out := run("etcd", "alarm", "disarm"); out != "Disarmed NOSPACE (member embedded)\n" {
		t.Errorf("etcd alarm disarm printed %q", out)
	}
	if _, err := client.Put(t.Context(), "/after", "x"); err != nil {
		t.Errorf("write after the disarm: %v", err)
	}
	if out := run("etcd", "alarm", "list"); out != "Alarms:   none\n" {
		t.Errorf("etcd alarm list after the disarm printed %q", out)
	}
}
