package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Three servers that joined each other with tokens serve one another's
// writes: their members are one etcd cluster. One killed (SIGKILL), the two
// others go on taking writes; started again, with --join and a token still
// on its command line, it says that it ignores them, and serves everything,
// what was written while it was down included. (joined_test.go, build tag
// e2e, takes the cluster through more.)
func TestJoinedServersSurviveAKill(t *testing.T) {
	p := joined()
	c := startClusterWith(t, p, Spec{})
	servers := c.Replicas
	bothServe(t, servers)

	victim, survivors := servers[len(servers)-1], servers[:len(servers)-1]
	p.Kill(victim)
	const whileDown = "written-while-a-server-was-down"
	for i, s := range survivors {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", whileDown, i)}}
		if _, err := clientset(t, s).CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("with one server killed, a write through server %d: %v", i, err)
		}
	}

	token := createToken(t, servers[0], time.Hour, false)
	victim.flags = append(victim.flags, joinFlags(servers[0], token)...)
	start := time.Now()
	if err := p.Restart(t.Context(), victim); err != nil {
		t.Fatalf("starting the killed server again, with --join: %v", err)
	}
	t.Logf("the killed server serves again %s after its start", time.Since(start).Round(time.Millisecond))
	const ignored = "--join and --token are ignored"
	if stderr := readFile(t, victim.StderrPath); !strings.Contains(stderr, ignored) {
		t.Errorf("the joined server, restarted with --join, does not log that %q (%s)", ignored, victim.StderrPath)
	}
	cms := clientset(t, victim).CoreV1().ConfigMaps("default")
	names := []string{fmt.Sprintf("%s-0", whileDown), fmt.Sprintf("%s-1", whileDown)}
	for j := range servers {
		names = append(names, writtenThrough(j))
	}
	for _, name := range names {
		if _, err := cms.Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("the restarted server does not read ConfigMap %s: %v", name, err)
		}
	}
}

// bothServe checks that each server answers and reads what the others wrote
// (ConfigMaps default/writtenThrough(i)).
func bothServe(t *testing.T, servers []*Cluster) {
	t.Helper()
	for i, s := range servers {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: writtenThrough(i)}}
		if _, err := clientset(t, s).CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("server %d (%s): %v", i, s.URL, err)
		}
	}
	for i, s := range servers {
		cms := clientset(t, s).CoreV1().ConfigMaps("default")
		for j := range servers {
			if _, err := cms.Get(t.Context(), writtenThrough(j), metav1.GetOptions{}); err != nil {
				t.Errorf("server %d (%s) does not read ConfigMap %s: %v", i, s.URL, writtenThrough(j), err)
			}
		}
	}
}

// writtenThrough names the ConfigMap bothServe writes through server i.
func writtenThrough(i int) string { return fmt.Sprintf("written-through-replica-%d", i) }

// A start that joins checks everything local before it asks the cluster
// for its member: a port in use (the API's, or the member's peer port) or a
// flag that upstream's validation refuses ends the start with the cluster
// untouched. No learner is left behind, and the token, single-use, is not
// used: the server joins with it once the flags are right.
func TestJoinChecksLocallyFirst(t *testing.T) {
	p := joined()
	dir := t.TempDir()
	first := startServerOf(t, p, dir, 0, "--cluster-init")
	token := createToken(t, first, time.Hour, true)
	ip := serverAddress(1)
	busy := func(t *testing.T) string {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() }) //nolint:errcheck
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	for _, tc := range []struct {
		name  string
		flags func(t *testing.T) []string
		want  string
	}{
		{name: "the API port in use", flags: func(t *testing.T) []string { return []string{"--secure-port=" + busy(t)} }, want: "--secure-port"},
		{name: "the peer port in use", flags: func(t *testing.T) []string { return []string{"--etcd-peer-port=" + busy(t)} }, want: "--etcd-peer-port"},
		{name: "a group upstream does not know", flags: func(*testing.T) []string { return []string{"--runtime-config=nosuch.example.com/v1=true"} }, want: "nosuch.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := append(joinFlags(first, token), tc.flags(t)...)
			exit := startServerExpectingFailure(t, p, Spec{WorkDir: filepath.Join(dir, "failed")}, 1, flags)
			if !strings.Contains(exit.Stderr, tc.want) {
				t.Errorf("the start failed without naming %s:\n%s", tc.want, tail(exit.Stderr, logTailLines))
			}
			if strings.Contains(exit.Stderr, "Joined the cluster") {
				t.Errorf("the start joined the cluster before it failed:\n%s", tail(exit.Stderr, logTailLines))
			}
			if members := clusterMembers(t, first); len(members) != 1 {
				t.Errorf("after the failed start, cluster members lists %+v; want the first server's member alone", members)
			}
		})
	}

	second := startServerOf(t, p, filepath.Join(dir, "failed"), 1, joinFlags(first, token)...)
	members := clusterMembers(t, first)
	if len(members) != 2 || memberAt(members, peerURLOf(second)) == nil {
		t.Fatalf("after the join with the unused token, cluster members lists %+v; want both servers' members", members)
	}
	for _, m := range members {
		if m.Learner {
			t.Errorf("member %s is still a learner once its server is ready", m.Name)
		}
	}
}
