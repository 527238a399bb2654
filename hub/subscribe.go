package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jean2/jean2/store"
)

// replayPage is how many stored events one read of a catch-up fetches.
const replayPage = 500

// outBuffer lets the pump run a little ahead of a reader that takes events one at a time.
const outBuffer = 32

// Subscription is one client's view of a session's log: the stored events after the seq it
// asked for, then the live ones, in seq order with no gap and no duplicate.
type Subscription struct {
	hub     *Hub
	session *session
	after   int64

	out    chan store.Event
	ctx    context.Context // ends the pump; its cause is why the subscription ended
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the pump has exited

	// live holds events Publish handed over; its capacity is the subscriber buffer.
	live chan store.Event
	// poke says the store may hold events no Publish here handed over (Hub.Poke).
	poke chan struct{}

	mu         sync.Mutex
	caughtUp   bool // the replay reached the live events: an overflow now means a slow reader
	overflowed bool // during replay the live buffer overflowed: read the store again
	err        error
}

// Subscribe returns a subscription to the session's events with Seq above afterSeq: first
// those already stored, read page by page, then the live ones as they are published. It
// ends when ctx is cancelled, on Close, on Hub.Close, or with ErrSlowSubscriber when its
// reader falls more than the subscriber buffer behind the live events; the client then
// subscribes again after the last seq it received. Session "" is the server's own log.
func (h *Hub) Subscribe(ctx context.Context, sessionID string, afterSeq int64) (*Subscription, error) {
	if h.store == nil {
		return nil, errNoStore
	}
	if afterSeq < 0 {
		return nil, fmt.Errorf("subscribe to session %q: afterSeq %d is negative; use 0 for the whole log", sessionID, afterSeq)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe to session %q: %w", sessionID, err)
	}
	subCtx, cancel := context.WithCancelCause(ctx)
	sub := &Subscription{
		hub: h, after: afterSeq,
		out: make(chan store.Event, outBuffer),
		ctx: subCtx, cancel: cancel,
		done: make(chan struct{}),
		live: make(chan store.Event, h.subBuffer),
		poke: make(chan struct{}, 1),
	}
	// Registered under h.mu so that Close, which ends the subscriptions it finds under it,
	// cannot miss this one; and before the replay starts, so that an event is either
	// committed before this point (the replay reads it) or handed to sub.live (or both; the
	// pump drops duplicates).
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		cancel(ErrClosed)
		return nil, fmt.Errorf("subscribe to session %q: %w", sessionID, ErrClosed)
	}
	s := h.sessions[sessionID]
	if s == nil {
		s = newSession(sessionID)
		h.sessions[sessionID] = s
	}
	s.users++ // released by the pump when the subscription ends
	sub.session = s
	s.mu.Lock()
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	h.subs.Add(1)
	h.mu.Unlock()
	go sub.pump()
	return sub, nil
}

// Events delivers the subscription's events in seq order; it is closed when the
// subscription ends (see Err).
func (s *Subscription) Events() <-chan store.Event { return s.out }

// Err says why the subscription ended (ErrSlowSubscriber, ErrClosed, the context's error or
// a store failure); nil while it runs.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription with ErrClosed and waits until its goroutine is gone.
func (s *Subscription) Close() {
	s.end(ErrClosed)
	<-s.done
}

// end stops the pump with err as the reason; the first reason wins.
func (s *Subscription) end(err error) { s.cancel(err) }

// offer hands published events to the subscription without ever blocking Publish.
func (s *Subscription) offer(evs []store.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.overflowed || s.ctx.Err() != nil {
		return
	}
	for _, ev := range evs {
		select {
		case s.live <- ev:
		default:
			if s.caughtUp {
				s.cancel(ErrSlowSubscriber)
				return
			}
			// Still replaying: the events are in the store, so the pump reads them from
			// there rather than the reader being dropped for being behind by design.
			s.overflowed = true
			return
		}
	}
}

// pump delivers the replay and then the live events until the subscription ends.
func (s *Subscription) pump() {
	defer s.hub.subs.Done()
	defer close(s.done)
	err := s.run()
	s.cancel(err)
	s.session.mu.Lock()
	delete(s.session.subs, s)
	s.session.mu.Unlock()
	s.hub.release(s.session)
	cause := context.Cause(s.ctx)
	switch {
	case errors.Is(cause, ErrSlowSubscriber):
		s.hub.log.Info("slow subscriber dropped", "session", s.session.id, "buffer", cap(s.live))
	case !errorsIsEnd(cause):
		s.hub.log.Warn("subscription ended", "session", s.session.id, "err", cause)
	}
	s.mu.Lock()
	s.err = cause
	s.mu.Unlock()
	close(s.out)
}

// run returns why delivery stopped.
func (s *Subscription) run() error {
	last := s.after
	for {
		var err error
		if last, err = s.replay(last); err != nil {
			return err
		}
		s.mu.Lock()
		if s.overflowed {
			// Events were missed from the live buffer while replaying. Whatever is in the
			// buffer now is also in the store (events are committed before they are
			// offered), so drop it and read the store again.
			s.overflowed = false
			s.mu.Unlock()
			s.drainLive()
			continue
		}
		s.caughtUp = true
		s.mu.Unlock()
		break
	}
	for {
		select {
		case <-s.ctx.Done():
			return context.Cause(s.ctx)
		case <-s.poke:
			var err error
			if last, err = s.replay(last); err != nil {
				return err
			}
		case ev := <-s.live:
			if ev.Seq <= last {
				continue // read by the replay already
			}
			if ev.Seq > last+1 {
				// Not expected (Publish hands events over in order), but a gap must never
				// reach a client: fill it from the store.
				var err error
				if last, err = s.replayUpTo(last, ev.Seq-1); err != nil {
					return err
				}
			}
			if err := s.send(ev); err != nil {
				return err
			}
			last = ev.Seq
		}
	}
}

// replay sends the stored events after last and returns the last seq sent.
func (s *Subscription) replay(last int64) (int64, error) {
	return s.replayUpTo(last, -1)
}

// replayUpTo sends the stored events after last up to through (all of them when through is
// negative) and returns the last seq sent.
func (s *Subscription) replayUpTo(last, through int64) (int64, error) {
	for {
		page, err := s.hub.store.EventsAfter(s.ctx, s.session.id, last, replayPage)
		if err != nil {
			if cause := context.Cause(s.ctx); cause != nil {
				return last, cause
			}
			return last, fmt.Errorf("replay events of session %q after %d: %w", s.session.id, last, err)
		}
		for _, ev := range page {
			if through >= 0 && ev.Seq > through {
				return last, nil
			}
			if err := s.send(ev); err != nil {
				return last, err
			}
			last = ev.Seq
		}
		if len(page) < replayPage {
			return last, nil
		}
	}
}

func (s *Subscription) send(ev store.Event) error {
	select {
	case s.out <- ev:
		return nil
	case <-s.ctx.Done():
		return context.Cause(s.ctx)
	}
}

func (s *Subscription) drainLive() {
	for {
		select {
		case <-s.live:
		default:
			return
		}
	}
}

// errorsIsEnd reports whether err is one of the ordinary ends of a subscription.
func errorsIsEnd(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
