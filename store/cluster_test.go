package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Two instances race for one session's lease: exactly one wins, the other learns who holds
// it; an expired lease is taken over; a renewal finds a lease taken over as lost.
func TestLeaseOneHolderAtATime(t *testing.T) { forEachBackend(t, testLeaseOneHolderAtATime) }

func testLeaseOneHolderAtATime(t *testing.T, db *DB) {
	ctx := context.Background()
	// A second handle on the same database: another instance's view.
	db2 := openAgain(t, db)
	ses := mustSession(t, db, mustWorkspace(t, db, t.TempDir()).ID)

	var wg sync.WaitGroup
	results := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := db
			if i%2 == 1 {
				d = db2
			}
			_, results[i] = d.AcquireLease(ctx, ses.ID, "inst-"+string(rune('a'+i)), "turn", time.Minute)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range results {
		var held *LeaseHeldError
		switch {
		case err == nil:
			won++
		case errors.As(err, &held) && errors.Is(err, ErrLeased):
			if held.Held.SessionID != ses.ID || held.Held.InstanceID == "" {
				t.Errorf("refusal names %+v", held.Held)
			}
		default:
			t.Errorf("acquire: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d instances won the lease, want 1: %v", won, results)
	}
	l, err := db.LeaseOf(ctx, ses.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The holder renews it; another cannot take it.
	if lost, err := db.RenewLeases(ctx, l.InstanceID, []string{ses.ID}, 50*time.Millisecond); err != nil || len(lost) != 0 {
		t.Fatalf("renew: lost %v, %v", lost, err)
	}
	if _, err := db2.AcquireLease(ctx, ses.ID, "other", "t2", time.Minute); !errors.Is(err, ErrLeased) {
		t.Fatalf("acquire a live lease: %v", err)
	}
	time.Sleep(80 * time.Millisecond)
	exp, err := db2.ExpiredLeases(ctx, time.Now())
	if err != nil || len(exp) != 1 || exp[0].InstanceID != l.InstanceID {
		t.Fatalf("expired leases: %+v, %v", exp, err)
	}
	if live, err := db2.LiveLeases(ctx, time.Now()); err != nil || len(live) != 0 {
		t.Fatalf("live leases after expiry: %+v, %v", live, err)
	}
	// Expired: taken over, and the old holder's renewal finds it lost.
	if _, err := db2.AcquireLease(ctx, ses.ID, "other", "t2", time.Minute); err != nil {
		t.Fatalf("take over an expired lease: %v", err)
	}
	if lost, err := db.RenewLeases(ctx, l.InstanceID, []string{ses.ID}, time.Minute); err != nil || len(lost) != 1 {
		t.Fatalf("renew a lease taken over: lost %v, %v", lost, err)
	}
	// Releasing someone else's lease leaves it.
	if err := db.ReleaseLease(ctx, ses.ID, l.InstanceID); err != nil {
		t.Fatal(err)
	}
	if cur, err := db.LeaseOf(ctx, ses.ID); err != nil || cur.InstanceID != "other" {
		t.Fatalf("lease after a stranger's release: %+v, %v", cur, err)
	}
	if err := db.ReleaseLease(ctx, ses.ID, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LeaseOf(ctx, ses.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lease after release: %v", err)
	}
	if _, err := db.AppendEvents(ctx, ses.ID, NewEvent{Type: "x"}, NewEvent{Type: "y"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendEvents(ctx, "", NewEvent{Type: "z"}); err != nil {
		t.Fatal(err)
	}
	lasts, err := db2.LastEventSeqs(ctx, []string{ses.ID, "", "ses_missing"})
	if err != nil || lasts[ses.ID] != 2 || lasts[""] < 1 || lasts["ses_missing"] != 0 || len(lasts) != 3 {
		t.Fatalf("LastEventSeqs = %v, %v", lasts, err)
	}
	if _, err := db.AcquireLease(ctx, "ses_missing", "a", "", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lease of a missing session: %v", err)
	}
	if _, err := db.AcquireLease(ctx, ses.ID, "", "", time.Minute); err == nil {
		t.Fatal("a lease for no instance was given")
	}
}

func TestCommandsAndWatchers(t *testing.T) { forEachBackend(t, testCommandsAndWatchers) }

func testCommandsAndWatchers(t *testing.T, db *DB) {
	ctx := context.Background()
	c, err := db.SendCommand(ctx, Command{InstanceID: "a", SessionID: "s1", Kind: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SendCommand(ctx, Command{InstanceID: "a", Kind: "answer", Body: json.RawMessage("{nope")}); err == nil {
		t.Fatal("a command with a body that is not JSON was stored")
	}
	pend, err := db.PendingCommands(ctx, "a")
	if err != nil || len(pend) != 1 || pend[0].ID != c.ID || string(pend[0].Body) != "{}" {
		t.Fatalf("pending: %+v, %v", pend, err)
	}
	if other, _ := db.PendingCommands(ctx, "b"); len(other) != 0 {
		t.Fatalf("b sees a's commands: %+v", other)
	}
	if err := db.FinishCommand(ctx, c.ID, "no turn"); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishCommand(ctx, c.ID, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("finish twice: %v", err)
	}
	got, err := db.CommandByID(ctx, c.ID)
	if err != nil || !got.Done || got.Error != "no turn" {
		t.Fatalf("command after finish: %+v, %v", got, err)
	}
	if pend, _ := db.PendingCommands(ctx, "a"); len(pend) != 0 {
		t.Fatalf("pending after finish: %+v", pend)
	}
	if n, err := db.PruneCommands(ctx, time.Now().Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}

	if err := db.SetWatched(ctx, "a", []string{"s1", ""}, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		session, asker string
		want           bool
	}{{"s1", "b", true}, {"s1", "a", false}, {"", "b", true}, {"s2", "b", false}} {
		if got, err := db.WatchedElsewhere(ctx, tc.session, tc.asker); err != nil || got != tc.want {
			t.Errorf("watched %q elsewhere than %s: %v, %v; want %v", tc.session, tc.asker, got, err, tc.want)
		}
	}
	if err := db.SetWatched(ctx, "a", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.WatchedElsewhere(ctx, "s1", "b"); got {
		t.Error("a session a stopped watching is still watched")
	}
	if err := db.AddWatched(ctx, "a", "s3", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := db.AddWatched(ctx, "a", "s4", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{"s3", "s4"} {
		if got, err := db.WatchedElsewhere(ctx, sid, "b"); err != nil || !got {
			t.Errorf("a session added to a's watch is not watched: %v, %v", got, err)
		}
	}
}

// openAgain opens a second handle on db's database, as another instance would, closed at
// the end.
func openAgain(t testing.TB, db *DB) *DB {
	t.Helper()
	var db2 *DB
	var err error
	if db.dialect == dialectPostgres {
		db2, err = OpenPostgres(context.Background(), db.url)
	} else {
		db2, err = Open(context.Background(), db.Path())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	return db2
}

// A lease holder's writes are fenced by its epoch: a transaction that begins with
// FenceLease stores nothing once another instance took the lease over, nor once the same
// instance acquired it again (a new epoch); and on the holder's side a takeover waits for a
// fenced transaction under way to commit, so it cannot slip in between the check and the
// commit.
func TestFenceLeaseRefusesALostLease(t *testing.T) {
	forEachBackend(t, testFenceLeaseRefusesALostLease)
}

func testFenceLeaseRefusesALostLease(t *testing.T, db *DB) {
	ctx := context.Background()
	db2 := openAgain(t, db)
	ses := mustSession(t, db, mustWorkspace(t, db, t.TempDir()).ID)
	l, err := db.AcquireLease(ctx, ses.ID, "a", "", 50*time.Millisecond)
	if err != nil || l.Epoch == "" {
		t.Fatalf("acquire: %+v, %v", l, err)
	}
	fenced := func(d *DB, lease Lease, typ string) error {
		return d.Batch(ctx, func(tx *Tx) error {
			if err := tx.FenceLease(ctx, ses.ID, lease.InstanceID, lease.Epoch); err != nil {
				return err
			}
			_, err := tx.AppendEvents(ctx, ses.ID, NewEvent{Type: typ, Payload: json.RawMessage(`{}`)})
			return err
		})
	}
	if err := fenced(db, l, "held"); err != nil {
		t.Fatalf("a write under the lease: %v", err)
	}

	// The holder's transaction is under way when the lease expires and another instance
	// takes it over: the takeover waits for the commit.
	taken := make(chan error, 1)
	err = db.Batch(ctx, func(tx *Tx) error {
		if err := tx.FenceLease(ctx, ses.ID, "a", l.Epoch); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond) // past the lease
		go func() {
			_, err := db2.AcquireLease(ctx, ses.ID, "b", "", time.Minute)
			taken <- err
		}()
		time.Sleep(200 * time.Millisecond)
		select {
		case err := <-taken:
			return fmt.Errorf("the lease was taken over (%v) inside a fenced transaction", err)
		default:
		}
		_, err := tx.AppendEvents(ctx, ses.ID, NewEvent{Type: "last", Payload: json.RawMessage(`{}`)})
		return err
	})
	if err != nil {
		t.Fatalf("a fenced transaction under way: %v", err)
	}
	if err := <-taken; err != nil {
		t.Fatalf("take over the expired lease after the holder's commit: %v", err)
	}
	// The old holder now writes nothing.
	if err := fenced(db, l, "stale"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a write of the holder that lost the lease: %v, want ErrLeaseLost", err)
	}
	// Nor does an old epoch of the same instance.
	again, err := db.AcquireLease(ctx, ses.ID, "b", "", time.Minute)
	if err != nil || again.Epoch == l.Epoch {
		t.Fatalf("acquire again: %+v, %v", again, err)
	}
	taken2, _ := db.LeaseOf(ctx, ses.ID)
	if err := fenced(db2, Lease{InstanceID: "b", Epoch: "epoch_old"}, "stale"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a write under an old epoch: %v, want ErrLeaseLost", err)
	}
	if err := fenced(db2, taken2, "fresh"); err != nil {
		t.Fatalf("a write under the current epoch: %v", err)
	}
	evs, err := db.EventsAfter(ctx, ses.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if fmt.Sprint(types) != "[held last fresh]" {
		t.Fatalf("events stored: %v, want [held last fresh]", types)
	}
}

// A reaper's claim takes the expired lease it listed, once: of reapers claiming at once one
// wins; one that claims after the winner sealed the session and released the lease takes
// nothing (AcquireLease gave it a fresh lease, and the session was sealed twice); a live
// lease and a newer acquisition are not taken.
func TestTakeExpiredLeaseOnce(t *testing.T) { forEachBackend(t, testTakeExpiredLeaseOnce) }

func testTakeExpiredLeaseOnce(t *testing.T, db *DB) {
	ctx := context.Background()
	db2 := openAgain(t, db)
	ses := mustSession(t, db, mustWorkspace(t, db, t.TempDir()).ID)
	dead, err := db.AcquireLease(ctx, ses.ID, "dead", "turn", 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.TakeExpiredLease(ctx, dead, "early", time.Minute); !errors.Is(err, ErrLeased) {
		t.Fatalf("a live lease was taken: %v", err)
	}
	time.Sleep(40 * time.Millisecond)
	var wg sync.WaitGroup
	results := make([]error, 6)
	for i := range results {
		wg.Go(func() {
			d := db
			if i%2 == 1 {
				d = db2
			}
			_, results[i] = d.TakeExpiredLease(ctx, dead, "reaper-"+string(rune('a'+i)), time.Minute)
		})
	}
	wg.Wait()
	won := 0
	for _, err := range results {
		if err == nil {
			won++
		} else if !errors.Is(err, ErrLeased) {
			t.Errorf("take: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d reapers took the lease, want 1: %v", won, results)
	}
	winner, err := db.LeaseOf(ctx, ses.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseLease(ctx, ses.ID, winner.InstanceID); err != nil {
		t.Fatal(err)
	}
	// A reaper that listed the dead lease before the winner released it.
	if _, err := db2.TakeExpiredLease(ctx, dead, "late-reaper", time.Minute); !errors.Is(err, ErrLeased) {
		t.Fatalf("a released lease was taken again: %v", err)
	}
	if _, err := db.LeaseOf(ctx, ses.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the session has a lease after the late claim: %v", err)
	}
}
