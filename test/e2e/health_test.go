package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// healthClient returns an HTTP client of c that gives up on a request after
// timeout, for probing /readyz and /livez.
func healthClient(t *testing.T, c *Cluster, timeout time.Duration) *http.Client {
	t.Helper()
	cfg := restConfig(t, c)
	cfg.Timeout = timeout
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// healthStatus returns the status code of c's path (/readyz, /livez), or the
// error of a request that got no answer.
func healthStatus(ctx context.Context, client *http.Client, c *Cluster, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
	if err != nil {
		return 0, err
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close() //nolint:errcheck
	return res.StatusCode, nil
}

// healthBody returns what c answers on path, whatever the status code.
func healthBody(t *testing.T, c *Cluster, path string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, c.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := healthClient(t, c, 10*time.Second).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close() //nolint:errcheck
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return string(body)
}

// untilReadyz polls c's /readyz every 20 ms until it answers 200 (ready)
// or anything else, no answer included (!ready), and returns when that
// first happened; it fails t after timeout.
func untilReadyz(t *testing.T, c *Cluster, ready bool, timeout time.Duration) time.Time {
	t.Helper()
	client := healthClient(t, c, 2*time.Second)
	deadline := time.Now().Add(timeout)
	var last string
	for {
		code, err := healthStatus(t.Context(), client, c, "/readyz")
		now := time.Now()
		if (err == nil && code == http.StatusOK) == ready {
			return now
		}
		last = fmt.Sprint(code)
		if err != nil {
			last = err.Error()
		}
		if now.After(deadline) {
			t.Fatalf("%s/readyz still answers %s %s later, want ready=%v", c.URL, last, timeout, ready)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
