package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// Catch-up settings: what a schedule does with the occurrences it missed (jean2 was down,
// or too late to run them on time).
const (
	CatchUpOnce = "once" // one run for all of them (the default)
	CatchUpSkip = "skip" // none
)

// How a run ended (store.ScheduleRun.Status), as jean2 run reports it.
const (
	StatusDone    = "done"    // the turn finished, every ask answered
	StatusFailed  = "failed"  // the turn failed, was stopped, or could not start
	StatusRefused = "refused" // the policy refused at least one ask
	StatusLimit   = "limit"   // the server's round limits ended the turn
)

// Defaults of Options' zero fields.
const (
	DefaultGrace = time.Minute
	DefaultPoll  = 30 * time.Second
)

// Refusal is an ask a run's policy refused (the shape of jean2 run's run.refused).
type Refusal struct {
	AskID  string   `json:"askId"`
	CallID string   `json:"callId"`
	Tool   string   `json:"tool"`
	Ask    tool.Ask `json:"ask"`
	Reason string   `json:"reason"`
}

// Outcome is how a run's turn ended.
type Outcome struct {
	Status, Reason, Error string
	Refusals              []Refusal
}

// Run is a claimed occurrence handed to the Runner.
type Run struct {
	Schedule store.Schedule
	Record   store.ScheduleRun
	Session  store.Session
	Policy   ask.RulePolicy
}

// Runner sends a run's prompt as a turn of its session and follows the turn to its end,
// answering its asks by the run's policy at once (never waiting for a person). It returns
// when the turn ended or ctx did.
type Runner interface {
	RunScheduled(ctx context.Context, r Run) Outcome
}

// Store is what the scheduler keeps in the database (*store.DB).
type Store interface {
	DueSchedules(ctx context.Context, t time.Time) ([]store.Schedule, error)
	NextScheduled(ctx context.Context) (time.Time, bool, error)
	ClaimOccurrence(ctx context.Context, c store.OccurrenceClaim) (store.ScheduleRun, *store.Session, error)
	FinishScheduleRun(ctx context.Context, run store.ScheduleRun) error
}

var _ Store = (*store.DB)(nil)

// Options configure a Scheduler; Store and Runner are required.
type Options struct {
	Store  Store
	Runner Runner
	Clock  Clock // nil: SystemClock
	// Instance is this instance's id, recorded with the runs it claims.
	Instance string
	// Grace is how late an occurrence may be handled and still count as on time; older
	// ones are missed, and the schedule's catch-up says what becomes of them.
	Grace time.Duration
	// Poll is the longest the scheduler sleeps without looking at the database (schedules
	// another instance made or changed).
	Poll time.Duration
	// Here, when set, says whether this instance can run the schedule's sessions (in a
	// cluster: whether its disk has the workspace's folder); others are left to the
	// instances that can.
	Here   func(ctx context.Context, sc store.Schedule) bool
	Logger *slog.Logger
}

// Scheduler claims the schedules' due occurrences and starts their runs. Start it once;
// Stop ends the claiming, Close also the runs in flight.
type Scheduler struct {
	o    Options
	poke chan struct{}

	loopCtx    context.Context
	stopLoop   context.CancelFunc
	loopDone   chan struct{}
	runCtx     context.Context
	cancelRuns context.CancelFunc
	runs       sync.WaitGroup
	started    bool
	mu         sync.Mutex // guards started against Stop
}

// New makes a scheduler; it does nothing until Start.
func New(o Options) *Scheduler {
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{o: o, poke: make(chan struct{}, 1), loopDone: make(chan struct{})}
	s.loopCtx, s.stopLoop = context.WithCancel(context.Background())
	s.runCtx, s.cancelRuns = context.WithCancel(context.Background())
	return s
}

// Start begins the loop: at once it handles what fell due while jean2 was down.
func (s *Scheduler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.loopCtx.Err() != nil {
		return
	}
	s.started = true
	go s.loop()
}

// Poke makes the loop look at the schedules again now (one was made or changed here).
func (s *Scheduler) Poke() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// Stop ends the loop and waits for it: no occurrence is claimed after it returns. Runs in
// flight go on.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	started := s.started
	s.stopLoop()
	s.mu.Unlock()
	if started {
		<-s.loopDone
	}
}

// Close stops the loop, ends the runs in flight (their turns are the harness's to stop;
// a run whose turn still runs is recorded failed) and waits for them.
func (s *Scheduler) Close() {
	s.Stop()
	s.cancelRuns()
	s.runs.Wait()
}

