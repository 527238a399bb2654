package harness

import (
	"context"
	"errors"
	"fmt"

	"github.com/jean2/jean2/store"
)

// Leaser claims a session across instances that share one database (cluster.Node): a turn,
// a restore or a compaction holds the session's lease while it runs, so no other instance
// starts one meanwhile. nil (one instance) claims sessions in memory only, as always.
type Leaser interface {
	// AcquireLease claims the session for this instance; an error wrapping store.ErrLeased
	// says another instance holds it (and which, as a *store.LeaseHeldError).
	AcquireLease(ctx context.Context, sessionID string) (Lease, error)
	// Leased lists the sessions other live instances run turns in: the sealing at start
	// must leave them alone.
	Leased(ctx context.Context) (map[string]bool, error)
}

// Lease is a held claim on a session.
type Lease interface {
	// Lost is closed when the lease was taken over (this instance failed to renew it in
	// time and another sealed the turn): the turn must stop writing.
	Lost() <-chan struct{}
	// Release gives the lease back.
	Release()
	// ReleaseIn gives the lease back within tx, which stores the turn's end: another
	// instance may start a turn as soon as a client hears turn.finished.
	ReleaseIn(ctx context.Context, tx *store.Tx) error
	// Fence is the first write of every transaction of the lease's turn: it fails
	// (wrapping store.ErrLeaseLost, and Lost is closed) when the lease is no longer this
	// acquisition's, so that nothing of the transaction is stored.
	Fence(ctx context.Context, tx *store.Tx) error
}

// releaseLeaseIn gives the session's lease back within tx, when the harness holds one.
func (h *Harness) releaseLeaseIn(ctx context.Context, tx *store.Tx, sessionID string) error {
	h.mu.Lock()
	l := h.leases[sessionID]
	h.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.ReleaseIn(ctx, tx)
}

// errLeaseLost ends a turn whose lease another instance took over; it is sealed
// "interrupted", as the other instance seals it.
var errLeaseLost = errors.New("another instance took over the session: this instance failed to renew its turn lease in time")

// claimLease takes the session's lease for a reservation reserve just made, or undoes the
// reservation and returns why not.
func (h *Harness) claimLease(ctx context.Context, sessionID string) error {
	if h.opts.Leases == nil {
		return nil
	}
	l, err := h.opts.Leases.AcquireLease(ctx, sessionID)
	if err != nil {
		h.mu.Lock()
		if t, ok := h.busy[sessionID]; ok && t == nil {
			delete(h.busy, sessionID)
		}
		h.mu.Unlock()
		if errors.Is(err, store.ErrLeased) {
			return fmt.Errorf("%w: %w", ErrBusy, err)
		}
		return fmt.Errorf("session %s: claim it for this instance: %w", sessionID, err)
	}
	h.mu.Lock()
	h.leases[sessionID] = l
	h.mu.Unlock()
	return nil
}

// watchLease stops t when its session's lease is lost.
func (h *Harness) watchLease(sessionID string, t *turn) {
	h.mu.Lock()
	l := h.leases[sessionID]
	h.mu.Unlock()
	if l == nil {
		return
	}
	go func() {
		select {
		case <-l.Lost():
			h.log.Error("the turn's lease was taken over by another instance; stopping the turn", "session", sessionID, "turn", t.id)
			t.cancel(errLeaseLost)
		case <-t.done:
		}
	}()
}

// RecoverSession seals what an instance that died left unfinished in one session: its
// streaming messages and parts, its open turn (turn.finished, reason "interrupted"), as a
// restarted server seals its own (see recover). The cluster's reaper calls it once it holds
// the lease a dead instance let expire. ErrBusy when this harness has the session claimed.
func (h *Harness) RecoverSession(ctx context.Context, sessionID string) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	if _, ok := h.busy[sessionID]; ok {
		h.mu.Unlock()
		return fmt.Errorf("session %s: %w", sessionID, ErrBusy)
	}
	h.busy[sessionID] = nil
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if t, ok := h.busy[sessionID]; ok && t == nil {
			delete(h.busy, sessionID)
		}
		h.mu.Unlock()
	}()
	unfinished, err := h.opts.Store.UnfinishedMessages(ctx)
	if err != nil {
		return fmt.Errorf("recover session %s: %w", sessionID, err)
	}
	open, err := h.opts.Store.OpenTurns(ctx)
	if err != nil {
		return fmt.Errorf("recover session %s: %w", sessionID, err)
	}
	var msgs []store.Message
	for _, m := range unfinished {
		if m.SessionID == sessionID {
			msgs = append(msgs, m)
		}
	}
	var turn *store.OpenTurn
	for i := range open {
		if open[i].SessionID == sessionID {
			turn = &open[i]
		}
	}
	// Its transcript kept between turns is not what the store now says.
	h.hist.take(sessionID)
	return h.recoverSession(ctx, sessionID, msgs, turn)
}
