package maintenance

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/klog/v2/textlogger"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdclient"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdtest"
)

// testQuota is small enough to fill in a fraction of a second.
const testQuota = 8 << 20

// startMember starts an embedded member with testQuota and returns a
// client of it through its socket.
func startMember(t *testing.T) (*embeddedetcd.Server, clientv3.Config) {
	t.Helper()
	dir, err := os.MkdirTemp("", "etcd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) //nolint:errcheck
	member := etcdtest.StartMember(t, embeddedetcd.Config{DataDir: filepath.Join(dir, "data"), SocketPath: filepath.Join(dir, "run", "etcd.sock"), QuotaBackendBytes: testQuota})
	cfg, err := etcdclient.Config([]string{member.ClientURL()}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	return member, cfg
}

// fill puts values of 128 KiB under prefix until the member refuses one
// for want of space, and returns how many it took.
func fill(t *testing.T, c *clientv3.Client, prefix string) int {
	t.Helper()
	value := make([]byte, 128<<10)
	for i := range 1000 {
		rand.Read(value) //nolint:errcheck // never fails
		if _, err := c.Put(t.Context(), fmt.Sprintf("%s/%d", prefix, i), string(value)); err != nil {
			if !errors.Is(err, rpctypes.ErrNoSpace) {
				t.Fatalf("put %d: want %v, got %v", i, rpctypes.ErrNoSpace, err)
			}
			return i
		}
	}
	t.Fatalf("the member took 1000 values of 128 KiB with a quota of %d bytes", testQuota)
	return 0
}

func TestSpaceMonitorRecoversTheEmbeddedMember(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	_, cfg := startMember(t)
	c, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck

	m := NewSpaceMonitor(SpaceConfig{Client: cfg, Recover: true, QuotaFlag: "--embedded-etcd-quota-bytes"})
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ready := m.ReadyzCheck()
	if err := ready.Check(&http.Request{}); err != nil {
		t.Fatalf("readiness before the database is full: %v", err)
	}

	n := fill(t, c, "/fill")
	m.Check(ctx)
	err = ready.Check(&http.Request{})
	if err == nil || !strings.Contains(err.Error(), "NOSPACE alarm is raised") {
		t.Fatalf("readiness with the database full: want the NOSPACE alarm, got %v", err)
	}

	// Delete one value at a time: the alarm stays while the data in use
	// (compacted by the monitor) is over RecoverBelow of the quota, and
	// goes with the first deletion that brings it under.
	stillFull := 0
	for i := range n {
		if _, err := c.Delete(ctx, fmt.Sprintf("/fill/%d", i)); err != nil {
			t.Fatalf("delete while the database is full: %v", err)
		}
		m.Check(ctx)
		if recovered(t, m) {
			break
		}
		if err := ready.Check(&http.Request{}); err == nil {
			t.Fatal("readiness passes while the alarm is raised")
		}
		// The pages a compaction frees count from the next check on: one
		// more must recover a member with room.
		if inUse := fullStatus(t, c).Members[0].DBSizeInUse; inUse <= recoverLimit(testQuota) {
			m.Check(ctx)
			if !recovered(t, m) {
				t.Fatalf("two checks left the alarm raised with %d bytes in use, under the limit of %d", inUse, recoverLimit(testQuota))
			}
			break
		}
		stillFull++
	}
	if stillFull == 0 {
		t.Error("the first deletion gave the writes back: the test deletes too much at a time to show the limit")
	}
	if err := ready.Check(&http.Request{}); err != nil {
		t.Fatalf("readiness after the deletions: %v", err)
	}
	// What the monitor saw after its recovery, before anything wrote.
	m.mu.Lock()
	st := m.status
	m.mu.Unlock()
	if size := st.Members[0].DBSize; size > recoverLimit(testQuota) {
		t.Errorf("database of %d bytes after the recovery; want it defragmented under %d", size, recoverLimit(testQuota))
	}
	if _, err := c.Put(ctx, "/after", "x"); err != nil {
		t.Fatalf("write after the recovery: %v", err)
	}
	if alarms := fullStatus(t, c).Alarms; len(alarms) != 0 {
		t.Errorf("alarms after the recovery: %v", alarms)
	}
	t.Logf("filled with %d values; %d deletions left the alarm raised; after recovery: %d bytes, %d in use", n, stillFull, st.Members[0].DBSize, st.Members[0].DBSizeInUse)
}

// recovered reports whether the monitor's last check left no alarm.
func recovered(t *testing.T, m *SpaceMonitor) bool {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status != nil && len(m.status.Alarms) == 0
}

func fullStatus(t *testing.T, c *clientv3.Client) *Status {
	t.Helper()
	st, err := GetStatus(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSpaceMonitorLogsOnce checks that a raised alarm is logged once, then
// only every reminderInterval with a count, and that its end is logged.
func TestSpaceMonitorLogsOnce(t *testing.T) {
	full := &Status{
		Members: []MemberStatus{{ID: 1, Name: "embedded", Endpoint: "unix:///etcd.sock", DBSize: testQuota, DBSizeInUse: testQuota, Quota: testQuota}},
		Alarms:  []Alarm{{MemberID: 1, Member: "embedded", Type: NoSpace}},
	}
	roomy := &Status{Members: full.Members}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		after     time.Duration
		status    *Status
		recovered *recovery
		want      string // the line logged, "" for none
	}{
		{0, roomy, nil, ""},
		{5 * time.Second, full, nil, "etcd's database is full"},
		{5 * time.Second, full, nil, ""},
		{5 * time.Minute, full, nil, ""},
		{5 * time.Minute, full, nil, `etcd's database is still full`},
		{5 * time.Second, full, nil, ""},
		{5 * time.Second, roomy, nil, "etcd's NOSPACE alarm was disarmed"},
		{5 * time.Second, roomy, nil, ""},
		{5 * time.Second, roomy, &recovery{member: "embedded"}, "etcd's database had reached its quota and has room again"},
	}
	m := NewSpaceMonitor(SpaceConfig{Recover: true, QuotaFlag: "--embedded-etcd-quota-bytes"})
	m.now = func() time.Time { return now }
	for i, step := range steps {
		now = now.Add(step.after)
		var buf strings.Builder
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf)))
		m.record(logger, step.status, step.recovered)
		lines := strings.Count(buf.String(), "\n")
		switch {
		case step.want == "" && lines != 0:
			t.Errorf("step %d: logged %q, want nothing", i, buf.String())
		case step.want != "" && (lines != 1 || !strings.Contains(buf.String(), step.want)):
			t.Errorf("step %d: logged %q, want one line with %q", i, buf.String(), step.want)
		}
		if i == 4 && !strings.Contains(buf.String(), "checks=4") {
			t.Errorf("the reminder does not count the checks that saw the alarm: %q", buf.String())
		}
	}
}

// TestSpaceMonitorLeavesExternalMembersAlone checks that, without Recover
// (an external cluster), the monitor reports a full database and says how
// to recover it by hand, but neither compacts nor disarms.
func TestSpaceMonitorLeavesExternalMembersAlone(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	_, cfg := startMember(t)
	c, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck

	m := NewSpaceMonitor(SpaceConfig{Client: cfg, QuotaFlag: "--quota-backend-bytes"})
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	fill(t, c, "/fill")
	if _, err := c.Delete(ctx, "/fill/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	m.Check(ctx)
	err = m.ReadyzCheck().Check(&http.Request{})
	for _, want := range []string{"NOSPACE alarm is raised", `"sample-generic-controlplane etcd compact"`, "--quota-backend-bytes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readiness of an external cluster with a full database: want %q, got %v", want, err)
		}
	}
	if len(fullStatus(t, c).AlarmsOf(NoSpace)) == 0 {
		t.Error("the monitor disarmed the alarm of an external cluster's member")
	}
	if _, err := c.Get(ctx, "/fill/0", clientv3.WithRev(2)); err != nil {
		t.Errorf("the monitor compacted an external cluster's history: %v", err)
	}
}
