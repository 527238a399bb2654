package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/schedule"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// scheduledRunner runs the scheduler's claimed occurrences on this server: it attaches to
// the run's session as a client would (so the turn's asks come to it, not to the
// unattended setting), starts the turn and answers each ask by the schedule's policy at
// once, refusing what the policy does not cover (hub.Refuse, as jean2 run does).
type scheduledRunner struct{ s *Server }

var _ schedule.Runner = scheduledRunner{}

// RunScheduled implements schedule.Runner.
func (sr scheduledRunner) RunScheduled(ctx context.Context, r schedule.Run) schedule.Outcome {
	s := sr.s
	ses := r.Session
	if _, _, err := s.providers.Model(ctx, ses.Provider, ses.Model); err != nil {
		return failed("no model to run it: %v", err)
	}
	sub, err := s.hub.Subscribe(ctx, ses.ID, 0)
	if err != nil {
		return failed("attach to session %s: %v", ses.ID, err)
	}
	defer func() { sub.Close() }()
	started := s.gate.starting()
	turn, err := s.harness.Start(ctx, ses.ID, harness.Input{Text: r.Schedule.Prompt})
	started()
	if err != nil {
		return failed("start the turn in session %s: %v", ses.ID, err)
	}
	f := &scheduledFollow{s: s, run: r, turnID: turn.ID, handled: map[string]bool{}}
	for {
		last, done := f.follow(ctx, sub)
		if done {
			return f.out
		}
		// A subscription that fell behind (or ended) is taken up again after what it read.
		if ctx.Err() != nil || !errors.Is(sub.Err(), hub.ErrSlowSubscriber) {
			f.out.Status = schedule.StatusFailed
			f.out.Error = fmt.Sprintf("jean2 stopped following the turn of session %s: %v", ses.ID, sub.Err())
			return f.out
		}
		sub.Close()
		if sub, err = s.hub.Subscribe(ctx, ses.ID, last); err != nil {
			return failed("attach to session %s again: %v", ses.ID, err)
		}
	}
}

func failed(format string, args ...any) schedule.Outcome {
	return schedule.Outcome{Status: schedule.StatusFailed, Error: fmt.Sprintf(format, args...)}
}

// scheduledFollow is one run's turn being followed.
type scheduledFollow struct {
	s       *Server
	run     schedule.Run
	turnID  string
	handled map[string]bool
	out     schedule.Outcome
}

// follow reads the session's events until the turn finished (done) or the subscription
// ended; last is the last seq read.
func (f *scheduledFollow) follow(ctx context.Context, sub *hub.Subscription) (last int64, done bool) {
	for ev := range sub.Events() {
		last = ev.Seq
		switch ev.Type {
		case hub.EventAskPending:
			var p hub.AskPendingPayload
			if json.Unmarshal(ev.Payload, &p) == nil {
				f.decide(ctx, p.Ask)
			}
		case harness.EventTurnFinished:
			var p harness.TurnFinished
			if json.Unmarshal(ev.Payload, &p) == nil && p.TurnID == f.turnID {
				f.finish(p)
				return last, true
			}
		}
	}
	return last, false
}

// finish sums the run up as jean2 run does: a refusal outranks everything, then a limit,
// then the turn's own end.
func (f *scheduledFollow) finish(p harness.TurnFinished) {
	f.out.Reason, f.out.Error = p.Reason, p.Error
	switch {
	case len(f.out.Refusals) > 0:
		f.out.Status = schedule.StatusRefused
	case p.Reason == harness.ReasonBudget || p.Reason == harness.ReasonCeiling:
		f.out.Status = schedule.StatusLimit
	case p.Reason == harness.ReasonDone:
		f.out.Status = schedule.StatusDone
	default:
		f.out.Status = schedule.StatusFailed
	}
}

// decide answers one ask by the run's policy; what it does not cover is refused at once.
func (f *scheduledFollow) decide(ctx context.Context, p hub.PendingAsk) {
	if f.handled[p.ID] {
		return
	}
	f.handled[p.ID] = true
	answer, refusal := f.run.Policy.Decide(ctx, p.Tool, p.Ask)
	if answer != nil {
		err := f.s.hub.Answer(ctx, p.SessionID, p.ID, answer)
		if err == nil || errors.Is(err, hub.ErrNoSuchAsk) {
			return // answered, or a person watching answered first
		}
		refusal = fmt.Sprintf("the prepared answer was not accepted: %v", err)
	}
	f.out.Refusals = append(f.out.Refusals, schedule.Refusal{AskID: p.ID, CallID: p.CallID, Tool: p.Tool, Ask: p.Ask, Reason: refusal})
	var err error
	if p.Ask.Type == tool.AskPermission {
		err = f.s.hub.Answer(ctx, p.SessionID, p.ID, json.RawMessage(`{"granted":false}`))
	} else {
		err = f.s.hub.Refuse(ctx, p.SessionID, p.ID, refusal)
	}
	if err != nil && !errors.Is(err, hub.ErrNoSuchAsk) {
		// Never left to wait for its timeout: the turn is stopped instead.
		f.s.log.Warn("scheduled session: refusing an ask failed; stopping the turn", "session", p.SessionID, "ask", p.ID, "error", err)
		_, _, _ = f.s.stop(ctx, p.SessionID)
	}
}

// scheduleHere says whether this instance can run a schedule's sessions: in a cluster,
// only one whose disk has the workspace's folder.
func (s *Server) scheduleHere(ctx context.Context, sc store.Schedule) bool {
	if s.node == nil {
		return true
	}
	ws, err := s.db.Workspace(ctx, sc.WorkspaceID)
	if err != nil {
		return false
	}
	fi, err := os.Stat(ws.Path)
	return err == nil && fi.IsDir()
}
