package logging

import (
	"io"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// repeatLimiter writes the first of the entries that share a key and, for
// each period in which more came, one line that counts them. A failing
// dependency (etcd without a leader, say) makes the same call log thousands
// of times a second; one line a period per call tells the same story.
type repeatLimiter struct {
	out    io.Writer
	clock  clock.PassiveClock
	period time.Duration
	// ticks, when set, ends periods every second while entries are held;
	// tests leave it nil and call endPeriods themselves.
	ticks clock.WithTicker

	mu sync.Mutex
	// held are the keys written in the current period of each.
	held    map[string]*heldEntries
	ticking bool
}

// heldEntries are the entries of one key left out since start.
type heldEntries struct {
	start  time.Time
	count  int
	last   []byte
	format lineFormat
}

func newRepeatLimiter(out io.Writer, clock clock.PassiveClock, period time.Duration) *repeatLimiter {
	return &repeatLimiter{out: out, clock: clock, period: period, held: map[string]*heldEntries{}}
}

// write writes p unless an entry with the same key was written in the
// current period; then it only counts it.
func (l *repeatLimiter) write(key string, p []byte, format lineFormat) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[key]; ok {
		h.count++
		h.last = append(h.last[:0], p...)
		h.format = format
		return len(p), nil
	}
	l.held[key] = &heldEntries{start: l.clock.Now()}
	if l.ticks != nil && !l.ticking {
		l.ticking = true
		go l.tick()
	}
	return l.writeLocked(p)
}

// writeThrough writes p as it is, in order with the limited entries.
func (l *repeatLimiter) writeThrough(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLocked(p)
}

func (l *repeatLimiter) writeLocked(p []byte) (int, error) {
	if _, err := l.out.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// endPeriods ends the periods that have lasted l.period: a key whose
// entries kept coming gets its count written and a new period; a key that
// had no more is forgotten, so that its next entry is written in full.
// It reports whether any key is still held.
func (l *repeatLimiter) endPeriods() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	for _, key := range l.sortedKeys() {
		h := l.held[key]
		if now.Sub(h.start) < l.period {
			continue
		}
		if h.count == 0 {
			delete(l.held, key)
			continue
		}
		l.writeCountLocked(h, now.Sub(h.start))
		h.start = now
	}
	if len(l.held) == 0 {
		l.ticking = false
	}
	return len(l.held) > 0
}

// flush writes the counts of every key now, e.g. before the process exits.
func (l *repeatLimiter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	for _, key := range l.sortedKeys() {
		if h := l.held[key]; h.count > 0 {
			l.writeCountLocked(h, now.Sub(h.start))
			h.start = now
		}
	}
}

func (l *repeatLimiter) writeCountLocked(h *heldEntries, period time.Duration) {
	// Nowhere to report a failing log stream but the stream itself.
	_, _ = l.writeLocked(h.format.repeated(h.last, h.count, period.Round(time.Second)))
	h.count, h.last = 0, nil
}

// sortedKeys orders the counts written together, for a stable log.
func (l *repeatLimiter) sortedKeys() []string {
	keys := make([]string, 0, len(l.held))
	for key := range l.held {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// tick ends periods every second for as long as entries are held: there
// is no goroutine while nothing repeats.
func (l *repeatLimiter) tick() {
	ticker := l.ticks.NewTicker(time.Second)
	defer ticker.Stop()
	for range ticker.C() {
		if !l.endPeriods() {
			return
		}
	}
}
