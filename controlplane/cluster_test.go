package controlplane

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/datadir"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

const testToken = "sgcp::sha256:0000000000000000000000000000000000000000000000000000000000000000::abcdef.0123456789abcdefghijklmnopqrstuv"

// The cluster flags are checked before anything is written, each error
// naming the flag and what to write.
func TestValidateCluster(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		modify func(c *ClusterOptions, o *Options)
		// wantErrs must all appear in the error; none: valid.
		wantErrs []string
	}{
		{name: "cluster-init", modify: func(c *ClusterOptions, _ *Options) { c.Init = true }},
		{name: "join with a token", modify: func(c *ClusterOptions, _ *Options) { c.Join, c.Token = "https://127.0.0.1:6443", testToken }},
		{name: "join with a token file", modify: func(c *ClusterOptions, _ *Options) { c.Join, c.TokenFile = "https://127.0.0.1:6443", tokenFile }},
		{
			name:     "join without a token",
			modify:   func(c *ClusterOptions, _ *Options) { c.Join = "https://127.0.0.1:6443" },
			wantErrs: []string{"--join needs --token-file (or --token)", "token create"},
		},
		{
			name:     "token without join",
			modify:   func(c *ClusterOptions, _ *Options) { c.Token = testToken },
			wantErrs: []string{"--token and --token-file are for --join", "--join=https://HOST:PORT"},
		},
		{
			name: "token and token file",
			modify: func(c *ClusterOptions, _ *Options) {
				c.Join, c.Token, c.TokenFile = "https://127.0.0.1:6443", testToken, tokenFile
			},
			wantErrs: []string{"--token and --token-file exclude each other"},
		},
		{
			name:     "malformed token",
			modify:   func(c *ClusterOptions, _ *Options) { c.Join, c.Token = "https://127.0.0.1:6443", "secret" },
			wantErrs: []string{"--token:", "token create"},
		},
		{
			name: "missing token file",
			modify: func(c *ClusterOptions, _ *Options) {
				c.Join, c.TokenFile = "https://127.0.0.1:6443", filepath.Join(t.TempDir(), "none")
			},
			wantErrs: []string{"--token-file:", "no such file"},
		},
		{
			name: "join and cluster-init",
			modify: func(c *ClusterOptions, _ *Options) {
				c.Init, c.Join, c.Token = true, "https://127.0.0.1:6443", testToken
			},
			wantErrs: []string{"--join and --cluster-init exclude each other"},
		},
		{
			name: "cluster-init with an external etcd",
			modify: func(c *ClusterOptions, o *Options) {
				c.Init = true
				o.ControlPlane.Etcd.StorageConfig.Transport.ServerList = []string{"https://127.0.0.1:2379"}
			},
			wantErrs: []string{"--cluster-init and --join join embedded etcd members", "--etcd-servers"},
		},
		{
			name: "cluster-init on every address without an advertised one",
			modify: func(c *ClusterOptions, o *Options) {
				c.Init = true
				o.ControlPlane.SecureServing.BindAddress = net.IPv4zero
			},
			wantErrs: []string{"--advertise-address"},
		},
		{
			name:     "peer port out of range",
			modify:   func(c *ClusterOptions, _ *Options) { c.PeerPort = 70000 },
			wantErrs: []string{"--etcd-peer-port", "got 70000", "--etcd-peer-port=2380"},
		},
		{
			name:     "learner timeout zero",
			modify:   func(c *ClusterOptions, _ *Options) { c.LearnerTimeout = 0 },
			wantErrs: []string{"--etcd-learner-timeout", "--etcd-learner-timeout=10m0s"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(&o.EmbeddedEtcd.Cluster, o)
			err := o.Validate()
			if len(tc.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: no error, want one with %q", tc.wantErrs)
			}
			for _, want := range tc.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "0123456789abcdefghijklmnopqrstuv") {
				t.Errorf("error %q repeats the token's secret", err)
			}
		})
	}
}

// A member's peer URL follows the advertised address, except onto loopback
// from another address: a server restarted without --bind-address (whose
// default is loopback) would otherwise cut itself off from its peers.
func TestPrepareMembershipPeerURL(t *testing.T) {
	cases := []struct {
		name, stored, bind, want string
	}{
		{name: "same address", stored: "https://10.0.0.1:2380", bind: "10.0.0.1", want: "https://10.0.0.1:2380"},
		{name: "new address", stored: "https://10.0.0.1:2380", bind: "10.0.0.2", want: "https://10.0.0.2:2380"},
		{name: "default loopback after another address", stored: "https://10.0.0.1:2380", bind: "127.0.0.1", want: "https://10.0.0.1:2380"},
		{name: "loopback to loopback", stored: "https://127.0.0.3:2380", bind: "127.0.0.4", want: "https://127.0.0.4:2380"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := datadir.Lock(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.SetMembership(embeddedetcd.Membership{Name: "m", PeerURL: tc.stored}); err != nil {
				t.Fatal(err)
			}
			o := NewOptions()
			o.ControlPlane.SecureServing.BindAddress = net.ParseIP(tc.bind)
			hosts, err := o.PrepareMembership(t.Context(), d)
			if err != nil {
				t.Fatal(err)
			}
			m, err := d.Membership()
			if err != nil {
				t.Fatal(err)
			}
			if m.PeerURL != tc.want {
				t.Errorf("peer URL %s, want %s", m.PeerURL, tc.want)
			}
			if wantHost := strings.TrimSuffix(strings.TrimPrefix(tc.want, "https://"), ":2380"); len(hosts.EtcdPeer) != 1 || hosts.EtcdPeer[0] != wantHost {
				t.Errorf("peer certificate hosts %q, want %s", hosts.EtcdPeer, wantHost)
			}
		})
	}
}
