package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/store"
)

// waitLimit bounds how long a test waits for something that should happen at once; it only
// turns a hang into a failure.
const waitLimit = 20 * time.Second

type fixture struct {
	t   testing.TB
	db  *store.DB
	hub *Hub
	sid string // a session that exists in the store
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "jean2.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ws, err := db.CreateWorkspace(ctx, store.Workspace{Name: "ws", Path: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, store.Session{WorkspaceID: ws.ID, Title: "test"})
	if err != nil {
		t.Fatal(err)
	}
	opts.Store = db
	h := New(opts)
	t.Cleanup(h.Close)
	return &fixture{t: t, db: db, hub: h, sid: s.ID}
}

// publishN publishes n events of type "n" one call each, with payload {"n":i}.
func (f *fixture) publishN(sid string, from, n int) {
	f.t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := f.hub.Publish(context.Background(), sid, numbered(i)); err != nil {
			f.t.Fatal(err)
		}
	}
}

func numbered(i int) store.NewEvent {
	return store.NewEvent{Type: "n", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
}

// receive reads n events from sub, failing when the subscription ends first or nothing
// comes for waitLimit.
func receive(t testing.TB, sub *Subscription, n int) []store.Event {
	t.Helper()
	out := make([]store.Event, 0, n)
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	for len(out) < n {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				t.Fatalf("subscription ended after %d of %d events: %v", len(out), n, sub.Err())
			}
			out = append(out, ev)
		case <-timer.C:
			t.Fatalf("got %d of %d events, then nothing", len(out), n)
		}
	}
	return out
}

// waitEnd drains sub until its channel closes and returns the events read and Err.
func waitEnd(t testing.TB, sub *Subscription) ([]store.Event, error) {
	t.Helper()
	var out []store.Event
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				return out, sub.Err()
			}
			out = append(out, ev)
		case <-timer.C:
			t.Fatal("the subscription did not end")
		}
	}
}

// checkRun fails unless evs are exactly the seqs from, from+1, … with no gap or duplicate.
func checkRun(t testing.TB, name string, evs []store.Event, from int64) {
	t.Helper()
	for i, ev := range evs {
		if want := from + int64(i); ev.Seq != want {
			t.Fatalf("%s: event %d has seq %d, want %d (gap or duplicate)", name, i, ev.Seq, want)
		}
	}
}

