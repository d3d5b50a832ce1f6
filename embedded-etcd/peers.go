package embeddedetcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// peerProbeTimeout bounds each peer's answer to the check before a start.
const peerProbeTimeout = 2 * time.Second

// ErrNotAMember is a member that its peers no longer count in their cluster.
var ErrNotAMember = errors.New("the member's peers do not count it in their cluster")

// checkPeers refuses to start a member of a cluster that its reachable
// peers no longer count: it was removed, or the cluster was restored from a
// snapshot on another member. Started anyway, a removed member would wait
// for a quorum that never comes, and the members of a restored cluster's
// old generation could still make one of their own: two clusters, each
// taking writes. Peers that do not answer are left out (they may be down);
// a member without data, or alone, has nothing to check.
func (cfg Config) checkPeers(ctx context.Context) error {
	answers, err := cfg.askPeers(ctx)
	if err != nil {
		return err
	}
	var refusals []string
	for _, a := range answers {
		if !a.countsUs {
			refusals = append(refusals, a.String())
		}
	}
	if len(refusals) == 0 {
		return nil
	}
	return fmt.Errorf("embedded etcd: %w: %s no longer count member %q: it was removed from the cluster, or the cluster was restored from a snapshot on another member; nothing was changed",
		ErrNotAMember, strings.Join(refusals, ", "), cfg.Name)
}

// LivePeers returns the peers of the (stopped) member of cfg that answer on
// their peer URLs and count it in their cluster, as "name at URL": a
// restore must not replace the member's data while they run, or they would
// go on as the old cluster beside the restored one.
func LivePeers(ctx context.Context, cfg Config) ([]string, error) {
	answers, err := cfg.askPeers(ctx)
	if err != nil {
		return nil, err
	}
	var live []string
	for _, a := range answers {
		if a.countsUs {
			live = append(live, a.String())
		}
	}
	return live, nil
}

// peerAnswer is a peer that answered whether it counts the member.
type peerAnswer struct {
	name, peerURL string
	countsUs      bool
}

func (a peerAnswer) String() string { return a.name + " at " + a.peerURL }

// askPeers asks every peer the member's data knows of, over the peer port,
// for its cluster's members; peers that do not answer are left out.
func (cfg Config) askPeers(ctx context.Context) ([]peerAnswer, error) {
	members, err := membersInData(cfg.DataDir)
	if err != nil || len(members) < 2 {
		return nil, err
	}
	tlsInfo := transport.TLSInfo{CertFile: cfg.PeerCertFile, KeyFile: cfg.PeerKeyFile, TrustedCAFile: cfg.PeerTrustedCAFile}
	tlsConfig, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: peer TLS: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: peerProbeTimeout}
	defer client.CloseIdleConnections()

	var mu sync.Mutex
	var answers []peerAnswer
	var wg sync.WaitGroup
	for _, m := range members {
		if m.Name == "" || m.Name == cfg.Name || len(m.PeerURLs) == 0 || m.PeerURLs[0] == cfg.PeerURL {
			continue
		}
		wg.Go(func() {
			theirs, err := peerMembers(ctx, client, m.PeerURLs[0])
			if err != nil {
				return // down or unreachable: it has no say
			}
			a := peerAnswer{name: m.Name, peerURL: m.PeerURLs[0]}
			for _, o := range theirs {
				// By name, or, for a member killed before it announced
				// its name, by peer URL.
				a.countsUs = a.countsUs || o.Name == cfg.Name || slices.Contains(o.PeerURLs, cfg.PeerURL)
			}
			mu.Lock()
			defer mu.Unlock()
			answers = append(answers, a)
		})
	}
	wg.Wait()
	return answers, nil
}

// membersInData reads the cluster's members as the member's data last saw
// them, without starting it.
func membersInData(dataDir string) ([]*membership.Member, error) {
	path := filepath.Join(dataDir, "member", "snap", "db")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("reading the members of %s: %w", path, err)
	}
	defer db.Close() //nolint:errcheck // read-only
	var members []*membership.Member
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(schema.Members.Name())
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			m := new(membership.Member)
			if err := json.Unmarshal(v, m); err != nil {
				return err
			}
			members = append(members, m)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading the members of %s: %w", path, err)
	}
	return members, nil
}

// peerMembers asks a peer for its cluster's members, over the peer port.
func peerMembers(ctx context.Context, client *http.Client, peerURL string) ([]*membership.Member, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peerURL, "/")+"/members", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck // decoded below
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", peerURL, resp.Status)
	}
	var members []*membership.Member
	if err := json.NewDecoder(resp.Body).Decode(&members); err != nil {
		return nil, err
	}
	return members, nil
}
