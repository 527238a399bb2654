package cluster

import (
	"context"
	"slices"
	"time"
)

// feedLoop brings the events other instances write to this instance's subscribers, runs
// the commands sent to this instance, and keeps the record of the sessions it has clients
// attached to. It reads the store every poll, and at once when a notification wakes it.
func (n *Node) feedLoop(ctx context.Context) {
	f := feed{seen: map[string]int64{}}
	if n.serverAfter != nil {
		f.serverSeq = *n.serverAfter
	} else if n.serverEvents != nil {
		last, err := n.db.LastEventSeq(ctx, "")
		if err != nil {
			n.log.Warn("read the server log's last event; following it from its start", "error", err)
		}
		f.serverSeq = last
	}
	t := time.NewTicker(n.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			n.forget()
			return
		case sid := <-n.wakeEvents:
			// Notified: the session's log grew. Its subscriptions read it themselves.
			n.events.Poke(sid)
			if sid == "" {
				n.followServer(ctx, &f)
			}
		case <-n.wakeCommands:
			n.runCommands(ctx)
		case <-t.C:
			n.pollEvents(ctx, &f)
			n.followServer(ctx, &f)
			n.runCommands(ctx)
		}
	}
}

// feed is what the feed loop remembers between polls.
type feed struct {
	seen      map[string]int64 // watched session → the last seq of its log at the last poll
	watched   []string         // the sessions last recorded as watched
	recorded  time.Time        // when they were
	recordErr bool
	serverSeq int64 // the last event of the server log handed to Options.ServerEvents
}

// followServer hands the server log's new events to Options.ServerEvents.
func (n *Node) followServer(ctx context.Context, f *feed) {
	if n.serverEvents == nil {
		return
	}
	for {
		evs, err := n.db.EventsAfter(ctx, "", f.serverSeq, 500)
		if err != nil {
			if ctx.Err() == nil {
				n.log.Warn("read the server log", "after", f.serverSeq, "error", err)
			}
			return
		}
		if len(evs) == 0 {
			return
		}
		n.serverEvents(ctx, evs)
		f.serverSeq = evs[len(evs)-1].Seq
		if len(evs) < 500 {
			return
		}
	}
}

// pollEvents pokes the subscriptions of each watched session whose log grew since the last
// poll, or that was not watched then (its subscription may have caught up before another
// instance's last commit). A subscription reads the store after the last event it sent, so
// a poke too many costs one read and a poke is never needed twice.
func (n *Node) pollEvents(ctx context.Context, f *feed) {
	// Under watchMu, so that an Attach after a subscription began is never undone by a
	// record made from a list read before it.
	n.watchMu.Lock()
	watched := n.events.Subscribed()
	slices.Sort(watched)
	if !slices.Equal(watched, f.watched) || time.Since(f.recorded) > n.ttl/3 || f.recordErr {
		err := n.db.SetWatched(ctx, n.id, watched, n.ttl)
		f.recordErr = err != nil
		if err != nil && ctx.Err() == nil {
			n.log.Warn("record the sessions with clients attached here", "error", err)
		}
		f.watched, f.recorded = watched, time.Now()
	}
	n.watchMu.Unlock()
	for sid := range f.seen {
		if _, ok := slices.BinarySearch(watched, sid); !ok {
			delete(f.seen, sid)
		}
	}
	if len(watched) == 0 {
		return
	}
	lasts, err := n.db.LastEventSeqs(ctx, watched)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("read the last events of the watched sessions", "sessions", len(watched), "error", err)
		}
		return
	}
	for _, sid := range watched {
		last := lasts[sid]
		if prev, ok := f.seen[sid]; !ok || prev != last {
			f.seen[sid] = last
			n.events.Poke(sid)
		}
	}
}

// Attach records at once that a client subscribed to the session here (the feed's own
// record follows within a poll): an ask another instance makes from now on waits for it
// rather than going to the unattended policy.
func (n *Node) Attach(ctx context.Context, sessionID string) {
	n.watchMu.Lock()
	defer n.watchMu.Unlock()
	if err := n.db.AddWatched(ctx, n.id, sessionID, n.ttl); err != nil {
		n.log.Warn("record a client attached here", "session", sessionID, "error", err)
	}
}

// forget drops this instance's watch records as it stops, so asks go to the policy at
// once rather than after the records expire.
func (n *Node) forget() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.db.SetWatched(ctx, n.id, nil, n.ttl); err != nil {
		n.log.Warn("drop the records of the sessions watched here", "error", err)
	}
}

// AttachedElsewhere reports whether another instance has a client of the session attached
// (hub.Options.AttachedElsewhere). A failure to read says no: the ask goes to the policy,
// which is what a lone instance does.
func (n *Node) AttachedElsewhere(sessionID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := n.db.WatchedElsewhere(ctx, sessionID, n.id)
	if err != nil {
		n.log.Warn("who watches a session elsewhere", "session", sessionID, "error", err)
	}
	return ok
}
