// Package embeddedetcd runs a single etcd member inside the current process,
// alone or as one of a cluster of such members. Beside it, each in a package
// of its own, is everything else about etcd: cluster membership (cluster),
// maintenance (maintenance), snapshots (snapshot), the TLS to an external
// cluster (externaltls) and its clients (etcdclient).
//
// The member is reachable by nobody but its owner: clients talk to it over a
// unix socket whose directory is private to the user running the process, and
// the peer listener demands client certificates signed by the peer CA. A
// member that runs alone (which never dials its peer listener, but etcd
// always opens one) listens on loopback only; a member of a cluster listens
// on its peer URL (Config.PeerURL), and before it starts asks the peers its
// data knows of whether they still count it (peers.go).
package embeddedetcd

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/zaprepeats"
)

// DefaultQuotaBackendBytes is the size at which etcd raises its NOSPACE alarm
// and refuses writes: 8 GiB, etcd's documented maximum recommendation.
const DefaultQuotaBackendBytes int64 = 8 << 30

// DefaultReadyTimeout bounds how long WaitReady waits for the member to serve.
const DefaultReadyTimeout = 60 * time.Second

// slowRequest is how long a request may take before etcd warns about it.
const slowRequest = 500 * time.Millisecond

// Config describes one embedded etcd member.
type Config struct {
	// DataDir holds the member's WAL and database. It is created with mode 0700.
	DataDir string
	// SocketPath is the unix socket clients connect to. Its directory must be
	// private (0700): the socket is not protected by TLS, only by the
	// filesystem. See ClientSocketDir.
	SocketPath string
	// PeerCertFile, PeerKeyFile and PeerTrustedCAFile secure the peer
	// listener on loopback with mutual TLS.
	PeerCertFile      string
	PeerKeyFile       string
	PeerTrustedCAFile string
	// QuotaBackendBytes is the database size at which etcd stops accepting writes.
	QuotaBackendBytes int64
	// ReadyTimeout bounds the waits after Start, from Start on: WaitReady
	// (for a member of a cluster, the wait for a quorum) and WaitPromoted
	// (for a member that joins, the wait for its promotion) together.
	ReadyTimeout time.Duration
	// LogLevel of etcd's own zap logger ("warn" unless set).
	LogLevel string

	// Name is the member's name in its cluster; "embedded" when empty.
	Name string
	// PeerURL is the https URL the member listens on for its peers and
	// advertises to them. Empty: a port on loopback that the kernel
	// chooses and nobody dials, for a member that runs alone.
	PeerURL string
	// InitialCluster lists the members of the existing cluster this
	// member joins, itself included, as etcd's --initial-cluster does
	// (name=peerURL,…). Empty: a new cluster of this member alone. etcd
	// reads it only at the member's first start.
	InitialCluster string
}

// clustered reports whether the member has, or may have, peers.
func (cfg Config) clustered() bool { return cfg.PeerURL != "" }

// Server is a running embedded etcd member.
type Server struct {
	cfg Config
	// deadline ends the waits after Start (Config.ReadyTimeout).
	deadline  time.Time
	etcd      *embed.Etcd
	closeOnce sync.Once
	closing   *atomic.Bool
	stopped   chan struct{}
}

// Start starts the member and returns without waiting for it to be ready;
// call WaitReady before using it. It fails at once when the configuration is
// invalid or the listeners cannot be opened. A member of a cluster first
// asks the peers its data knows of whether they still count it (peers.go);
// ctx bounds that, and only that.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" || cfg.SocketPath == "" {
		return nil, errors.New("embedded etcd: DataDir and SocketPath are required")
	}
	if cfg.QuotaBackendBytes == 0 {
		cfg.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "warn"
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: creating data dir: %w", err)
	}
	if err := ensurePrivateDir(filepath.Dir(cfg.SocketPath)); err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	// A socket left by a process that was killed would make listen fail with
	// "address already in use". The data dir lock held by our caller
	// guarantees no live member owns it.
	if err := os.Remove(cfg.SocketPath); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("embedded etcd: removing stale socket: %w", err)
	}

	if err := checkStorageVersion(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	if cfg.clustered() {
		if err := cfg.checkPeers(ctx); err != nil {
			return nil, err
		}
	}

	closing := new(atomic.Bool)
	ecfg, err := cfg.etcdConfig(closing)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: starting member in %s: %w", cfg.DataDir, err)
	}
	s := &Server{cfg: cfg, deadline: time.Now().Add(cfg.ReadyTimeout), etcd: e, closing: closing, stopped: make(chan struct{})}
	go func() {
		<-e.Server.StopNotify()
		close(s.stopped)
	}()
	return s, nil
}

