package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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
	code, _, err := httpGet(ctx, client, c.URL+path, nil)
	return code, err
}

// healthBody returns what c answers on path, whatever the status code.
func healthBody(t *testing.T, c *Cluster, path string) string {
	t.Helper()
	_, body, err := httpGet(t.Context(), healthClient(t, c, 10*time.Second), c.URL+path, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return body
}

// untilReadyz polls c's /readyz every 20 ms until it answers 200 (ready)
// or anything else, no answer included (!ready), and returns when that
// first happened; it fails t after timeout.
func untilReadyz(t *testing.T, c *Cluster, ready bool, timeout time.Duration) time.Time {
	t.Helper()
	client := healthClient(t, c, 2*time.Second)
	var seen time.Time
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		code, err := healthStatus(ctx, client, c, "/readyz")
		if ctx.Err() != nil {
			return false, ctx.Err() // the deadline, not the server, ended the request
		}
		seen = time.Now()
		last = fmt.Sprint(code)
		if err != nil {
			last = err.Error()
		}
		return (err == nil && code == http.StatusOK) == ready, nil
	})
	if err != nil {
		t.Fatalf("%s/readyz still answers %s %s later, want ready=%v: %v", c.URL, last, timeout, ready, err)
	}
	return seen
}