// Concurrent publishers, one subscriber from the start, others joining mid-stream from 0 and
// from a seq in the middle: each sees every event after its seq, in order, exactly once, with
// the payloads the store holds.
func TestReplayAndLiveWithoutGapsUnderConcurrentPublishers(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.publishN(f.sid, 0, 20)

	first, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	const publishers, calls = 4, 40
	total := int64(20)
	var wg sync.WaitGroup
	started := make(chan struct{})
	for p := range publishers {
		wg.Go(func() {
			<-started
			for i := range calls {
				// Batches of 1–3 events, each batch one transaction.
				batch := []store.NewEvent{numbered(p*1000 + i)}
				for range i % 3 {
					batch = append(batch, numbered(p*1000+i))
				}
				if _, err := f.hub.Publish(ctx, f.sid, batch...); err != nil {
					t.Error(err)
					return
				}
			}
		})
		for i := range calls {
			total += int64(1 + i%3)
		}
	}
	close(started)

	// Join while the publishers run: once some events are in, from 0 and from the middle.
	var joinFrom0, joinMid *Subscription
	var midSeq int64
	for joinFrom0 == nil {
		last, err := f.db.LastEventSeq(ctx, f.sid)
		if err != nil {
			t.Fatal(err)
		}
		if last >= 40 {
			midSeq = last / 2
			if joinFrom0, err = f.hub.Subscribe(ctx, f.sid, 0); err != nil {
				t.Fatal(err)
			}
			if joinMid, err = f.hub.Subscribe(ctx, f.sid, midSeq); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	if n := f.hub.Attached(f.sid); n != 3 {
		t.Fatalf("Attached = %d, want 3", n)
	}
	wg.Wait()
	if total <= midSeq+20 {
		t.Fatalf("the subscribers joined too late to test anything: mid %d of %d", midSeq, total)
	}

	stored, err := f.db.EventsAfter(ctx, f.sid, 0, 0)
	if err != nil || int64(len(stored)) != total {
		t.Fatalf("store holds %d events (%v), want %d", len(stored), err, total)
	}
	for name, c := range map[string]struct {
		sub  *Subscription
		from int64
	}{"from start": {first, 1}, "joined from 0": {joinFrom0, 1}, "joined mid-stream": {joinMid, midSeq + 1}} {
		evs := receive(t, c.sub, int(total-c.from+1))
		checkRun(t, name, evs, c.from)
		for i, ev := range evs {
			want := stored[c.from-1+int64(i)]
			if ev.Type != want.Type || string(ev.Payload) != string(want.Payload) || ev.SessionID != f.sid {
				t.Fatalf("%s: event %d = %+v, the store has %+v", name, ev.Seq, ev, want)
			}
		}
		select {
		case ev := <-c.sub.Events():
			t.Fatalf("%s: an extra event %+v", name, ev)
		default:
		}
	}
}

// A subscriber that stops reading is dropped with ErrSlowSubscriber; Publish never waits for
// it, the other subscriber gets everything, and the dropped one catches up by subscribing
// again after the last seq it saw.
func TestSlowSubscriberDroppedOthersUnaffected(t *testing.T) {
	f := newFixture(t, Options{SubscriberBuffer: 4})
	ctx := context.Background()
	slow, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, slow)
	waitCaughtUp(t, fast)

	const n = 100
	// The publisher goes in step with the fast reader (so that one is never behind by more
	// than an event) and never waits for the slow one: it would hang here if Publish did.
	read := make(chan struct{})
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range n {
			if _, err := f.hub.Publish(ctx, f.sid, numbered(i)); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-read:
			case <-time.After(waitLimit):
				t.Error("the fast reader stopped reading")
				return
			}
		}
	}()
	var fastGot []store.Event
	for range n {
		fastGot = append(fastGot, receive(t, fast, 1)...)
		read <- struct{}{}
	}
	checkRun(t, "fast", fastGot, 1)
	<-published
	got, err := waitEnd(t, slow)
	if !errors.Is(err, ErrSlowSubscriber) {
		t.Fatalf("slow subscriber ended with %v, want ErrSlowSubscriber", err)
	}
	if len(got) == 0 || len(got) >= n {
		t.Fatalf("slow subscriber read %d events before it was dropped", len(got))
	}
	checkRun(t, "slow before the drop", got, 1)
	if a := f.hub.Attached(f.sid); a != 1 {
		t.Fatalf("Attached = %d after the drop, want 1", a)
	}

	last := got[len(got)-1].Seq
	again, err := f.hub.Subscribe(ctx, f.sid, last)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	checkRun(t, "reconnected", receive(t, again, int(n-last)), last+1)
}

// waitCaughtUp waits until the subscription's replay is done, so that an overflow of its
// buffer counts as a slow reader.
func waitCaughtUp(t testing.TB, sub *Subscription) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		sub.mu.Lock()
		ok := sub.caughtUp
		sub.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the subscription never finished its replay")
		}
		time.Sleep(time.Millisecond)
	}
}

