package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

// joined is the provider of the specs of servers that join.
func joined() *joinedProvider {
	return &joinedProvider{binary: provider.(*binaryProvider), servers: 3}
}

// startServerOf starts server i of a cluster in dir (as the joined provider
// does: on 127.0.0.<i+1>) with flags, for the specs that join servers
// themselves, and kills it when the test ends.
func startServerOf(t *testing.T, p *joinedProvider, dir string, i int, flags ...string) *Cluster {
	t.Helper()
	s, err := p.startServer(t.Context(), Spec{WorkDir: dir}, i, flags)
	if err != nil {
		t.Fatalf("starting server %d: %v", i, err)
	}
	t.Cleanup(func() {
		p.Kill(s)
		logTailOnFailure(t, s)
	})
	return s
}

// startServerExpectingFailure starts server i with flags, which must end
// on its own, and returns how it ended.
func startServerExpectingFailure(t *testing.T, p *joinedProvider, spec Spec, i int, flags []string) *ExitError {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), readyTimeout)
	defer cancel()
	s, err := p.startServer(ctx, spec, i, flags)
	if err == nil {
		p.Kill(s)
		t.Fatalf("server %d with flags %q started and served at %s; want it to exit with an error", i, flags, s.URL)
	}
	var exitErr *ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("server %d did not exit on its own: %v", i, err)
	}
	return exitErr
}

// joinFlags are the flags that join the cluster of first with token.
func joinFlags(first *Cluster, token string) []string {
	return []string{"--join=" + first.URL, "--token=" + token}
}

// createToken creates a join token on the cluster of s with "token
// create", for ttl, and for one use when singleUse.
func createToken(t *testing.T, s *Cluster, ttl time.Duration, singleUse bool) string {
	t.Helper()
	args := []string{"--ttl=" + ttl.String()}
	if singleUse {
		args = append(args, "--single-use")
	}
	token, err := joined().createJoinToken(t.Context(), s, args...)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// peerURLOf is where server s's member listens for its peers.
func peerURLOf(s *Cluster) string {
	return fmt.Sprintf("https://%s:%d", s.bindAddress(), peerPortOf(s))
}

// serverIndex is the index of server s among c's.
func serverIndex(c *Cluster, s *Cluster) int {
	for i, r := range c.Replicas {
		if r == s {
			return i
		}
	}
	return -1
}

// member is one member as "cluster members -o json" prints it: the fields
// these specs read.
type member struct {
	Name     string   `json:"name"`
	ID       string   `json:"id"`
	PeerURLs []string `json:"peerURLs"`
	Learner  bool     `json:"learner"`
	Leader   bool     `json:"leader"`
	Healthy  bool     `json:"healthy"`
}

// clusterMembers is what "cluster members -o json" prints through s.
func clusterMembers(t *testing.T, s *Cluster) []member {
	t.Helper()
	res := runBinary(t, "cluster", "members", "-o", "json", "--kubeconfig="+s.Kubeconfig)
	if res.ExitCode != 0 {
		t.Fatalf("cluster members: exit code %d; stderr:\n%s", res.ExitCode, res.Stderr)
	}
	var members []member
	if err := json.Unmarshal([]byte(res.Stdout), &members); err != nil {
		t.Fatalf("cluster members -o json: %v; stdout:\n%s", err, res.Stdout)
	}
	return members
}

// memberAt returns the member with peer URL url, or nil.
func memberAt(members []member, url string) *member {
	for i, m := range members {
		for _, u := range m.PeerURLs {
			if u == url {
				return &members[i]
			}
		}
	}
	return nil
}
