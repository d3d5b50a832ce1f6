package controlplane

import (
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/snapshot"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		modify func(o *Options)
		// wantErrs are substrings that must all appear in the error;
		// none means the options are valid.
		wantErrs []string
	}{
		{name: "defaults"},
		{
			name:     "empty data dir",
			modify:   func(o *Options) { o.DataDir = "" },
			wantErrs: []string{"--data-dir", "write e.g. --data-dir="},
		},
		{
			name:     "zero quota",
			modify:   func(o *Options) { o.EmbeddedEtcd.QuotaBackendBytes = 0 },
			wantErrs: []string{"--embedded-etcd-quota-bytes", "got 0", "write e.g. --embedded-etcd-quota-bytes=8589934592"},
		},
		{
			name:     "negative quota",
			modify:   func(o *Options) { o.EmbeddedEtcd.QuotaBackendBytes = -1 },
			wantErrs: []string{"--embedded-etcd-quota-bytes", "got -1", "write e.g."},
		},
		{name: "snapshots every 2s", modify: snapshots("@every 2s", 2)},
		{name: "snapshots daily in UTC", modify: snapshots("CRON_TZ=UTC 30 3 * * *", 1)},
		{name: "no scheduled snapshots", modify: snapshots("", 0)},
		{
			name:     "snapshot schedule not cron",
			modify:   snapshots("every 12 hours", 5),
			wantErrs: []string{"--embedded-etcd-snapshot-schedule", `"every 12 hours"`, `write a cron schedule such as "0 */12 * * *"`, `or "" to take no`},
		},
		{
			name:     "snapshot schedule with seconds",
			modify:   snapshots("0 0 */12 * * *", 5),
			wantErrs: []string{"--embedded-etcd-snapshot-schedule", `"0 0 */12 * * *"`, "write a cron schedule"},
		},
		{
			name:     "snapshot schedule out of range",
			modify:   snapshots("0 25 * * *", 5),
			wantErrs: []string{"--embedded-etcd-snapshot-schedule", "write a cron schedule"},
		},
		{
			name:     "snapshot retention zero",
			modify:   snapshots(snapshot.DefaultSchedule, 0),
			wantErrs: []string{"--embedded-etcd-snapshot-retention must be at least 1, got 0", "write e.g. --embedded-etcd-snapshot-retention=5", `--embedded-etcd-snapshot-schedule=""`},
		},
		{
			name:     "snapshot retention negative",
			modify:   snapshots(snapshot.DefaultSchedule, -3),
			wantErrs: []string{"--embedded-etcd-snapshot-retention", "got -3"},
		},
		{name: "etcd server with a port", modify: etcdServers("https://127.0.0.1:2379")},
		{name: "etcd server without a port", modify: etcdServers("http://etcd.example.com")},
		{name: "etcd servers", modify: etcdServers("https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://[2001:db8::1]:2379")},
		{name: "etcd unix socket", modify: etcdServers("unix:///tmp/e.sock")},
		{name: "etcd unixs socket", modify: etcdServers("unixs:///run/etcd/etcd.sock")},
		{name: "etcd server not a URL", modify: etcdServers("::bad"), wantErrs: []string{"--etcd-servers", `"::bad"`, "write e.g. --etcd-servers=https://127.0.0.1:2379"}},
		{name: "etcd server host:port", modify: etcdServers("127.0.0.1:2379"), wantErrs: []string{"--etcd-servers", `"127.0.0.1:2379"`, "write e.g."}},
		{name: "etcd server ftp", modify: etcdServers("ftp://x"), wantErrs: []string{"--etcd-servers", `"ftp://x"`, "https://", "write e.g."}},
		{name: "etcd server without host", modify: etcdServers("https://"), wantErrs: []string{"--etcd-servers", "no host", "write e.g."}},
		{name: "etcd server port out of range", modify: etcdServers("https://h:99999"), wantErrs: []string{"--etcd-servers", `invalid port "99999"`, "write e.g."}},
		{name: "etcd server port zero", modify: etcdServers("https://h:0"), wantErrs: []string{"--etcd-servers", `invalid port "0"`, "write e.g."}},
		{name: "etcd unix without socket", modify: etcdServers("unix://"), wantErrs: []string{"--etcd-servers", "names no socket", "write e.g."}},
		{
			name:     "one bad etcd server among good ones",
			modify:   etcdServers("https://127.0.0.1:2379", "ftp://x", "https://127.0.0.2:2379"),
			wantErrs: []string{"--etcd-servers", `"ftp://x"`},
		},
		{name: "tls-san DNS name", modify: tlsSANs("cp.example.com")},
		{name: "tls-san wildcard", modify: tlsSANs("*.example.com")},
		{name: "tls-san IPv4", modify: tlsSANs("10.0.0.1")},
		{name: "tls-san IPv6", modify: tlsSANs("2001:db8::1")},
		{name: "tls-san several", modify: tlsSANs("cp.example.com", "10.0.0.1", "*.example.com", "localhost")},
		{name: "tls-san with a space", modify: tlsSANs("bad name!"), wantErrs: []string{"--tls-san", `"bad name!"`, "write e.g. --tls-san=cp.example.com"}},
		{name: "tls-san CIDR", modify: tlsSANs("10.0.0.0/8"), wantErrs: []string{"--tls-san", `"10.0.0.0/8"`, "write e.g."}},
		{name: "tls-san URL", modify: tlsSANs("https://cp.example.com"), wantErrs: []string{"--tls-san", `"https://cp.example.com"`}},
		{name: "tls-san empty", modify: tlsSANs(""), wantErrs: []string{"--tls-san", `""`}},
		{
			name: "every error at once",
			modify: func(o *Options) {
				o.DataDir = ""
				o.EmbeddedEtcd.QuotaBackendBytes = 0
				etcdServers("ftp://x")(o)
				tlsSANs("cp.example.com", "bad name!")(o)
			},
			wantErrs: []string{"--data-dir", "--embedded-etcd-quota-bytes", "--etcd-servers", `--tls-san "bad name!"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			if tc.modify != nil {
				tc.modify(o)
			}
			err := o.Validate()
			if len(tc.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("validate() = %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("validate() succeeded, want an error with %q", tc.wantErrs)
			}
			for _, want := range tc.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("validate() = %q, want it to contain %q", err, want)
				}
			}
			if !strings.Contains(err.Error(), "write e.g.") && !strings.Contains(err.Error(), "write a cron schedule") {
				t.Errorf("validate() = %q, which does not tell what to write", err)
			}
		})
	}
}

func etcdServers(servers ...string) func(*Options) {
	return func(o *Options) { o.ControlPlane.Etcd.StorageConfig.Transport.ServerList = servers }
}

func snapshots(schedule string, retention int) func(*Options) {
	return func(o *Options) {
		o.EmbeddedEtcd.SnapshotSchedule, o.EmbeddedEtcd.SnapshotRetention = schedule, retention
	}
}

func tlsSANs(sans ...string) func(*Options) {
	return func(o *Options) { o.TLSSANs = sans }
}

func TestNewOptionsDefaults(t *testing.T) {
	o := NewOptions()
	if !o.Embedded() {
		t.Error("default options do not run an embedded etcd")
	}
	ss := o.ControlPlane.SecureServing
	if !ss.BindAddress.Equal(net.ParseIP("127.0.0.1")) || ss.BindPort != 6443 {
		t.Errorf("default address %s:%d, want 127.0.0.1:6443", ss.BindAddress, ss.BindPort)
	}
	if !slices.Equal(o.ControlPlane.Authorization.Modes, []string{"RBAC"}) {
		t.Errorf("authorization modes %q, want [RBAC]", o.ControlPlane.Authorization.Modes)
	}
	if o.DataDir != DefaultDataDir() {
		t.Errorf("DataDir = %q, want %q", o.DataDir, DefaultDataDir())
	}
	etcdServers("https://127.0.0.1:2379")(o)
	if o.Embedded() {
		t.Error("options with --etcd-servers run an embedded etcd")
	}
}

func TestDefaultDataDir(t *testing.T) {
	t.Run("XDG_DATA_HOME", func(t *testing.T) {
		t.Setenv("XDG_DATA_HOME", "/srv/xdg")
		t.Setenv("HOME", "/home/someone")
		if got, want := DefaultDataDir(), "/srv/xdg/sample-generic-controlplane"; got != want {
			t.Errorf("DefaultDataDir() = %q, want %q", got, want)
		}
	})
	t.Run("HOME", func(t *testing.T) {
		t.Setenv("XDG_DATA_HOME", "")
		t.Setenv("HOME", "/home/someone")
		if got, want := DefaultDataDir(), "/home/someone/.local/share/sample-generic-controlplane"; got != want {
			t.Errorf("DefaultDataDir() = %q, want %q", got, want)
		}
	})
}

func TestServingHosts(t *testing.T) {
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		bind string
		sans []string
		want []string
	}{
		{name: "loopback", bind: "127.0.0.1", want: []string{"localhost", "127.0.0.1", "::1"}},
		{name: "specific address", bind: "192.0.2.1", want: []string{"localhost", "127.0.0.1", "::1", "192.0.2.1"}},
		{name: "every interface", bind: "0.0.0.0", want: []string{"localhost", "127.0.0.1", "::1", hostname}},
		{name: "every IPv6 interface", bind: "::", want: []string{"localhost", "127.0.0.1", "::1", hostname}},
		{
			name: "SANs",
			bind: "127.0.0.1",
			sans: []string{"cp.example.com", "localhost", "192.0.2.10", "cp.example.com"},
			want: []string{"localhost", "127.0.0.1", "::1", "cp.example.com", "192.0.2.10"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.ControlPlane.SecureServing.BindAddress = net.ParseIP(tc.bind)
			o.TLSSANs = tc.sans
			// Order and repetition do not matter to the certificate.
			got := o.servingHosts()
			if !slices.Equal(sortedSet(got), sortedSet(tc.want)) {
				t.Errorf("servingHosts() = %q, want %q", got, tc.want)
			}
		})
	}
}

func sortedSet(s []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(s)))
}
