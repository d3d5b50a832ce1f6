package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/datadir"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

// ClusterOptions make the embedded etcd member one of a cluster of servers.
type ClusterOptions struct {
	// Init listens for peers, so that other servers can join (--cluster-init).
	Init bool
	// Join is a server of the cluster to join (--join https://HOST:PORT),
	// with Token; only a data dir without a member joins.
	Join  string
	Token string
	// TokenFile holds the token instead of Token, out of process lists.
	TokenFile string
	// PeerPort is where the member listens for its peers, on the advertised address.
	PeerPort int
	// LearnerTimeout bounds how long a joining member may take to catch up
	// before the cluster removes it.
	LearnerTimeout time.Duration
}

// DefaultEtcdPeerPort is etcd's own.
const DefaultEtcdPeerPort = 2380

func (o *ClusterOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Init, "cluster-init", o.Init, "Listen for the etcd peers of other servers on --advertise-address (else --bind-address) and --etcd-peer-port, so that they can join this server's cluster (with a token from \"token create\"). A server that ran alone keeps its data. Later starts need the flag no more.")
	fs.StringVar(&o.Join, "join", o.Join, "Join the cluster of the server at this URL (https://HOST:PORT) with --token, on a fresh --data-dir: the server's embedded etcd member joins the others', and it serves the same API. Later starts need neither flag.")
	fs.StringVar(&o.Token, "token", o.Token, "Join token for --join, from \"sample-generic-controlplane token create\" on a server of the cluster. Anyone who can list this machine's processes sees it: prefer --token-file.")
	fs.StringVar(&o.TokenFile, "token-file", o.TokenFile, "File holding the join token for --join, instead of --token.")
	fs.IntVar(&o.PeerPort, "etcd-peer-port", o.PeerPort, "Port the embedded etcd member listens on for its peers, with --cluster-init or --join.")
	fs.DurationVar(&o.LearnerTimeout, "etcd-learner-timeout", o.LearnerTimeout, "How long a joining server's etcd member may take to catch up with the cluster before it is removed again.")
}

