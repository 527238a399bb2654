package worker

import (
	"context"
	"time"
)

// spareStart is a worker process started ahead of need (Prestart) and not yet initialized.
type spareStart struct {
	done chan struct{} // closed once the launch is over
	w    *worker
	err  error
	at   time.Time
}

// Prestart starts one worker process now, without initializing it, so that the pool's next
// start only has to send initialize: the process start (a launcher, namespaces, the runtime's
// own start) is then off the path of the call that needs the worker. The worker runs nothing
// of the tool until then — which holds for a runtime whose worker is a script of the host's
// that loads the tool at initialize (Node, Bun), and not for a Go tool, whose binary is the
// tool: the host never prestarts those.
//
// It does nothing when the pool is closed or already has, or is starting, a worker. A
// spare no start has taken is stopped once it has waited IdleTimeout, and by Close.
func (p *Pool) Prestart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.spare != nil || len(p.workers)+p.starting > 0 {
		return
	}
	sp := &spareStart{done: make(chan struct{}), at: time.Now()}
	p.spare = sp
	p.startReaperLocked()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		sp.w, sp.err = p.launch()
		close(sp.done)
		if sp.err != nil {
			p.log.Warn("worker started ahead did not start", "err", sp.err)
		}
	}()
}

// takeSpare returns the worker Prestart started, once launched, when it is still running;
// nil sends the caller to start one of its own.
func (p *Pool) takeSpare(ctx context.Context) *worker {
	p.mu.Lock()
	sp := p.spare
	p.spare = nil
	p.mu.Unlock()
	if sp == nil {
		return nil
	}
	<-sp.done // launch returns once the process is started: not long
	if sp.err != nil || isDone(sp.w.exited) {
		return nil
	}
	if ctx.Err() != nil {
		p.stopSpare(sp)
		return nil
	}
	return sp.w
}

// dropSpareLocked takes the spare out of the pool when it has waited too long (idle is
// zero: whatever its age), and returns it for stopSpare; p.mu must be held.
func (p *Pool) dropSpareLocked(now time.Time, idle time.Duration) *spareStart {
	sp := p.spare
	if sp == nil || now.Sub(sp.at) < idle {
		return nil
	}
	p.spare = nil
	return sp
}

// stopSpare shuts a spare down (it was never initialized: shutdown is all it needs).
func (p *Pool) stopSpare(sp *spareStart) {
	<-sp.done
	if sp.err == nil {
		sp.w.stop(context.Background())
	}
}
