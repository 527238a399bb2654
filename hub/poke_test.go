package hub

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/store"
)

// Two hubs on one database are two instances: events one publishes reach the other's
// subscribers once it is poked, interleaved with its own publishes, in seq order, with no
// gap and no duplicate however many pokes come and when.
func TestPokeBringsAnotherInstancesEvents(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	db2, err := store.Open(ctx, f.db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	other := New(Options{Store: db2})
	defer other.Close()

	sub, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := f.hub.Subscribed(); !slices.Equal(got, []string{f.sid}) {
		t.Fatalf("Subscribed = %v, want [%s]", got, f.sid)
	}
	if got := other.Subscribed(); len(got) != 0 {
		t.Fatalf("the other hub has subscriptions: %v", got)
	}
	const n = 300
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // the other instance
		defer wg.Done()
		for i := range n {
			if _, err := other.Publish(ctx, f.sid, numbered(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // this one
		defer wg.Done()
		for i := range n {
			if _, err := f.hub.Publish(ctx, f.sid, numbered(n+i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // the feed, at any moment
		defer wg.Done()
		for range n {
			f.hub.Poke(f.sid)
		}
	}()
	wg.Wait()
	f.hub.Poke(f.sid) // the last wake-up after the last commit
	evs := receive(t, sub, 2*n)
	checkRun(t, "subscriber", evs, 1)
	// Nothing more: no duplicate trails the run.
	f.hub.Poke(f.sid)
	if _, err := f.hub.Publish(ctx, f.sid, numbered(-1)); err != nil {
		t.Fatal(err)
	}
	if last := receive(t, sub, 1); last[0].Seq != 2*n+1 {
		t.Fatalf("after the run came seq %d, want %d", last[0].Seq, 2*n+1)
	}
}

// An ask goes to the unattended policy when no client is attached here, unless
// AttachedElsewhere says one is attached on another instance: it then waits for a person,
// and is answered.
func TestAttachedElsewhereKeepsAsksForPeople(t *testing.T) {
	var elsewhere atomic.Bool
	f := newFixture(t, Options{AttachedElsewhere: func(sid string) bool { return elsewhere.Load() }})
	ctx := context.Background()

	a := wait(t, f.askAsync(ctx, selectAsk()))
	if a.err == nil {
		t.Fatalf("with no one attached anywhere the policy should refuse the ask, got %s", a.value)
	}
	if len(f.hub.Pending(f.sid)) != 0 {
		t.Fatal("a refused ask is pending")
	}

	elsewhere.Store(true)
	c := f.askAsync(ctx, selectAsk())
	var pending []PendingAsk
	for deadline := time.Now().Add(waitLimit); len(pending) == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		pending = f.hub.Pending(f.sid)
	}
	if len(pending) != 1 {
		t.Fatal("the ask of a session attached elsewhere is not waiting for a person")
	}
	if err := f.hub.Answer(ctx, f.sid, pending[0].ID, json.RawMessage(`"prod"`)); err != nil {
		t.Fatal(err)
	}
	if a := wait(t, c); a.err != nil || string(a.value) != `"prod"` {
		t.Fatalf("answer: %s, %v", a.value, a.err)
	}
}