func (o *Options) validateCluster() []error {
	c := o.EmbeddedEtcd.Cluster
	var errs []error
	if c.Join != "" || c.Init {
		if len(o.ControlPlane.Etcd.StorageConfig.Transport.ServerList) > 0 {
			errs = append(errs, errors.New("--cluster-init and --join join embedded etcd members; with --etcd-servers the servers share that etcd cluster already: drop them"))
		}
		if _, err := o.advertisedAddress(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Join != "" && c.Init {
		errs = append(errs, errors.New("--join and --cluster-init exclude each other: the first server starts with --cluster-init, the others with --join"))
	}
	switch {
	case c.Token != "" && c.TokenFile != "":
		errs = append(errs, errors.New("--token and --token-file exclude each other: give the token once"))
	case c.Join != "" && c.Token == "" && c.TokenFile == "":
		errs = append(errs, errors.New("--join needs --token-file (or --token): create a token with \"sample-generic-controlplane token create\" on a server of the cluster"))
	case c.Join == "" && (c.Token != "" || c.TokenFile != ""):
		errs = append(errs, errors.New("--token and --token-file are for --join: add --join=https://HOST:PORT of a server of the cluster"))
	case c.Join != "":
		if _, err := c.joinToken(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.PeerPort < 1 || c.PeerPort > 65535 {
		errs = append(errs, fmt.Errorf("--etcd-peer-port must be a port number, got %d; write e.g. --etcd-peer-port=%d", c.PeerPort, DefaultEtcdPeerPort))
	}
	if c.LearnerTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--etcd-learner-timeout must be positive, got %s; write e.g. --etcd-learner-timeout=%s", c.LearnerTimeout, cluster.DefaultLearnerTimeout))
	}
	return errs
}

// joinToken is the token of --token or --token-file.
func (o *ClusterOptions) joinToken() (jointoken.Token, error) {
	flag, value := "--token", o.Token
	if o.TokenFile != "" {
		data, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return jointoken.Token{}, fmt.Errorf("--token-file: %w", err)
		}
		flag, value = "--token-file "+o.TokenFile, strings.TrimSpace(string(data))
	}
	token, err := jointoken.Parse(value)
	if err != nil {
		return jointoken.Token{}, fmt.Errorf("%s: %w", flag, err)
	}
	return token, nil
}

// advertisedAddress is where the server's peers reach it: --advertise-address,
// else --bind-address.
func (o *Options) advertisedAddress() (net.IP, error) {
	ip := o.ControlPlane.GenericServerRunOptions.AdvertiseAddress
	if ip == nil || ip.IsUnspecified() {
		ip = o.ControlPlane.SecureServing.BindAddress
	}
	if ip == nil || ip.IsUnspecified() {
		return nil, errors.New("--cluster-init and --join need the address other servers reach this one at: set --advertise-address (or bind to it with --bind-address)")
	}
	return ip, nil
}

func (o *Options) peerURL() (string, error) {
	ip, err := o.advertisedAddress()
	if err != nil {
		return "", err
	}
	return "https://" + net.JoinHostPort(ip.String(), strconv.Itoa(o.EmbeddedEtcd.Cluster.PeerPort)), nil
}

// PrepareMembership prepares the data dir's member to be one of a cluster
// when asked, between datadir.Lock and Dir.EnsurePKI (PrepareDataDir calls
// it), changing nothing outside this machine: --cluster-init records the
// member's peer URL; --join on a data dir without a member asks the
// cluster, in a dry run, whether it would take the member, and places the
// credentials its servers share into the data dir (the PKI completes them),
// as k3s fetches its bootstrap data before its etcd join. The member is
// added later, once every local check has passed (CompletedOptions.Join).
// A member of a cluster keeps its place across starts; its peer URL follows
// the advertised address. It returns the names the PKI issues certificates
// for.
func (o *Options) PrepareMembership(ctx context.Context, d *datadir.Dir) (pki.Hosts, error) {
	hosts := pki.Hosts{Serving: o.servingHosts()}
	if !o.Embedded() {
		return hosts, nil
	}
	c := o.EmbeddedEtcd.Cluster
	m, err := d.Membership()
	if err != nil {
		return pki.Hosts{}, err
	}
	if m == nil && !c.Init && c.Join == "" {
		return hosts, nil
	}
	peerURL, err := o.peerURL()
	if err != nil {
		return pki.Hosts{}, err
	}
	logger := klog.FromContext(ctx)
	switch {
	case m != nil:
		if c.Join != "" {
			logger.Info("The data dir's etcd member joined its cluster already; --join and --token are ignored", "member", m.Name)
		}
		if m.PeerURL != peerURL {
			if onLoopback(peerURL) && !onLoopback(m.PeerURL) {
				// Started without its address (--bind-address defaults to
				// loopback): moving there would cut it off from its peers.
				logger.Info("Keeping the member's peer URL: the advertised address is on loopback, where its peers cannot reach it; give --advertise-address or --bind-address to change it", "member", m.Name, "peerURL", m.PeerURL, "advertised", peerURL)
			} else {
				logger.Info("The advertised address changed; the member's peer URL follows it", "member", m.Name, "old", m.PeerURL, "new", peerURL)
				m.PeerURL = peerURL
				if err := d.SetMembership(*m); err != nil {
					return pki.Hosts{}, err
				}
			}
		}
		peerURL = m.PeerURL
	case c.Init:
		if onLoopback(peerURL) {
			logger.Info("The etcd member listens for peers on loopback: only servers on this machine can join; give --bind-address (or --advertise-address) for others", "peerURL", peerURL)
		}
		if err := d.SetMembership(embeddedetcd.Membership{Name: cluster.NewMemberName(), PeerURL: peerURL}); err != nil {
			return pki.Hosts{}, err
		}
	default:
		if err := o.prepareJoin(ctx, d, peerURL); err != nil {
			return pki.Hosts{}, err
		}
	}
	u, err := url.Parse(peerURL)
	if err != nil {
		return pki.Hosts{}, err
	}
	hosts.EtcdPeer = []string{u.Hostname()}
	return hosts, nil
}

func onLoopback(peerURL string) bool {
	u, err := url.Parse(peerURL)
	if err != nil {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// prepareJoin asks the cluster of --join, in a dry run, whether it would
// take the data dir's member, and places the credentials its servers share
// into the data dir: the CA's, which the token pins, among them.
func (o *Options) prepareJoin(ctx context.Context, d *datadir.Dir, peerURL string) error {
	c := o.EmbeddedEtcd.Cluster
	if has, err := d.HasEtcdMember(); err != nil {
		return err
	} else if has {
		return fmt.Errorf("--join: data dir %s holds an etcd member already, of a server that ran alone or of another cluster; a server joins only with a fresh --data-dir (or drop --join to run it on its own data)", d.Path)
	}
	token, err := c.joinToken()
	if err != nil {
		return err
	}
	// Before the cluster is asked: a data dir of another cluster is
	// refused without a word to it.
	if err := cluster.CheckCA(filepath.Join(d.PKIDir(), "ca.crt"), token.CAHash); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--join: %w: this data dir belongs to another cluster; join with a new --data-dir", err)
	}
	name := cluster.NewMemberName()
	resp, err := cluster.DryRunJoin(ctx, c.Join, token, cluster.JoinRequest{Name: name, PeerURL: peerURL})
	if err != nil {
		return err
	}
	if err := writeJoinAnswer(d, token, resp); err != nil {
		return err
	}
	if resp.MemberID != "" {
		// A server of an older release, which does not know dry runs,
		// added the member before the local checks: take it back out.
		joined := &JoinedMember{server: c.Join, memberID: resp.MemberID, name: name, dataDir: d}
		return joined.Undo(ctx, fmt.Errorf("--join: the server at %s is of an older release that joins without the checks of this one: upgrade the cluster's servers first, then join with a new token", c.Join), nil)
	}
	return nil
}

// writeJoinAnswer places the credentials and encryption configuration of
// the cluster's answer into the data dir, once the CA is the token's.
func writeJoinAnswer(d *datadir.Dir, token jointoken.Token, resp *cluster.JoinResponse) error {
	if err := cluster.CheckCAData(resp.Credentials["ca.crt"], token.CAHash); err != nil {
		return fmt.Errorf("--join: the cluster's answer: %w", err)
	}
	if err := cluster.WriteShared(d.PKIDir(), resp.Credentials); err != nil {
		return fmt.Errorf("--join: %w", err)
	}
	if len(resp.EncryptionConfig) > 0 {
		if err := d.SetEncryptionConfig(resp.EncryptionConfig); err != nil {
			return fmt.Errorf("writing the cluster's encryption configuration: %w", err)
		}
	}
	return nil
}

// clusterStatusInterval is how often a server reports its member's status.
const clusterStatusInterval = 10 * time.Second

// installCluster serves what the servers of a cluster need of each other:
// jointoken.JoinPath (servers join with a token) and
// cluster.MembersPath (the members, for admins to see and remove). The
// client of the local member they use is Run's to close.
func (c CompletedConfig) installCluster(mux *mux.PathRecorderMux) (*clusterParts, error) {
	kube, err := kubernetes.NewForConfig(c.APIs.ControlPlane.Generic.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	etcd := c.EmbeddedEtcd.Client()
	mux.Handle(jointoken.JoinPath, cluster.NewJoinHandler(etcd, jointoken.NewStore(kube),
		c.Options.DataDir.PKI.Dir, c.Options.ControlPlane.Etcd.EncryptionProviderConfigFilepath))
	members := cluster.NewMembers(etcd, kube, c.Options.Membership.Name)
	members.LocalRemoved = c.EmbeddedEtcd.Removed
	mux.Handle(cluster.MembersPath, members.Handler())
	mux.HandlePrefix(cluster.MembersPath+"/", members.Handler())
	return &clusterParts{etcd: etcd, members: members, apiServerURL: c.advertisedURL()}, nil
}

// advertisedURL is where the other servers and their admins reach this
// server's API: on --advertise-address if set, else as URL says.
func (c CompletedConfig) advertisedURL() string {
	ss := c.Options.ControlPlane.SecureServing
	host := "127.0.0.1"
	if ip := c.Options.ControlPlane.GenericServerRunOptions.AdvertiseAddress; ip != nil && !ip.IsUnspecified() {
		host = ip.String()
	} else if ss.BindAddress != nil && !ss.BindAddress.IsUnspecified() {
		host = ss.BindAddress.String()
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(ss.BindPort))
}

// runCluster promotes joining members while this server's member leads,
// and reports its member's status once the server is ready, until ctx is
// done. (The handlers' client stays open until the API has stopped.)
func (s *Server) runCluster(ctx context.Context) {
	if s.cluster == nil {
		return
	}
	etcd := s.config.EmbeddedEtcd
	promoter := &cluster.Promoter{Etcd: s.cluster.etcd, IsLeader: etcd.IsLeader, LearnerTimeout: s.config.Options.EmbeddedEtcd.Cluster.LearnerTimeout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		promoter.Run(ctx)
	}()
	select {
	case <-s.ready:
		s.cluster.members.RunStatusReporter(ctx, s.cluster.apiServerURL, clusterStatusInterval)
	case <-ctx.Done():
	}
	<-done
}
