package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// turns records what the nodes ask of a harness.
type turns struct {
	mu       sync.Mutex
	running  map[string]bool
	recovers atomic.Int32
}

func (t *turns) Stop(sid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.running[sid] {
		return false
	}
	t.running[sid] = false
	return true
}

func (t *turns) RecoverSession(ctx context.Context, sid string) error {
	t.recovers.Add(1)
	time.Sleep(20 * time.Millisecond) // a seal takes a while: a second reaper must not get in
	return nil
}

func openDBs(t *testing.T, n int) ([]*store.DB, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jean2.db")
	var dbs []*store.DB
	for range n {
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	ws, err := dbs[0].CreateWorkspace(ctx, store.Workspace{Path: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ses, err := dbs[0].CreateSession(ctx, store.Session{WorkspaceID: ws.ID})
	if err != nil {
		t.Fatal(err)
	}
	return dbs, ses.ID
}

// Three instances' reapers find one expired lease at once: the session is sealed once, its
// lease is gone after, and a live lease is never reaped.
func TestReapersSealAnExpiredLeaseOnce(t *testing.T) {
	ctx := context.Background()
	dbs, sid := openDBs(t, 3)
	if _, err := dbs[0].AcquireLease(ctx, sid, "dead", "", 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var tr turns
	var nodes []*Node
	for i, db := range dbs {
		n, err := New(Options{Store: db, Instance: string(rune('a' + i)), LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		n.turns = &tr
		nodes = append(nodes, n)
	}
	// Live: nothing to reap.
	for _, n := range nodes {
		if got := n.reap(ctx); got != 0 {
			t.Fatalf("a live lease was reaped (%d)", got)
		}
	}
	time.Sleep(50 * time.Millisecond)
	var wg sync.WaitGroup
	var sealed atomic.Int32
	for _, n := range nodes {
		wg.Go(func() { sealed.Add(int32(n.reap(ctx))) })
	}
	wg.Wait()
	if sealed.Load() != 1 || tr.recovers.Load() != 1 {
		t.Fatalf("sealed %d times (%d recoveries), want once", sealed.Load(), tr.recovers.Load())
	}
	if _, err := dbs[0].LeaseOf(ctx, sid); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the lease after the seal: %v", err)
	}
}

// A lease this node holds is renewed by its heartbeat; one taken over is reported lost; a
// release leaves another's lease alone.
func TestHeartbeatRenewsAndLoses(t *testing.T) {
	ctx := context.Background()
	dbs, sid := openDBs(t, 1)
	n, err := New(Options{Store: dbs[0], Instance: "a", LeaseTTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l, err := n.AcquireLease(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		n.heartbeat(ctx)
	}
	if leased, err := (&Node{db: dbs[0], id: "b"}).Leased(ctx); err != nil || !leased[sid] {
		t.Fatalf("after 500 ms of heartbeats another instance sees %v, %v; want the session leased", leased, err)
	}
	if err := dbs[0].ReleaseLease(ctx, sid, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].AcquireLease(ctx, sid, "b", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	n.heartbeat(ctx)
	select {
	case <-l.Lost():
	default:
		t.Fatal("a lease taken over is not reported lost")
	}
	l.Release()
	if cur, err := dbs[0].LeaseOf(ctx, sid); err != nil || cur.InstanceID != "b" {
		t.Fatalf("releasing a lost lease dropped the new holder's: %+v, %v", cur, err)
	}
}

// events is a hub whose Answer records what it was given.
type events struct {
	mu      sync.Mutex
	answers []string
}

func (e *events) Subscribed() []string { return nil }
func (e *events) Poke(string)          {}
func (e *events) Answer(ctx context.Context, sid, askID string, answer json.RawMessage) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if askID != "ask_1" {
		return hub.ErrNoSuchAsk
	}
	e.answers = append(e.answers, string(answer))
	return nil
}

// Stop and an answer sent from one node reach the node holding the session's lease, and
// their outcomes come back; an answer of the wrong shape is refused before it is sent.
func TestCommandsReachTheHolder(t *testing.T) {
	ctx := context.Background()
	dbs, sid := openDBs(t, 2)
	holderTurns := &turns{running: map[string]bool{sid: true}}
	holderEvents := &events{}
	holder, _ := New(Options{Store: dbs[0], Instance: "holder", Poll: 10 * time.Millisecond})
	other, _ := New(Options{Store: dbs[1], Instance: "other", Poll: 10 * time.Millisecond})
	holder.Start(holderTurns, holderEvents)
	defer holder.Close()
	other.Start(&turns{}, &events{})
	defer other.Close()

	if inst, stopped, err := other.Stop(ctx, sid); err != nil || stopped || inst != "" {
		t.Fatalf("stop with no lease: %q %v %v", inst, stopped, err)
	}
	if _, err := holder.AcquireLease(ctx, sid); err != nil {
		t.Fatal(err)
	}
	// The ask, as the holder's hub announces it.
	q := tool.Ask{Type: tool.AskSingleSelect, Question: "Which?", Options: []tool.Option{{Label: "A", Value: json.RawMessage(`"a"`)}}}
	now := time.Now().UTC()
	payload, _ := json.Marshal(hub.AskPendingPayload{Ask: hub.PendingAsk{ID: "ask_1", SessionID: sid, Ask: q, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}})
	if _, err := dbs[0].AppendEvents(ctx, sid, store.NewEvent{Type: hub.EventAskPending, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	pending, err := other.PendingAsks(ctx, sid)
	if err != nil || len(pending) != 1 || pending[0].ID != "ask_1" {
		t.Fatalf("pending from the log: %+v, %v", pending, err)
	}
	if err := other.Answer(ctx, sid, "ask_1", json.RawMessage(`"zzz"`)); err == nil {
		t.Fatal("an answer that is not one of the options was sent")
	}
	if err := other.Answer(ctx, sid, "ask_2", json.RawMessage(`"a"`)); !errors.Is(err, hub.ErrNoSuchAsk) {
		t.Fatalf("an answer to an ask never made: %v", err)
	}
	if err := other.Answer(ctx, sid, "ask_1", json.RawMessage(`"a"`)); err != nil {
		t.Fatal(err)
	}
	if len(holderEvents.answers) != 1 || holderEvents.answers[0] != `"a"` {
		t.Fatalf("the holder's hub got %v", holderEvents.answers)
	}
	inst, stopped, err := other.Stop(ctx, sid)
	if err != nil || !stopped || inst != "holder" {
		t.Fatalf("stop: %q %v %v", inst, stopped, err)
	}
	if _, stopped, _ := other.Stop(ctx, sid); stopped {
		t.Fatal("a second stop stopped something")
	}
}

// A restarted instance (the same home, a new id) treats its previous run's leases as its
// own: the harness's start seals them at once, and Start releases them.
func TestPreviousRunsLeasesAreNotAnotherInstances(t *testing.T) {
	ctx := context.Background()
	dbs, sid := openDBs(t, 1)
	if _, err := dbs[0].AcquireLease(ctx, sid, "old-run", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	stranger, _ := New(Options{Store: dbs[0], Instance: "other"})
	if leased, err := stranger.Leased(ctx); err != nil || !leased[sid] {
		t.Fatalf("another instance sees %v, %v; want the session leased", leased, err)
	}
	n, _ := New(Options{Store: dbs[0], Instance: "new-run", Previous: "old-run"})
	if leased, err := n.Leased(ctx); err != nil || leased[sid] {
		t.Fatalf("the restarted instance sees %v, %v; want its previous run's lease as its own", leased, err)
	}
	n.Start(&turns{}, &events{})
	defer n.Close()
	if _, err := dbs[0].LeaseOf(ctx, sid); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the previous run's lease after Start: %v", err)
	}
}

// The server log's events appended after ServerAfter reach ServerEvents even when they were
// appended before the node started (between the server loading its settings and the feed's
// start): none is missed; those up to ServerAfter are not handed again.
func TestServerEventsFollowFromServerAfter(t *testing.T) {
	ctx := context.Background()
	dbs, _ := openDBs(t, 1)
	db := dbs[0]
	if _, err := db.AppendEvents(ctx, "", store.NewEvent{Type: "settings.changed", Payload: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	after, err := db.LastEventSeq(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// Another instance changes something before this node's feed started.
	if _, err := db.AppendEvents(ctx, "", store.NewEvent{Type: "providers.changed", Payload: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	n, err := New(Options{Store: db, Instance: "a", Poll: 10 * time.Millisecond, ServerAfter: &after,
		ServerEvents: func(_ context.Context, evs []store.Event) {
			for _, ev := range evs {
				got <- ev.Type
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	n.Start(&turns{}, &events{})
	defer n.Close()
	select {
	case typ := <-got:
		if typ != "providers.changed" {
			t.Fatalf("first event handed: %s, want providers.changed (settings.changed was before ServerAfter)", typ)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the event appended before the feed started never came")
	}
}
