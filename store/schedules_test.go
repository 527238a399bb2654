package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newTestSchedule stores a workspace and a schedule in it, due at next.
func newTestSchedule(t *testing.T, db *DB, next time.Time) (Workspace, Schedule) {
	t.Helper()
	ctx := context.Background()
	ws, err := db.CreateWorkspace(ctx, Workspace{Path: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := db.CreateSchedule(ctx, Schedule{WorkspaceID: ws.ID, Prompt: "p", Cron: "@hourly", TimeZone: "UTC",
		CatchUp: "once", NextAt: next})
	if err != nil {
		t.Fatal(err)
	}
	return ws, sc
}

// Schedules round-trip; a schedule of a missing workspace is ErrNotFound; deleting one keeps
// its runs' sessions.
func TestScheduleCRUD(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		next := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
		ws, sc := newTestSchedule(t, db, next)
		if !sc.NextAt.Equal(next) || string(sc.Policy) != "{}" || sc.Paused {
			t.Fatalf("created %+v", sc)
		}
		if _, err := db.CreateSchedule(ctx, Schedule{WorkspaceID: "ws_none", Prompt: "p", Cron: "@hourly", TimeZone: "UTC", CatchUp: "once"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a schedule of no workspace: %v", err)
		}
		sc.Paused, sc.Policy = true, []byte(`{"allow":["x"]}`)
		if sc, _ = db.UpdateSchedule(ctx, sc); !sc.Paused || string(sc.Policy) != `{"allow":["x"]}` {
			t.Fatalf("updated %+v", sc)
		}
		if due, err := db.DueSchedules(ctx, next.Add(time.Hour)); err != nil || len(due) != 0 {
			t.Fatalf("a paused schedule is due: %v %v", due, err)
		}
		sc.Paused = false
		if _, err := db.UpdateSchedule(ctx, sc); err != nil {
			t.Fatal(err)
		}
		run, ses, err := db.ClaimOccurrence(ctx, OccurrenceClaim{ScheduleID: sc.ID, From: next, NextAt: next.Add(time.Hour),
			Run: ScheduleRun{OccurrenceAt: next, Status: RunRunning}, Session: &Session{WorkspaceID: ws.ID, Title: "run"}})
		if err != nil || ses == nil || run.SessionID != ses.ID {
			t.Fatalf("claim: %+v %+v %v", run, ses, err)
		}
		if r, err := db.ScheduleRunOfSession(ctx, ses.ID); err != nil || r.ScheduleID != sc.ID || r.Status != RunRunning {
			t.Fatalf("the run of the session: %+v %v", r, err)
		}
		// A lone jean2 starting marks the runs its last process left running as failed.
		if n, err := db.InterruptScheduleRuns(ctx, "jean2 stopped"); err != nil || n != 1 {
			t.Fatalf("interrupted %d runs: %v", n, err)
		}
		if r, _ := db.ScheduleRunOfSession(ctx, ses.ID); r.Status != "failed" || r.Reason != "interrupted" || r.Error != "jean2 stopped" {
			t.Fatalf("an interrupted run: %+v", r)
		}
		run.Status, run.Refusals = "refused", []byte(`[{"tool":"t"}]`)
		if err := db.FinishScheduleRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if runs, err := db.ScheduleRuns(ctx, sc.ID, 10); err != nil || len(runs) != 1 || runs[0].Status != "refused" ||
			runs[0].FinishedAt.IsZero() || string(runs[0].Refusals) != `[{"tool":"t"}]` {
			t.Fatalf("runs %+v %v", runs, err)
		}
		if err := db.DeleteSchedule(ctx, sc.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Session(ctx, ses.ID); err != nil {
			t.Fatalf("the run's session went with its schedule: %v", err)
		}
		if _, err := db.ScheduleRunOfSession(ctx, ses.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a run of a deleted schedule: %v", err)
		}
	})
}

// Many claimers (two handles on the database, as two instances have) race for one
// occurrence: exactly one gets it, and only its session exists.
func TestClaimOccurrenceOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		var other *DB
		var err error
		if db.dialect == dialectPostgres {
			other, err = OpenPostgres(ctx, db.url)
		} else {
			other, err = Open(ctx, db.Path())
		}
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		for round := range 5 {
			at := time.Date(2026, 1, 1, 10+round, 0, 0, 0, time.UTC)
			ws, sc := newTestSchedule(t, db, at)
			var won atomic.Int32
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					h := []*DB{db, other}[i%2]
					_, _, err := h.ClaimOccurrence(ctx, OccurrenceClaim{ScheduleID: sc.ID, From: at, NextAt: at.Add(time.Hour),
						Run: ScheduleRun{OccurrenceAt: at, Status: RunRunning}, Session: &Session{WorkspaceID: ws.ID}})
					switch {
					case err == nil:
						won.Add(1)
					case !errors.Is(err, ErrNotClaimed):
						t.Errorf("claim: %v", err)
					}
				}()
			}
			wg.Wait()
			sessions, err := db.ListSessions(ctx, ws.ID)
			if err != nil {
				t.Fatal(err)
			}
			if won.Load() != 1 || len(sessions) != 1 {
				t.Fatalf("round %d: %d claims won, %d sessions made", round, won.Load(), len(sessions))
			}
		}
	})
}
