package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// MembersClient asks a control plane's API server for the members of its
// cluster (MembersPath): the cluster command's, and a joining server's
// that takes its member back out after a failed start.
type MembersClient struct {
	config *rest.Config
}

// NewMembersClient returns a client of the members of the control plane
// that config names. Listing needs the verb get on MembersPath, removing
// delete (admins only).
func NewMembersClient(config *rest.Config) *MembersClient {
	return &MembersClient{config: config}
}

// List returns the members as the control plane's own member sees them.
func (c *MembersClient) List(ctx context.Context) ([]MemberStatus, error) {
	client, err := restClient(c.config)
	if err != nil {
		return nil, err
	}
	body, err := client.Get().AbsPath(MembersPath).Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("listing the etcd members through %s: %w", c.config.Host, err)
	}
	var members []MemberStatus
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, fmt.Errorf("listing the etcd members through %s: the answer is not a list of members: %w", c.config.Host, err)
	}
	return members, nil
}

// Remove removes member name (or a member's hex ID) as Members.Remove
// does. Only the leader's control plane hands leadership over before the
// leader goes: a removal of the leader answered with NotLeader is sent
// again, once, to the leader's API server, with the same credentials, when
// the configuration verifies servers against a CA (the URL comes from a
// status report that any writer of Leases in kube-system could have set).
// redirectedTo is that server, when the removal went there.
func (c *MembersClient) Remove(ctx context.Context, name string, force bool) (redirectedTo string, err error) {
	config := c.config
	err = removeMember(ctx, config, name, force)
	leaderURL, notLeader := leaderAPIServer(err)
	if !notLeader || leaderURL == "" {
		return "", annotate(config, err)
	}
	if config.Insecure || (len(config.CAData) == 0 && config.CAFile == "") {
		return "", fmt.Errorf("%s is the etcd leader; only its control plane (%s) can hand leadership over first, and the kubeconfig does not verify servers against a CA, so its credentials are not sent there: run the command with that server's kubeconfig", name, leaderURL)
	}
	// Admin credentials are valid on every server of the cluster: they
	// share the CA, which the configuration verifies the leader's server
	// against.
	leader := rest.CopyConfig(config)
	leader.Host = leaderURL
	leader.TLSClientConfig.ServerName = ""
	err = removeMember(ctx, leader, name, force)
	if _, again := leaderAPIServer(err); again {
		return leaderURL, fmt.Errorf("%s is no longer the leader's: leadership moved meanwhile; run the command again", leaderURL)
	}
	return leaderURL, annotate(leader, err)
}

func annotate(config *rest.Config, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", config.Host, err)
}

// removeMember asks the control plane config names to remove member name.
func removeMember(ctx context.Context, config *rest.Config, name string, force bool) error {
	client, err := restClient(config)
	if err != nil {
		return err
	}
	req := client.Delete().AbsPath(MembersPath, name)
	if force {
		req = req.Param("force", "true")
	}
	return req.Do(ctx).Error()
}

// restClient is a REST client for MembersPath, a non-resource URL.
func restClient(config *rest.Config) (*rest.RESTClient, error) {
	config = rest.CopyConfig(config)
	// Decodes the metav1.Status of the server's errors.
	config.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("a client of %s: %w", config.Host, err)
	}
	return client, nil
}

// leaderAPIServer says whether err is the server's answer that the member
// is the leader and the server's member is not, and where the leader's API
// server is.
func leaderAPIServer(err error) (string, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Reason != StatusReasonNotLeader {
		return "", false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == CauseTypeLeaderAPIServerURL {
				return c.Message, true
			}
		}
	}
	return "", true
}