// While a subscription replays a long log it is behind by design: live events overflowing
// its buffer then are read from the store instead of dropping it.
func TestOverflowDuringReplayIsReadFromTheStore(t *testing.T) {
	f := newFixture(t, Options{SubscriberBuffer: 4})
	ctx := context.Background()
	batch := make([]store.NewEvent, 200)
	for i := range batch {
		batch[i] = numbered(i)
	}
	if _, err := f.hub.Publish(ctx, f.sid, batch...); err != nil {
		t.Fatal(err)
	}
	sub, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Nobody reads yet: the pump is stuck in the replay (200 stored events, a 32-event
	// channel), so these 20 overflow the 4-event live buffer.
	f.publishN(f.sid, 200, 20)
	sub.mu.Lock()
	overflowed, caughtUp := sub.overflowed, sub.caughtUp
	sub.mu.Unlock()
	if !overflowed || caughtUp {
		t.Fatalf("the test did not overflow a replaying subscription (overflowed %v, caught up %v)", overflowed, caughtUp)
	}
	checkRun(t, "replaying", receive(t, sub, 220), 1)
	f.publishN(f.sid, 220, 5)
	checkRun(t, "live after", receive(t, sub, 5), 221)
	if err := sub.Err(); err != nil {
		t.Fatalf("the subscription ended: %v", err)
	}
}

// A late subscriber catches up over more than one page of the store, then goes on live.
func TestLateSubscriberCatchesUp(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	for b := range 12 {
		batch := make([]store.NewEvent, 100)
		for i := range batch {
			batch[i] = numbered(b*100 + i)
		}
		if _, err := f.hub.Publish(ctx, f.sid, batch...); err != nil {
			t.Fatal(err)
		}
	}
	all, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	tail, err := f.hub.Subscribe(ctx, f.sid, 700)
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Close()
	evs := receive(t, all, 1200)
	checkRun(t, "from 0", evs, 1)
	var first struct{ N int }
	if err := json.Unmarshal(evs[0].Payload, &first); err != nil || first.N != 0 || evs[0].Type != "n" {
		t.Fatalf("first event %+v", evs[0])
	}
	checkRun(t, "from 700", receive(t, tail, 500), 701)

	f.publishN(f.sid, 1200, 1)
	if ev := receive(t, all, 1)[0]; ev.Seq != 1201 {
		t.Fatalf("live after catch-up: seq %d", ev.Seq)
	}
	if ev := receive(t, tail, 1)[0]; ev.Seq != 1201 {
		t.Fatalf("live after catch-up from 700: seq %d", ev.Seq)
	}
	// A subscription beyond the end waits for what comes next.
	ahead, err := f.hub.Subscribe(ctx, f.sid, 1201)
	if err != nil {
		t.Fatal(err)
	}
	defer ahead.Close()
	f.publishN(f.sid, 1201, 1)
	if ev := receive(t, ahead, 1)[0]; ev.Seq != 1202 {
		t.Fatalf("subscribed at the end: seq %d", ev.Seq)
	}
}

// Sessions' logs are separate: the server's log "" and two sessions.
func TestSessionsAreSeparate(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	server, err := f.hub.Subscribe(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	other, err := f.hub.Subscribe(ctx, "ses_other", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	f.publishN("", 0, 2)
	f.publishN("ses_other", 0, 3)
	f.publishN(f.sid, 0, 4)
	checkRun(t, "server", receive(t, server, 2), 1)
	checkRun(t, "other", receive(t, other, 3), 1)
	for _, sub := range []*Subscription{server, other} {
		select {
		case ev := <-sub.Events():
			t.Fatalf("an event of another log: %+v", ev)
		default:
		}
	}
	if f.hub.Attached(f.sid) != 0 || f.hub.Attached("") != 1 {
		t.Fatalf("Attached: session %d, server %d", f.hub.Attached(f.sid), f.hub.Attached(""))
	}
}

// Subscriptions end on ctx cancel, Close and Hub.Close, each saying why; the hub refuses work
// after Close; bad input is refused.
func TestSubscriptionEnds(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()

	cctx, cancel := context.WithCancel(ctx)
	byCtx, err := f.hub.Subscribe(cctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	byClose, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	byHub, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if byCtx.Err() != nil {
		t.Fatalf("Err while running = %v", byCtx.Err())
	}
	cancel()
	if _, err := waitEnd(t, byCtx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	byClose.Close()
	byClose.Close() // twice is fine
	if _, err := waitEnd(t, byClose); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	if n := f.hub.Attached(f.sid); n != 1 {
		t.Fatalf("Attached = %d, want 1", n)
	}

	if _, err := f.hub.Subscribe(ctx, f.sid, -1); err == nil {
		t.Fatal("a negative afterSeq was accepted")
	}
	if _, err := f.hub.Subscribe(cctx, f.sid, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("subscribe with a cancelled context: %v", err)
	}
	if evs, err := f.hub.Publish(ctx, f.sid); err != nil || len(evs) != 0 {
		t.Fatalf("publishing nothing: %v, %v", evs, err)
	}
	if _, err := f.hub.Publish(ctx, f.sid, store.NewEvent{Type: "x", Payload: json.RawMessage(`{nope`)}); err == nil {
		t.Fatal("invalid JSON was published")
	}

	f.hub.Close()
	if _, err := waitEnd(t, byHub); !errors.Is(err, ErrClosed) {
		t.Fatalf("hub closed: %v", err)
	}
	if _, err := f.hub.Subscribe(ctx, f.sid, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("subscribe after Close: %v", err)
	}
	if _, err := f.hub.Publish(ctx, f.sid, numbered(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("publish after Close: %v", err)
	}
	if n := f.hub.Attached(f.sid); n != 0 {
		t.Fatalf("Attached after Close = %d", n)
	}
	f.hub.mu.Lock()
	left := len(f.hub.sessions)
	f.hub.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d sessions still held after every user ended", left)
	}
}

// Without a store the hub says what is missing instead of panicking.
func TestNoStore(t *testing.T) {
	h := New(Options{})
	defer h.Close()
	if _, err := h.Publish(context.Background(), "s", numbered(1)); !errors.Is(err, errNoStore) {
		t.Fatalf("Publish: %v", err)
	}
	if _, err := h.Subscribe(context.Background(), "s", 0); !errors.Is(err, errNoStore) {
		t.Fatalf("Subscribe: %v", err)
	}
}

func TestPublishWithCommitsWritesAndEventsTogether(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	db, sid, h := f.db, f.sid, f.hub
	sub, err := h.Subscribe(ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var msg store.Message
	out, err := h.PublishWith(ctx, sid, func(tx *store.Tx) ([]store.NewEvent, error) {
		m, err := tx.AppendMessage(ctx, store.Message{SessionID: sid, Role: store.RoleUser, Content: "hello", Status: store.StatusComplete})
		if err != nil {
			return nil, err
		}
		msg = m
		return []store.NewEvent{{Type: "message.created", Payload: json.RawMessage(`{"id":"` + m.ID + `"}`)}}, nil
	})
	if err != nil || len(out) != 1 {
		t.Fatalf("PublishWith: %v, %d events", err, len(out))
	}
	select {
	case ev := <-sub.Events():
		if ev.Seq != out[0].Seq || ev.Type != "message.created" {
			t.Fatalf("subscriber got %+v, want %+v", ev, out[0])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the subscriber never heard of the write")
	}
	if got, err := db.Message(ctx, msg.ID); err != nil || got.Content != "hello" {
		t.Fatalf("the write was not stored: %+v, %v", got, err)
	}
	// A failing write stores nothing and sends nothing.
	boom := errors.New("boom")
	if _, err := h.PublishWith(ctx, sid, func(tx *store.Tx) ([]store.NewEvent, error) {
		if _, err := tx.AppendMessage(ctx, store.Message{SessionID: sid, Role: store.RoleUser, Content: "lost", Status: store.StatusComplete}); err != nil {
			return nil, err
		}
		return nil, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("a failing write: %v", err)
	}
	msgs, err := db.ListMessages(ctx, sid)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("after a failed batch there are %d messages (%v), want 1", len(msgs), err)
	}
	if last, err := db.LastEventSeq(ctx, sid); err != nil || last != out[0].Seq {
		t.Fatalf("after a failed batch the last event is %d (%v), want %d", last, err, out[0].Seq)
	}
	select {
	case ev := <-sub.Events():
		t.Fatalf("a failed batch sent %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
	h.Close()
	if _, err := h.PublishWith(ctx, sid, func(*store.Tx) ([]store.NewEvent, error) {
		t.Fatal("a closed hub ran the write")
		return nil, nil
	}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed hub: %v", err)
	}
}