func (cfg Config) etcdConfig(closing *atomic.Bool) (*embed.Config, error) {
	ecfg, err := cfg.MemberConfig()
	if err != nil {
		return nil, err
	}
	ecfg.Dir = cfg.DataDir
	ecfg.QuotaBackendBytes = cfg.QuotaBackendBytes
	if !cfg.clustered() {
		// A restarted member stays follower for a randomised election
		// timeout (one to ten ticks) before it elects itself: with etcd's
		// 100 ms tick that is up to a second of start-up. A one-member
		// cluster has no peers to send heartbeats to or to wait for, so
		// short ticks cost nothing. Members with peers keep etcd's
		// defaults: 10 ms heartbeats between busy processes would end in
		// needless elections.
		ecfg.TickMs = 10
		ecfg.ElectionMs = 100
	}
	// A request is slow for the embedded member when it is slow for the API
	// server, its only client, which traces requests that take more than
	// 500 ms. etcd's own thresholds (100 ms to apply, 300 ms to answer)
	// are for a dedicated machine: on a busy laptop or CI runner they warn
	// at starts that nothing is wrong with. (NewConfig leaves the request
	// threshold at zero, which would log every request as slow.)
	ecfg.WarningApplyDuration = slowRequest
	ecfg.WarningUnaryRequestDuration = slowRequest
	ecfg.LogLevel = cfg.LogLevel
	logger, err := newLogger(cfg.LogLevel, cfg.DataDir, closing)
	if err != nil {
		return nil, err
	}
	ecfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)

	ecfg.ListenClientUrls = []url.URL{{Scheme: "unix", Path: cfg.SocketPath}}
	// etcd insists that advertised URLs carry a host:port even for a unix
	// socket. Nobody dials them in a one-member cluster; the path still
	// names the socket in "etcdctl member list".
	ecfg.AdvertiseClientUrls = []url.URL{{Scheme: "unix", Host: "localhost:0", Path: cfg.SocketPath}}

	ecfg.PeerTLSInfo.CertFile = cfg.PeerCertFile
	ecfg.PeerTLSInfo.KeyFile = cfg.PeerKeyFile
	ecfg.PeerTLSInfo.TrustedCAFile = cfg.PeerTrustedCAFile
	ecfg.PeerTLSInfo.ClientCertAuth = true
	if cfg.PeerCertFile == "" {
		// Without certificates nobody can complete a handshake: etcd
		// generates throwaway self-signed ones and still requires
		// client certificates.
		ecfg.PeerAutoTLS = true
		ecfg.SelfSignedCertValidity = 1
	}
	// Metrics stay on the client socket; no other listener is opened.
	ecfg.ListenMetricsUrls = nil
	return ecfg, nil
}

// DefaultMemberName names a member that runs alone.
const DefaultMemberName = "embedded"

// MemberConfig is etcd's configuration with the member's identity: its
// name, peer URL and cluster, which a restored member shares
// (snapshot.RestoreMember).
func (cfg Config) MemberConfig() (*embed.Config, error) {
	ecfg := embed.NewConfig()
	ecfg.Name = cfg.Name
	if ecfg.Name == "" {
		ecfg.Name = DefaultMemberName
	}
	// etcd always opens a peer listener. Port 0 lets the kernel choose a free
	// loopback port; a one-member cluster never dials its own peer URL, so
	// the advertised port is only recorded in membership.
	peer := url.URL{Scheme: "https", Host: "127.0.0.1:0"}
	if cfg.PeerURL != "" {
		u, err := url.Parse(cfg.PeerURL)
		if err != nil || u.Scheme != "https" || u.Port() == "" {
			return nil, fmt.Errorf("embedded etcd: peer URL %q must be https://HOST:PORT", cfg.PeerURL)
		}
		peer = *u
	}
	ecfg.ListenPeerUrls = []url.URL{peer}
	ecfg.AdvertisePeerUrls = []url.URL{peer}
	ecfg.InitialCluster = ecfg.InitialClusterFromName(ecfg.Name)
	// Read only when the member's data is created: a new cluster's ID is
	// derived from its token and first member, so a token of its own keeps
	// it from being any other's.
	ecfg.InitialClusterToken = newClusterToken()
	if cfg.InitialCluster != "" {
		ecfg.InitialCluster = cfg.InitialCluster
		ecfg.ClusterState = embed.ClusterStateFlagExisting
	}
	return ecfg, nil
}

