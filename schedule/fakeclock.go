package schedule

import (
	"sync"
	"time"
)

// FakeClock is a Clock that moves only when told (Set, Advance): tests run a schedule's
// occurrences without waiting for them.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters map[*fakeWaiter]struct{}
}

type fakeWaiter struct {
	at time.Time
	c  chan time.Time
}

var _ Clock = (*FakeClock)(nil)

// NewFakeClock is a clock standing at now.
func NewFakeClock(now time.Time) *FakeClock {
	return &FakeClock{now: now, waiters: map[*fakeWaiter]struct{}{}}
}

// Now is the time the clock was set to.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At fires once the clock is set to t or later.
func (c *FakeClock) At(t time.Time) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &fakeWaiter{at: t, c: make(chan time.Time, 1)}
	if !c.now.Before(t) {
		w.c <- c.now
		return w.c, func() {}
	}
	c.waiters[w] = struct{}{}
	return w.c, func() {
		c.mu.Lock()
		delete(c.waiters, w)
		c.mu.Unlock()
	}
}

// Advance moves the clock on by d.
func (c *FakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never back) and fires the waiters it reached.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	for w := range c.waiters {
		if !c.now.Before(w.at) {
			w.c <- c.now
			delete(c.waiters, w)
		}
	}
}
