package schedule

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/store"
)

// fakeStore keeps schedules in memory and claims as the database does (next_at moved
// from the value read).
type fakeStore struct {
	mu       sync.Mutex
	sc       store.Schedule
	claims   []store.OccurrenceClaim
	finished []store.ScheduleRun
}

func (f *fakeStore) DueSchedules(_ context.Context, t time.Time) ([]store.Schedule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sc.Paused || f.sc.NextAt.After(t) {
		return nil, nil
	}
	return []store.Schedule{f.sc}, nil
}

func (f *fakeStore) NextScheduled(context.Context) (time.Time, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sc.NextAt, true, nil
}

func (f *fakeStore) ClaimOccurrence(_ context.Context, c store.OccurrenceClaim) (store.ScheduleRun, *store.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.sc.NextAt.Equal(c.From) {
		return store.ScheduleRun{}, nil, store.ErrNotClaimed
	}
	f.sc.NextAt = c.NextAt
	f.claims = append(f.claims, c)
	if c.Session == nil {
		return c.Run, nil, nil
	}
	ses := *c.Session
	ses.ID = "ses_" + c.Run.OccurrenceAt.Format("1504")
	return c.Run, &ses, nil
}

func (f *fakeStore) FinishScheduleRun(_ context.Context, r store.ScheduleRun) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = append(f.finished, r)
	return nil
}

func (f *fakeStore) snapshot() ([]store.OccurrenceClaim, []store.ScheduleRun) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.OccurrenceClaim(nil), f.claims...), append([]store.ScheduleRun(nil), f.finished...)
}

// runnerFunc is a Runner made of a function.
type runnerFunc func(ctx context.Context, r Run) Outcome

func (f runnerFunc) RunScheduled(ctx context.Context, r Run) Outcome { return f(ctx, r) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A late start with catch-up skip records the missed occurrences skipped and runs none; the
// next occurrence on time runs. Close ends a run in flight (its context) and waits for its
// outcome to be recorded; nothing is claimed after.
func TestSchedulerSkipsMissedAndClosesCleanly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	st := &fakeStore{sc: store.Schedule{ID: "sch_1", WorkspaceID: "ws", Prompt: "p", Cron: "@hourly", TimeZone: "UTC",
		CatchUp: CatchUpSkip, NextAt: t0}}
	clock := NewFakeClock(t0.Add(3*time.Hour + 10*time.Minute))
	started := make(chan Run, 1)
	s := New(Options{Store: st, Clock: clock, Instance: "me", Runner: runnerFunc(func(ctx context.Context, r Run) Outcome {
		started <- r
		<-ctx.Done()
		return Outcome{Status: StatusFailed, Error: "stopped"}
	})})
	s.Start()
	waitFor(t, "the skip", func() bool { c, _ := st.snapshot(); return len(c) == 1 })
	claims, _ := st.snapshot()
	if c := claims[0]; c.Session != nil || c.Run.Status != store.RunSkipped || c.Run.Covers != 4 || !c.Run.OccurrenceAt.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("missed occurrences: %+v", c)
	}
	clock.Set(t0.Add(4 * time.Hour))
	r := <-started
	if r.Session.ID != "ses_1400" || !r.Record.OccurrenceAt.Equal(t0.Add(4*time.Hour)) || r.Record.InstanceID != "me" {
		t.Fatalf("the run on time: %+v", r)
	}
	s.Close()
	_, finished := st.snapshot()
	if len(finished) != 1 || finished[0].Status != StatusFailed {
		t.Fatalf("recorded after Close: %+v", finished)
	}
	clock.Set(t0.Add(5 * time.Hour))
	time.Sleep(50 * time.Millisecond)
	if c, _ := st.snapshot(); len(c) != 2 {
		t.Fatalf("claimed after Close: %+v", c)
	}
}
