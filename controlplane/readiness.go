package controlplane

import (
	"context"
	"net/http"
)

// readyzPath is where the server chain serves its readiness.
const readyzPath = "/readyz"

// readyzAnswers asks handler, the chain's handler of /readyz (its
// NonGoRestfulMux), in process, whether the server is ready: the checks
// /readyz runs over HTTPS (every post-start hook finished, informers
// synced, etcd reachable, not shutting down), without a TLS connection, the
// request filters and a request's logging for each poll. Run polls it until
// the server is ready, every readyPollInterval: over the loopback
// connection that was about 70 HTTPS requests per start, more the longer a
// loaded machine takes.
func readyzAnswers(ctx context.Context, handler http.Handler) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyzPath, nil)
	if err != nil {
		return false
	}
	w := &statusRecorder{header: http.Header{}}
	handler.ServeHTTP(w, req)
	return w.status() == http.StatusOK
}

// statusRecorder is the http.ResponseWriter of an in-process request whose
// status alone matters; it discards the body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (r *statusRecorder) Header() http.Header { return r.header }

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(b), nil
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

// status is the response's status code; as net/http's, 200 if the handler
// set none.
func (r *statusRecorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}
