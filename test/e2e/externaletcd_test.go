//go:build e2e

package e2e

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/sample-generic-controlplane/internal/externaltlstest"
)

// etcdTLSFailFast bounds a start whose TLS to etcd cannot work. Upstream's
// etcd client alone retries the handshake for 20 s, then fails with
// "etcd grpc connection not ready: context deadline exceeded".
const etcdTLSFailFast = 10 * time.Second

// snapshot save takes a snapshot of a member of the external etcd cluster
// the control plane runs on, over TLS with a client certificate, and it
// holds the control plane's objects.
func TestExternalEtcdSnapshotSave(t *testing.T) {
	forEveryProvider(t, func(t *testing.T, p Provider) {
		_, etcd := sharedEtcdOn(t, p)
		// Not the first member: any of them serves a snapshot.
		file := filepath.Join(t.TempDir(), "external.db")
		res := runBinary(t, append([]string{"snapshot", "save", file}, etcd.MemberFlags(1)...)...)
		saved := savedSnapshot.FindStringSubmatch(res.Stdout)
		if res.ExitCode != 0 || saved == nil || saved[1] != file {
			t.Fatalf("snapshot save %q: exit code %d\nstdout:\n%s\nstderr:\n%s", etcd.MemberFlags(1), res.ExitCode, res.Stdout, res.Stderr)
		}
		// The control plane's bootstrap alone writes hundreds of keys.
		if keys, _ := strconv.Atoi(saved[3]); keys < 100 {
			t.Errorf("the snapshot of member 1 holds %d keys; want the control plane's objects", keys)
		}
	})
}

// A control plane started on the external etcd cluster with a CA that did
// not sign the members' certificates, without a client certificate, with a
// certificate file that does not exist or a key of another certificate
// exits at once, naming the flag to fix.
func TestExternalEtcdTLSFailsFast(t *testing.T) {
	forEveryProvider(t, func(t *testing.T, p Provider) {
		_, etcd := sharedEtcdOn(t, p)
		foreign, err := externaltlstest.NewCredentials(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		servers := "--etcd-servers=" + strings.Join(etcd.Endpoints, ",")
		for _, tc := range []struct {
			name  string
			flags []string
			// want are parts of the last line of stderr.
			want []string
		}{
			{
				name:  "a CA that did not sign the members' certificates",
				flags: []string{servers, "--etcd-cafile=" + foreign.CAFile, "--etcd-certfile=" + etcd.CertFile, "--etcd-keyfile=" + etcd.KeyFile},
				want:  []string{"--etcd-cafile=" + foreign.CAFile + " does not trust the certificate of the etcd member at " + etcd.Endpoints[0], "x509: certificate signed by unknown authority"},
			},
			{
				name:  "no client certificate",
				flags: []string{servers, "--etcd-cafile=" + etcd.CAFile},
				want:  []string{"the etcd member at " + etcd.Endpoints[0] + " requires a client certificate", "set --etcd-certfile and --etcd-keyfile"},
			},
			{
				name:  "a certificate file that does not exist",
				flags: []string{servers, "--etcd-cafile=" + etcd.CAFile, "--etcd-certfile=" + etcd.CertFile + ".missing", "--etcd-keyfile=" + etcd.KeyFile},
				want:  []string{"--etcd-certfile=" + etcd.CertFile + ".missing: ", "no such file or directory"},
			},
			{
				name:  "a key of another certificate",
				flags: []string{servers, "--etcd-cafile=" + etcd.CAFile, "--etcd-certfile=" + etcd.CertFile, "--etcd-keyfile=" + foreign.ClientKeyFile},
				want:  []string{"--etcd-keyfile=" + foreign.ClientKeyFile + " is not the key of the client certificate --etcd-certfile=" + etcd.CertFile},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				start := time.Now()
				exit := startExpectingFailure(t, Spec{Flags: tc.flags}, 2*etcdTLSFailFast)
				took := time.Since(start)
				t.Logf("exited with code %d after %s", exit.Code, took.Round(time.Millisecond))
				if exit.Code == 0 {
					t.Errorf("exit code 0, want non-zero")
				}
				last := exit.LastStderrLine()
				if !strings.HasPrefix(last, "Error: ") {
					t.Errorf("last line of stderr is %q, want it to start with \"Error: \"", last)
				}
				for _, want := range tc.want {
					if !strings.Contains(last, want) {
						t.Errorf("last line of stderr is %q, want it to say %q", last, want)
					}
				}
				if took > etcdTLSFailFast {
					t.Errorf("the control plane exited after %s, want within %s", took.Round(time.Millisecond), etcdTLSFailFast)
				}
			})
		}
	})
}

// The etcd commands reach the external cluster over TLS with the control
// plane's flags: status shows its three members, the leader, each
// member's database beside its quota and no alarm; compact and defrag
// (one member at a time) succeed, and the control plane keeps serving.
func TestExternalEtcdCommands(t *testing.T) {
	forEveryProvider(t, func(t *testing.T, p Provider) {
		c, etcd := sharedEtcdOn(t, p)
		run := func(args ...string) string {
			t.Helper()
			res := runBinary(t, args...)
			if res.ExitCode != 0 {
				t.Fatalf("%q: exit code %d\nstdout:\n%s\nstderr:\n%s", args, res.ExitCode, res.Stdout, res.Stderr)
			}
			return res.Stdout
		}
		status := run(append([]string{"etcd", "status"}, etcd.Flags()...)...)
		member := regexp.MustCompile(`(?m)^\S+\s+[0-9a-f]+\s+voter\s+(yes)?\s+3\.\d+\.\d+\s+[\d.]+ \S?iB\s+[\d.]+ \S?iB\s+[\d.]+ \S?iB\s+https://`)
		if got := len(member.FindAllString(status, -1)); got != len(etcd.Endpoints) {
			t.Errorf("etcd status shows %d members with their sizes and quota, want %d:\n%s", got, len(etcd.Endpoints), status)
		}
		if strings.Count(status, "   yes   ") != 1 || !strings.Contains(status, "Alarms:   none") {
			t.Errorf("etcd status does not show one leader and no alarm:\n%s", status)
		}
		if out := run(append([]string{"etcd", "alarm", "list"}, etcd.Flags()...)...); out != "Alarms:   none\n" {
			t.Errorf("etcd alarm list printed %q", out)
		}
		if out := run(append([]string{"etcd", "compact"}, etcd.Flags()...)...); !strings.HasPrefix(out, "Compacted etcd to revision ") {
			t.Errorf("etcd compact printed %q", out)
		}
		if out := run(append([]string{"etcd", "defrag"}, etcd.MemberFlags(2)...)...); !strings.HasPrefix(out, "Defragmented etcd at "+etcd.Endpoints[2]) {
			t.Errorf("etcd defrag printed %q", out)
		}
		untilReadyz(t, c, true, readyTimeout)
	})
}
