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
	module  *Module
	handler CallHandler
	params  workerproto.ExecuteParams // what is sent; kept here to be sent without a copy
	worker  *worker                   // set once dispatched; guarded by pool.mu
	// dispatched is when it went to its worker (since pool.epoch); guarded by pool.mu.
	dispatched int64
	parent     context.Context // the caller's

	// halt is closed when the call must end: its time is up (fired) or it was stopped
	// (stopCause).
	halt chan struct{}

	mu sync.Mutex
	// The context the call's requests are served with, made on first use: most calls make
	// none. It ends when the call settles or the caller's context ends.
	ctx       context.Context
	cancel    context.CancelCauseFunc
	settled   bool
	stopCause error

	// The timeout clock. It runs while the call works and stands still while a request of
	// the call waits on a person, so a slow answer does not eat the tool's time.
	timer     *time.Timer
	remaining time.Duration // left when the clock last stopped
	since     time.Time     // when the clock last started
	paused    int           // requests waiting on a person
	fired     bool
	stopped   bool
	halted    bool // halt is closed
}

// handlerContext returns the context the call's requests are served with.
func (c *call) handlerContext() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancelCause(c.parent)
		switch {
		case c.stopCause != nil:
			c.cancel(c.stopCause)
		case c.settled:
			c.cancel(errCallSettled)
		}
	}
	return c.ctx
}

// settle ends the context of the call's requests.
func (c *call) settle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled = true
	if c.cancel != nil {
		c.cancel(errCallSettled)
	}
}

// Stop ends the call with cause, as if its caller's context had ended with it (see
// StopBinder).
func (c *call) Stop(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopCause == nil && !c.fired {
		c.stopCause = cause
		c.haltLocked()
		if c.cancel != nil {
			c.cancel(cause) // requests of the call being served end now too
		}
	}
}

// stopped returns why the call was stopped, nil when it ran out of time instead.
func (c *call) stoppedBy() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopCause
}

func (c *call) haltLocked() {
	if !c.halted {
		c.halted = true
		close(c.halt)
	}
}

func (c *call) startClock(timeout time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.halt == nil {
		c.halt = make(chan struct{})
	}
	if timeout <= 0 {
		return
	}
	// A call sent on to another worker starts over.
	c.fired, c.stopped = false, false
	c.remaining = timeout
	c.since = time.Now()
	c.timer = time.AfterFunc(timeout, c.expire)
}

func (c *call) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused > 0 || c.fired || c.stopped || c.stopCause != nil {
		return
	}
	c.fired = true
	c.haltLocked()
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
