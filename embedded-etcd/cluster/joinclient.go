package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

// Join asks the server at serverURL (https://HOST:PORT) to add a member to
// its cluster, and uses the token. It verifies the server against the CA
// the token pins before it sends the token, and retries while the server
// cannot be reached or is busy; a refused token or request fails at once,
// saying why.
func Join(ctx context.Context, serverURL string, token jointoken.Token, req JoinRequest) (*JoinResponse, error) {
	return join(ctx, serverURL, token, req, false)
}

// DryRunJoin asks the server at serverURL whether it would add the member,
// and for the credentials the servers of its cluster share, changing
// nothing: the token is checked, not used, and no member is added. A
// joining server completes and checks its own configuration with the
// credentials before it Joins. An answer with a MemberID comes from a
// server of an older release that does not know dry runs and added the
// member: the caller takes it back out.
func DryRunJoin(ctx context.Context, serverURL string, token jointoken.Token, req JoinRequest) (*JoinResponse, error) {
	return join(ctx, serverURL, token, req, true)
}

func join(ctx context.Context, serverURL string, token jointoken.Token, req JoinRequest, dryRun bool) (*JoinResponse, error) {
	u, err := url.Parse(serverURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--join %q must be the URL of a server of the cluster, https://HOST:PORT", serverURL)
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: pinnedTLSConfig(u.Hostname(), token.CAHash), Proxy: http.ProxyFromEnvironment},
		// The server holds a join while another one's member catches up,
		// within the API server's deadline for a request.
		Timeout: 90 * time.Second,
	}
	defer client.CloseIdleConnections()
	endpoint := u.JoinPath(jointoken.JoinPath)
	if dryRun {
		endpoint.RawQuery = url.Values{"dryRun": {"All"}}.Encode()
	}
	logger := klog.FromContext(ctx)

	var resp *JoinResponse
	var lastErr error
	backoff := wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Steps: 100, Cap: 5 * time.Second}
	start := time.Now()
	err = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		var retry bool
		resp, retry, lastErr = post(ctx, client, endpoint.String(), token, body)
		switch {
		case lastErr == nil:
			return true, nil
		case !retry:
			return false, lastErr
		case time.Since(start) > JoinTimeout:
			return false, lastErr
		}
		logger.V(1).Info("Join not answered yet; retrying", "server", serverURL, "err", lastErr)
		return false, nil
	})
	if err != nil {
		if wait.Interrupted(err) && lastErr != nil {
			err = lastErr
		}
		return nil, fmt.Errorf("joining %s: %w", serverURL, err)
	}
	return resp, nil
}

// post sends the join once. retry says whether trying again may help.
func post(ctx context.Context, client *http.Client, endpoint string, token jointoken.Token, body []byte) (*JoinResponse, bool, error) {
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	httpReq.Header.Set("Authorization", "Bearer "+token.Credential())
	httpReq.Header.Set("Content-Type", "application/json")
	httpResp, err := client.Do(httpReq)
	if err != nil {
		var pinErr *caPinError
		if errors.As(err, &pinErr) {
			return nil, false, pinErr
		}
		return nil, true, err
	}
	defer httpResp.Body.Close() //nolint:errcheck // read to the end below
	data, err := io.ReadAll(io.LimitReader(httpResp.Body, 16<<20))
	if err != nil {
		return nil, true, err
	}
	if httpResp.StatusCode == http.StatusOK {
		var resp JoinResponse
		if err := json.Unmarshal(data, &resp); err != nil {
			return nil, false, fmt.Errorf("the server's answer is not a join response: %w", err)
		}
		return &resp, false, nil
	}
	message := string(data)
	var status metav1.Status
	if json.Unmarshal(data, &status) == nil && status.Message != "" {
		message = status.Message
	}
	switch httpResp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, false, fmt.Errorf("the server refused the token (%s): it is wrong, expired or used already; create a new one on a server of the cluster with \"sample-generic-controlplane token create\"", message)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return nil, true, fmt.Errorf("server busy: %s", message)
	case http.StatusNotFound:
		return nil, false, fmt.Errorf("the server does not take joins (%s): is it a server of a cluster started with --cluster-init?", message)
	default:
		return nil, false, fmt.Errorf("the server refused the join: %s", message)
	}
}

// caPinError is a server that does not present the CA the token pins.
type caPinError struct{ msg string }

func (e *caPinError) Error() string { return e.msg }

// pinnedTLSConfig trusts exactly the CA whose public key hashes to caHash,
// which the server presents after its serving certificate: the TLS
// handshake fails, and the token is never sent, unless the server's
// certificate was issued by that CA for host.
func pinnedTLSConfig(host, caHash string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified below, against the pinned CA instead of the system's.
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection verifies
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return &caPinError{"the server presented no certificate"}
			}
			roots := x509.NewCertPool()
			found := false
			for _, cert := range cs.PeerCertificates[1:] {
				if cert.IsCA && jointoken.CAHash(cert) == caHash {
					roots.AddCert(cert)
					found = true
				}
			}
			if !found {
				return &caPinError{fmt.Sprintf("the server does not present the CA the token pins (%s): it is not a server of the cluster the token is for, or it serves with a certificate of its own (--tls-cert-file)", caHash)}
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots})
			if err != nil {
				return &caPinError{fmt.Sprintf("the server's certificate is not valid for %s under the pinned CA: %v", host, err)}
			}
			return nil
		},
	}
}
