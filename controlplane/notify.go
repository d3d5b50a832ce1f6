package controlplane

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Notifier hears how the control plane is doing, for a service manager:
// controlplane/sdnotify tells systemd. Set Options.Notifier; nil tells no
// one. Its methods must return quickly; they are called from the start-up
// sequence and the server's goroutines.
type Notifier interface {
	// Status says which long phase the start-up is in, in a few words:
	// joining a cluster, waiting for etcd or for the member's promotion,
	// starting the API server.
	Status(status string)
	// Ready says the server serves: /readyz says ok (Server.Ready).
	Ready()
	// Stopping says a stop has begun.
	Stopping()
	// Watchdog is how often the notifier wants to hear Alive once the
	// server is ready; zero: never.
	Watchdog() time.Duration
	// Alive says the server's /livez checks pass, at half the Watchdog
	// interval; a wedged server stops calling it.
	Alive()
}

// noNotifier tells no one.
type noNotifier struct{}

func (noNotifier) Status(string)           {}
func (noNotifier) Ready()                  {}
func (noNotifier) Stopping()               {}
func (noNotifier) Watchdog() time.Duration { return 0 }
func (noNotifier) Alive()                  {}

func notifierOf(n Notifier) Notifier {
	if n == nil {
		return noNotifier{}
	}
	return &stoppingNotifier{Notifier: n}
}

// stoppingNotifier drops Alive once Stopping was said: a watchdog check
// that passed just as the stop began must not ping after STOPPING=1.
type stoppingNotifier struct {
	Notifier
	mu       sync.Mutex
	stopping bool
}

func (n *stoppingNotifier) Stopping() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopping = true
	n.Notifier.Stopping()
}

func (n *stoppingNotifier) Alive() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopping {
		n.Notifier.Alive()
	}
}

// healthy asks the server's own health endpoint, /readyz or /livez, over
// the loopback connection: every check the server has, as a probe sees them.
func healthy(ctx context.Context, client rest.Interface, path string) bool {
	var code int
	client.Get().AbsPath(path).Do(ctx).StatusCode(&code)
	return code == http.StatusOK
}

// watchdog calls n.Alive at half n's Watchdog interval while live says the
// server is live, until ctx is done. Each check may take at most the time
// until the next: a server whose checks hang is as wedged as one whose
// checks fail, and is not reported alive.
func watchdog(ctx context.Context, n Notifier, live func(context.Context) bool) {
	interval := n.Watchdog() / 2
	if interval <= 0 {
		return
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		checkCtx, cancel := context.WithTimeout(ctx, interval)
		ok := live(checkCtx)
		cancel()
		if ok && ctx.Err() == nil {
			n.Alive()
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
