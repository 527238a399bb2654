package worker

import (
	"context"
	"sync"
	"time"

	"github.com/jean2/jean2/internal/workerproto"
)

// call is one Execute in flight.
type call struct {
	id      string
	handler CallHandler
	params  workerproto.ExecuteParams // what is sent; kept here to be sent without a copy
	worker  *worker                   // set once dispatched; guarded by pool.mu
	// dispatched is when it went to its worker (since pool.epoch); guarded by pool.mu.
	dispatched int64
	ctx        context.Context
	cancel     context.CancelCauseFunc

	// The timeout clock. It runs while the call works and stands still while a request of
	// the call waits on a person, so a slow answer does not eat the tool's time.
	mu        sync.Mutex
	timer     *time.Timer
	remaining time.Duration // left when the clock last stopped
	since     time.Time     // when the clock last started
	paused    int           // requests waiting on a person
	fired     bool
	stopped   bool
	expired   chan struct{} // closed when the time is up; nil without a timeout
}

func (c *call) startClock(timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A call sent on to another worker starts over.
	c.fired, c.stopped = false, false
	c.expired = make(chan struct{})
	c.remaining = timeout
	c.since = time.Now()
	c.timer = time.AfterFunc(timeout, c.expire)
}

func (c *call) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused > 0 || c.fired || c.stopped {
		return
	}
	c.fired = true
	close(c.expired)
}

func (c *call) pauseClock() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused++
	if c.paused > 1 || c.timer == nil || c.fired || c.stopped {
		return
	}
	if c.timer.Stop() {
		c.remaining -= time.Since(c.since)
	} else {
		// The timer went off and found the clock paused; whatever is left is nothing.
		c.remaining = 0
	}
}

func (c *call) resumeClock() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused--; c.paused < 0 {
		c.paused = 0 // a request of an earlier attempt, on a worker the call left
	}
	if c.paused > 0 || c.timer == nil || c.fired || c.stopped {
		return
	}
	if c.remaining < 0 {
		c.remaining = 0
	}
	c.since = time.Now()
	c.timer.Reset(c.remaining)
}

func (c *call) stopClock() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
	}
}