// newClusterToken returns a random etcd cluster token.
func newClusterToken() string {
	return "sgcp-" + rand.Text()
}

// ClientURL is the endpoint to give to etcd clients, e.g. --etcd-servers.
func (s *Server) ClientURL() string {
	return (&url.URL{Scheme: "unix", Path: s.cfg.SocketPath}).String()
}

// Ready is closed once the member has joined its cluster and serves requests.
func (s *Server) Ready() <-chan struct{} { return s.etcd.Server.ReadyNotify() }

// Stopped is closed once the member has stopped, through Close or a failure.
func (s *Server) Stopped() <-chan struct{} { return s.stopped }

// Err reports fatal errors of the member's listeners.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// WaitReady blocks until the member serves client requests: a member that
// runs alone once it has elected itself, a member of a cluster once it is
// part of a quorum (a learner serves once it has caught up with the
// leader). It only waits: the steps that follow a member's start
// (WaitPromoted, EnsurePeerURL, DefragmentIfFragmented) are the caller's.
// It fails when the member reports an error, stops, ctx ends or
// Config.ReadyTimeout passes.
func (s *Server) WaitReady(ctx context.Context) error {
	timer := time.NewTimer(time.Until(s.deadline))
	defer timer.Stop()
	select {
	case <-s.Ready():
		return nil
	case err := <-s.Err():
		return fmt.Errorf("embedded etcd in %s failed before becoming ready: %w", s.cfg.DataDir, err)
	case <-s.Stopped():
		return fmt.Errorf("embedded etcd in %s stopped before becoming ready", s.cfg.DataDir)
	case <-timer.C:
		if s.cfg.clustered() {
			return fmt.Errorf("embedded etcd in %s was not ready after %s: a member of a cluster serves once it is part of a quorum; are enough of its peers running, and reachable on their peer URLs? (\"sample-generic-controlplane cluster members\" on a server of the cluster shows them)", s.cfg.DataDir, s.cfg.ReadyTimeout)
		}
		return fmt.Errorf("embedded etcd in %s was not ready after %s; is the disk very slow or the data dir damaged?", s.cfg.DataDir, s.cfg.ReadyTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// learnerPoll is how often WaitPromoted looks whether a learner was promoted.
const learnerPoll = 50 * time.Millisecond

// WaitPromoted waits until the member votes. A member that joins starts as
// a learner, which the cluster promotes once it has caught up with the
// leader (cluster.Promoter, on the leader's server); the API server must
// not start on a learner, which serves no client requests. It returns at
// once for a voter, and fails once Config.ReadyTimeout has passed since
// Start.
func (s *Server) WaitPromoted(ctx context.Context) error {
	if !s.etcd.Server.IsLearner() {
		return nil
	}
	timeout := time.NewTimer(time.Until(s.deadline))
	defer timeout.Stop()
	klog.FromContext(ctx).Info("Embedded etcd member is a learner; waiting for the cluster to promote it", "member", s.etcd.Server.MemberID())
	ticker := time.NewTicker(learnerPoll)
	defer ticker.Stop()
	for s.etcd.Server.IsLearner() {
		select {
		case <-ticker.C:
		case err := <-s.Err():
			return fmt.Errorf("embedded etcd in %s failed while it waited to be promoted: %w", s.cfg.DataDir, err)
		case <-s.Stopped():
			return fmt.Errorf("embedded etcd in %s stopped while it waited to be promoted", s.cfg.DataDir)
		case <-timeout.C:
			return fmt.Errorf("embedded etcd in %s was not promoted from learner to voter after %s: is the leader reachable on its peer URL, and does it run this binary? \"sample-generic-controlplane cluster members\" on a server of the cluster shows the members", s.cfg.DataDir, s.cfg.ReadyTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// EnsurePeerURL records the member's peer URL (Config.PeerURL) in the
// cluster when it changed, e.g. the first start with --cluster-init of a
// member that ran alone, or a server whose address changed: a write to the
// cluster, once the member is ready. It needs a quorum: without one it
// says what to do and leaves the URL as it was. A member that runs alone
// has nothing to record.
func (s *Server) EnsurePeerURL(ctx context.Context) {
	if !s.cfg.clustered() {
		return
	}
	id := s.etcd.Server.MemberID()
	m := s.etcd.Server.Cluster().Member(id)
	if m == nil || (len(m.PeerURLs) == 1 && m.PeerURLs[0] == s.cfg.PeerURL) {
		return
	}
	logger := klog.FromContext(ctx)
	updated := *m
	updated.PeerURLs = []string{s.cfg.PeerURL}
	ctx, cancel := context.WithTimeout(ctx, peerURLUpdateTimeout)
	defer cancel()
	if _, err := s.etcd.Server.UpdateMember(ctx, updated); err != nil {
		logger.Error(err, "Cannot record the embedded etcd member's new peer URL; its peers dial the old one until it is. Start the server with its old address, or remove the member (sample-generic-controlplane cluster remove) and join again", "member", m.Name, "old", m.PeerURLs, "new", s.cfg.PeerURL)
		return
	}
	logger.Info("Recorded the embedded etcd member's new peer URL", "member", m.Name, "old", m.PeerURLs, "new", s.cfg.PeerURL)
}

// peerURLUpdateTimeout bounds the update of the member's peer URL.
const peerURLUpdateTimeout = 10 * time.Second

// Client returns a client of the member that calls it in this process,
// without a connection. Close it after use.
func (s *Server) Client() *clientv3.Client { return v3client.New(s.etcd.Server) }

// MemberID is the member's ID in its cluster.
func (s *Server) MemberID() uint64 { return uint64(s.etcd.Server.MemberID()) }

// Removed reports whether the member was removed from its cluster: it
// stops when it applies its own removal.
func (s *Server) Removed() bool {
	return s.etcd.Server.Cluster().Member(s.etcd.Server.MemberID()) == nil
}

// IsLearner reports whether the member is a learner, which the cluster
// has not promoted to a voter yet (WaitPromoted).
func (s *Server) IsLearner() bool { return s.etcd.Server.IsLearner() }

// HasLeader reports whether the member knows a leader of its cluster: a
// member of several without one has no quorum.
func (s *Server) HasLeader() bool { return s.etcd.Server.Leader() != 0 }

// IsLeader reports whether the member leads its cluster.
func (s *Server) IsLeader() bool { return s.etcd.Server.Leader() == s.etcd.Server.MemberID() }

// Clustered reports whether the member listens for peers (Config.PeerURL).
func (s *Server) Clustered() bool { return s.cfg.clustered() }

// DefragmentIfFragmented returns free pages to the filesystem when more
// than half of the database file is unused, as the control plane does once
// at each start, before its API server opens the database to clients.
// Compaction (which kube-apiserver does every few minutes) frees pages
// inside the file but never shrinks it; the maintenance package
// defragments while the server runs.
func (s *Server) DefragmentIfFragmented(ctx context.Context) error {
	be := s.etcd.Server.Backend()
	size, inUse := be.Size(), be.SizeInUse()
	if size == 0 || inUse*2 >= size {
		return nil
	}
	logger := klog.FromContext(ctx)
	start := time.Now()
	if err := be.Defrag(); err != nil {
		return fmt.Errorf("embedded etcd: defragmenting %s: %w", s.cfg.DataDir, err)
	}
	logger.Info("Defragmented embedded etcd database", "sizeBefore", size, "sizeInUse", inUse, "sizeAfter", be.Size(), "duration", time.Since(start))
	return nil
}

// DBSize returns the size of the database file and the part of it in use.
func (s *Server) DBSize() (size, inUse int64) {
	be := s.etcd.Server.Backend()
	return be.Size(), be.SizeInUse()
}

// Close stops the member gracefully, flushing its WAL and database so the
// next start needs no recovery. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.etcd.Close()
		<-s.stopped
	})
}

func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating socket dir: %w", err)
	}
	// MkdirAll keeps an existing directory's mode; tighten it.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restricting socket dir %s to its owner: %w", dir, err)
	}
	return nil
}

func newLogger(level, dataDir string, closing *atomic.Bool) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: log level %q: %w", level, err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Encoding = "console"
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	zc.Sampling = nil
	zc.DisableStacktrace = true
	zc.DisableCaller = true
	zc.OutputPaths = []string{"stderr"}
	zc.ErrorOutputPaths = []string{"stderr"}
	return zc.Build(
		zap.Fields(zap.String("component", "embedded-etcd")),
		zap.WrapCore(func(core zapcore.Core) zapcore.Core {
			return &logFilter{Core: zaprepeats.NewCore(core, zaprepeats.Interval), closing: closing, dataDir: dataDir}
		}),
	)
}
