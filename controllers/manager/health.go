package manager

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apiserver/pkg/server/healthz"
)

// Health reports, per enabled controller, whether it is healthy: a
// controller that failed to start, or stopped while the manager runs, is
// not. A replica that does not lead runs no controller and is healthy.
type Health struct {
	mu     sync.Mutex
	status map[string]error
	checks []healthz.HealthChecker
	// synced is closed by the first leadership term whose controllers
	// have started and whose informers have synced.
	synced     chan struct{}
	syncedOnce sync.Once
}

// NewHealth returns the health of the controllers o enables.
func NewHealth(o *Options) *Health {
	h := &Health{status: map[string]error{}, synced: make(chan struct{})}
	for _, d := range o.descriptors {
		if !o.runs(d) {
			continue
		}
		name := reportedName(d)
		h.checks = append(h.checks, healthz.NamedCheck("controller-"+name, func(*http.Request) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.status[name]
		}))
	}
	return h
}

// Checks are one health check per enabled controller, named
// controller-<name> after the name it is reported under.
func (h *Health) Checks() []healthz.HealthChecker {
	if h == nil {
		return nil
	}
	return h.checks
}

// Synced is closed once the controllers have started and the informers
// they asked for at start have synced: the end of their start-up burst of
// lists. It stays open on a replica that never leads.
func (h *Health) Synced() <-chan struct{} { return h.synced }

func (h *Health) markSynced() {
	if h == nil {
		return
	}
	h.syncedOnce.Do(func() { close(h.synced) })
}

func (h *Health) set(name string, err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status[name] = err
}

func (h *Health) failed(name, what string, err error) {
	h.set(name, fmt.Errorf("%s: %w", what, err))
}
