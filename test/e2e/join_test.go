package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A server that joined another with a token serves what was written through
// the first, and the first serves what was written through it: their
// members are one etcd cluster. Restarted with --join and the token still on
// its command line, the joined server says that it ignores them and serves
// the same objects again. Two members, so neither is killed: either alone
// has no quorum (the three-server specs in joined_test.go, build tag e2e,
// take servers down).
func TestJoinedServerServesTheSameObjects(t *testing.T) {
	p := joined()
	dir := t.TempDir()
	first := startServerOf(t, p, dir, 0, "--cluster-init")
	token := createToken(t, first, time.Hour, false)
	start := time.Now()
	second := startServerOf(t, p, dir, 1, joinFlags(first, token)...)
	t.Logf("server 1: from the start with --join to ready: %s", time.Since(start).Round(time.Millisecond))
	servers := []*Cluster{first, second}
	bothServe(t, servers)

	second.flags = append(second.flags, joinFlags(first, token)...)
	if err := p.Restart(t.Context(), second); err != nil {
		t.Fatalf("restarting the joined server with --join again: %v", err)
	}
	const ignored = "--join and --token are ignored"
	if stderr := readFile(t, second.StderrPath); !strings.Contains(stderr, ignored) {
		t.Errorf("the joined server, restarted with --join, does not log that %q (%s)", ignored, second.StderrPath)
	}
	for i, s := range servers {
		cms := clientset(t, s).CoreV1().ConfigMaps("default")
		for j := range servers {
			if _, err := cms.Get(t.Context(), writtenThrough(j), metav1.GetOptions{}); err != nil {
				t.Errorf("after the restart server %d does not read what was written through server %d: %v", i, j, err)
			}
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