func (s *Scheduler) loop() {
	defer close(s.loopDone)
	ctx := s.loopCtx
	for {
		now := s.o.Clock.Now()
		if err := s.RunDue(ctx, now); err != nil && ctx.Err() == nil {
			s.o.Logger.Warn("scheduled sessions: handling the due occurrences", "error", err)
		}
		wake := now.Add(s.o.Poll)
		if next, ok, err := s.o.Store.NextScheduled(ctx); err == nil && ok && next.Before(wake) {
			wake = next
		}
		c, stop := s.o.Clock.At(wake)
		select {
		case <-c:
		case <-s.poke:
		case <-ctx.Done():
			stop()
			return
		}
		stop()
	}
}

// RunDue handles every occurrence due at now: it claims them, schedule by schedule, and
// starts the runs it claimed.
func (s *Scheduler) RunDue(ctx context.Context, now time.Time) error {
	due, err := s.o.Store.DueSchedules(ctx, now)
	if err != nil {
		return err
	}
	var errs []error
	for _, sc := range due {
		if s.o.Here != nil && !s.o.Here(ctx, sc) {
			continue
		}
		if err := s.handle(ctx, sc, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// handle claims a due schedule's occurrences: the last one runs when it is on time or the
// schedule catches up once; missed ones alone under catch-up "skip" are recorded skipped.
func (s *Scheduler) handle(ctx context.Context, sc store.Schedule, now time.Time) error {
	spec, err := ParseSpec(sc.Cron, sc.TimeZone)
	if err != nil {
		return fmt.Errorf("schedule %s: %w", sc.ID, err)
	}
	count, last := spec.Due(sc.NextAt, now)
	if count == 0 {
		return nil
	}
	next := spec.Next(now)
	if next.IsZero() {
		next = now.AddDate(5, 0, 0) // none within five years (ParseSpec refuses such crons)
	}
	claim := store.OccurrenceClaim{ScheduleID: sc.ID, From: sc.NextAt, NextAt: next,
		Run: store.ScheduleRun{OccurrenceAt: last, Covers: count, InstanceID: s.o.Instance, Status: store.RunRunning}}
	onTime := now.Sub(last) <= s.o.Grace
	switch {
	case !onTime && sc.CatchUp == CatchUpSkip:
		claim.Run.Status = store.RunSkipped
	case onTime && sc.CatchUp == CatchUpSkip:
		claim.Run.Covers = 1 // the missed ones before it are dropped
		fallthrough
	default:
		claim.Session = &store.Session{WorkspaceID: sc.WorkspaceID, Title: runTitle(sc, last),
			Provider: sc.Provider, Model: sc.Model, Agent: sc.Agent}
	}
	run, ses, err := s.o.Store.ClaimOccurrence(ctx, claim)
	if errors.Is(err, store.ErrNotClaimed) {
		return nil // another instance has it
	}
	if err != nil {
		return err
	}
	if ses == nil {
		s.o.Logger.Info("scheduled session skipped: its occurrences were missed", "schedule", sc.ID, "missed", count)
		return nil
	}
	s.launch(Run{Schedule: sc, Record: run, Session: *ses})
	return nil
}

// runTitle names a run's session: the schedule, and the occurrence on its zone's clock.
func runTitle(sc store.Schedule, at time.Time) string {
	name := sc.Name
	if name == "" {
		name, _, _ = strings.Cut(strings.TrimSpace(sc.Prompt), "\n")
		if r := []rune(name); len(r) > 60 {
			name = string(r[:60]) + "…"
		}
	}
	if loc, err := time.LoadLocation(sc.TimeZone); err == nil {
		at = at.In(loc)
	}
	return name + " · " + at.Format("2006-01-02 15:04 MST")
}

// launch runs r in a goroutine of its own and records its outcome.
func (s *Scheduler) launch(r Run) {
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		out := s.run(r)
		rec := r.Record
		rec.Status, rec.Reason, rec.Error = out.Status, out.Reason, out.Error
		rec.Refusals = refusalsJSON(out.Refusals)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.o.Store.FinishScheduleRun(ctx, rec); err != nil {
			s.o.Logger.Warn("scheduled session: recording its outcome", "schedule", r.Schedule.ID, "session", r.Session.ID, "error", err)
		}
	}()
}

// run builds the run's policy and hands it to the Runner.
func (s *Scheduler) run(r Run) Outcome {
	p, err := ParsePolicy(r.Schedule.Policy)
	if err == nil {
		r.Policy, err = p.Rules()
	}
	if err != nil {
		return Outcome{Status: StatusFailed, Error: fmt.Sprintf("schedule %s: %v", r.Schedule.ID, err)}
	}
	out := s.o.Runner.RunScheduled(s.runCtx, r)
	if out.Status == "" {
		out.Status = StatusFailed
	}
	return out
}

func refusalsJSON(rs []Refusal) []byte {
	if len(rs) == 0 {
		return []byte(`[]`)
	}
	data, err := json.Marshal(rs)
	if err != nil {
		return []byte(`[]`)
	}
	return data
}
