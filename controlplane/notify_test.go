package controlplane

import (
	"context"
	"testing"
	"time"
)

// fakeNotifier counts Alive calls on a channel.
type fakeNotifier struct {
	noNotifier
	interval time.Duration
	alive    chan struct{}
}

func (n *fakeNotifier) Watchdog() time.Duration { return n.interval }
func (n *fakeNotifier) Alive()                  { n.alive <- struct{}{} }

// The watchdog hears Alive only after a check that passed: a wedged server
// (its /livez fails) stops the pings, and they resume when it recovers.
func TestWatchdogPingsOnlyWhileLive(t *testing.T) {
	n := &fakeNotifier{interval: 2 * time.Millisecond, alive: make(chan struct{}, 10)}
	asked, answers := make(chan struct{}), make(chan bool)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchdog(ctx, n, func(ctx context.Context) bool {
			select {
			case asked <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			return <-answers
		})
	}()
	// next waits for the watchdog's next check: by then it has handled
	// the previous one's answer, Alive included.
	next := func() {
		t.Helper()
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
			t.Fatal("the watchdog asked for no check within 10s")
		}
	}
	for range 3 {
		next()
		answers <- false
	}
	next()
	if len(n.alive) != 0 {
		t.Fatalf("%d pings while the checks failed, want none", len(n.alive))
	}
	answers <- true
	next()
	if len(n.alive) != 1 {
		t.Fatalf("%d pings after a passing check, want 1", len(n.alive))
	}
	cancel()
	answers <- false
	<-done
}

// Without a watchdog interval, nothing is checked.
func TestWatchdogOff(t *testing.T) {
	watchdog(t.Context(), &fakeNotifier{}, func(context.Context) bool {
		t.Error("checked liveness without a watchdog interval")
		return true
	})
}

// Once the stop has begun, a ping that raced it is dropped.
func TestNoAliveAfterStopping(t *testing.T) {
	fake := &fakeNotifier{alive: make(chan struct{}, 10)}
	n := notifierOf(fake)
	n.Alive()
	n.Stopping()
	n.Alive()
	if len(fake.alive) != 1 {
		t.Errorf("%d pings, want the one before Stopping", len(fake.alive))
	}
}
