package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/store"
)

var _ harness.Leaser = (*Node)(nil)

// lease is a lease this instance's harness holds.
type lease struct {
	n     *Node
	sid   string
	epoch string // the acquisition's own value, which every write of its turn checks
	lost  chan struct{}
	once  sync.Once
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

// Release drops the lease, unless it was lost already (it is another instance's then).
func (l *lease) Release() {
	n := l.n
	n.mu.Lock()
	mine := n.held[l.sid] == l
	if mine {
		delete(n.held, l.sid)
	}
	n.mu.Unlock()
	if !mine {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.db.ReleaseLease(ctx, l.sid, n.id); err != nil {
		// It expires on its own; another instance's reaper finds nothing to seal then.
		n.log.Warn("release a turn lease", "session", l.sid, "error", err)
	}
}

// ReleaseIn drops the lease within tx (harness.Lease). The heartbeat stops renewing it at
// once; should tx not commit, the lease expires and the reaper seals the session, whose end
// was not stored.
func (l *lease) ReleaseIn(ctx context.Context, tx *store.Tx) error {
	if err := tx.ReleaseLease(ctx, l.sid, l.n.id); err != nil {
		return err
	}
	n := l.n
	n.mu.Lock()
	if n.held[l.sid] == l {
		delete(n.held, l.sid)
	}
	n.mu.Unlock()
	return nil
}

// Fence checks within tx that the lease is still this acquisition's (harness.Lease): a
// lease lost is marked so, which stops its turn, and tx must not commit.
func (l *lease) Fence(ctx context.Context, tx *store.Tx) error {
	err := tx.FenceLease(ctx, l.sid, l.n.id, l.epoch)
	if errors.Is(err, store.ErrLeaseLost) {
		n := l.n
		n.mu.Lock()
		if n.held[l.sid] == l {
			delete(n.held, l.sid)
		}
		n.mu.Unlock()
		n.log.Error("a write of a turn was refused: its lease was taken over by another instance", "session", l.sid, "epoch", l.epoch)
		l.markLost()
	}
	return err
}

func (l *lease) markLost() { l.once.Do(func() { close(l.lost) }) }

// AcquireLease claims the session for a turn (or a restore, a compaction) on this instance:
// harness.Leaser.
func (n *Node) AcquireLease(ctx context.Context, sessionID string) (harness.Lease, error) {
	got, err := n.db.AcquireLease(ctx, sessionID, n.id, "", n.ttl)
	if err != nil {
		return nil, err
	}
	l := &lease{n: n, sid: sessionID, epoch: got.Epoch, lost: make(chan struct{})}
	n.mu.Lock()
	if prev := n.held[sessionID]; prev != nil {
		prev.markLost() // not expected: the harness claims a session once at a time
	}
	n.held[sessionID] = l
	n.mu.Unlock()
	return l, nil
}

// Leased lists the sessions other live instances hold: harness.Leaser.
func (n *Node) Leased(ctx context.Context) (map[string]bool, error) {
	ls, err := n.db.LiveLeases(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, l := range ls {
		if l.InstanceID != n.id && (n.previous == "" || l.InstanceID != n.previous) {
			out[l.SessionID] = true
		}
	}
	return out, nil
}

// Holder returns the live lease of the session held by another instance, if any.
func (n *Node) Holder(ctx context.Context, sessionID string) (store.Lease, bool, error) {
	l, err := n.db.LeaseOf(ctx, sessionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Lease{}, false, nil
	case err != nil:
		return store.Lease{}, false, err
	}
	if l.InstanceID == n.id || l.ExpiresAt.Before(time.Now()) {
		return l, false, nil
	}
	return l, true, nil
}

// heartbeatLoop renews the held leases every third of their life; a lease it finds taken
// over is lost (its turn stops).
func (n *Node) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(n.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.heartbeat(ctx)
		}
	}
}

func (n *Node) heartbeat(ctx context.Context) {
	n.mu.Lock()
	sessions := make([]string, 0, len(n.held))
	for sid := range n.held {
		sessions = append(sessions, sid)
	}
	n.mu.Unlock()
	if len(sessions) == 0 {
		return
	}
	lost, err := n.db.RenewLeases(ctx, n.id, sessions, n.ttl)
	if err != nil {
		n.log.Warn("renew turn leases", "sessions", len(sessions), "error", err)
	}
	for _, sid := range lost {
		n.mu.Lock()
		l := n.held[sid]
		if l != nil {
			delete(n.held, sid)
		}
		n.mu.Unlock()
		if l != nil {
			n.log.Error("a turn lease was taken over by another instance", "session", sid)
			l.markLost()
		}
	}
}

// reaperLoop seals the turns of instances that stopped renewing their leases, and prunes
// old commands.
func (n *Node) reaperLoop(ctx context.Context) {
	t := time.NewTicker(n.ttl / 3)
	defer t.Stop()
	for {
		n.reap(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reap seals every session whose lease expired and returns how many it sealed.
func (n *Node) reap(ctx context.Context) int {
	expired, err := n.db.ExpiredLeases(ctx, time.Now())
	if err != nil {
		n.log.Warn("list expired turn leases", "error", err)
		return 0
	}
	sealed := 0
	for _, l := range expired {
		n.mu.Lock()
		_, mine := n.held[l.SessionID]
		n.mu.Unlock()
		if mine {
			continue // late renewal of this instance's own turn: the heartbeat renews it
		}
		// Taking the lease listed is the claim: of several reapers, one wins, and one that
		// comes after the winner released it takes nothing (not a fresh lease: a second
		// seal). It is taken under an
		// owner of its own, so a turn this instance starts meanwhile is refused (409) rather
		// than sharing it, and the release below cannot drop that turn's lease.
		if _, err := n.db.TakeExpiredLease(ctx, l, n.reaperID(), n.ttl); err != nil {
			if !errors.Is(err, store.ErrLeased) && !errors.Is(err, store.ErrNotFound) {
				n.log.Warn("claim an expired turn lease", "session", l.SessionID, "dead", l.InstanceID, "error", err)
			}
			continue
		}
		err := n.turns.RecoverSession(ctx, l.SessionID)
		if err != nil {
			n.log.Error("seal the turn of an instance that stopped", "session", l.SessionID, "dead", l.InstanceID, "error", err)
		} else {
			sealed++
			n.log.Info("sealed the turn of an instance that stopped renewing its lease", "session", l.SessionID, "dead", l.InstanceID,
				"expired", l.ExpiresAt)
		}
		if err := n.db.ReleaseLease(context.WithoutCancel(ctx), l.SessionID, n.reaperID()); err != nil {
			n.log.Warn("release a sealed session's lease", "session", l.SessionID, "error", err)
		}
	}
	if _, err := n.db.PruneCommands(ctx, time.Now().Add(-time.Hour)); err != nil {
		n.log.Warn("prune old cluster commands", "error", err)
	}
	return sealed
}

// reaperID owns the leases the reaper takes to seal a dead instance's turn.
func (n *Node) reaperID() string { return n.id + "/reaper" }
