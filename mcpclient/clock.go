package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/tool"
)

// errCallTimedOut is the cause of a call context ended by its clock.
var errCallTimedOut = errors.New("the call's timeout ran out")

// callClock is a call's timeout that stops while a person is asked something (a server's
// form, a page to open, leave to sample the model): people are not timed out, only the
// server's own work is. When it runs out it calls expire.
type callClock struct {
	mu        sync.Mutex
	timer     *time.Timer
	remaining time.Duration
	since     time.Time
	paused    int
	done      bool
}

func startCallClock(timeout time.Duration, expire func()) *callClock {
	c := &callClock{remaining: timeout, since: time.Now()}
	c.timer = time.AfterFunc(timeout, func() {
		c.mu.Lock()
		fire := c.paused == 0 && !c.done
		c.done = c.done || fire
		c.mu.Unlock()
		if fire {
			expire()
		}
	})
	return c
}

func (c *callClock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused++; c.paused > 1 || c.done {
		return
	}
	if c.timer.Stop() {
		c.remaining -= time.Since(c.since)
	} else {
		c.remaining = 0 // it went off and found the clock paused
	}
}

func (c *callClock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused--; c.paused > 0 || c.done {
		return
	}
	c.since = time.Now()
	c.timer.Reset(max(c.remaining, 0))
}

func (c *callClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	c.timer.Stop()
}

// callAsker asks through the call's own asker with the clock stopped, and withdraws the ask
// when the call ends (stopped, timed out, failed): the server's request may outlive the
// call, and a form nobody waits for must not stay on a person's screen.
type callAsker struct {
	tool.Asker
	clock *callClock
	call  context.Context
	// pending counts the call's asks waiting for an answer (pendingAsks).
	pending *atomic.Int64
}

var _ tool.Asker = callAsker{}

func (a callAsker) Ask(ctx context.Context, q tool.Ask) (json.RawMessage, error) {
	done, err := pendingAsk(a.pending)
	if err != nil {
		return nil, err
	}
	defer done()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(a.call, func() { cancel(context.Cause(a.call)) })
	defer stop()
	a.clock.pause()
	defer a.clock.resume()
	return a.Asker.Ask(ctx, q)
}
