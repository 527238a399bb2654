package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/undo"
)

// turn is one running turn: a user's message and the rounds that answer it. Its fields are
// the turn goroutine's own, except where noted.
type turn struct {
	h         *Harness
	id        string
	sessionID string
	session   store.Session
	prov      provider.Provider
	model     string
	userMsg   store.Message
	images    []provider.Image // the user message's, sent with it during this turn

	// ctx is cancelled by Stop (errStopped) or Close (errClosing); calls link to it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// wctx is for the turn's own writes: not cancelled by Stop, so a stopped turn still
	// seals what it left.
	wctx context.Context
	done chan struct{} // closed when the turn is over and turn.finished is out

	ev     *emitter
	snap   *snapshot // nil without snapshots
	ledger *tool.Ledger
	facts  *tool.SessionFacts

	history       []store.Message // the session's transcript as stored, kept current by the turn
	lastAnswer    string          // the last assistant message of the turn that was not dropped
	lastAny       string          // the last assistant message of the turn, dropped or not
	rounds, works int
	usage         provider.Usage
	unpublished   []store.NewEvent // the last answer's events, to go out with turn.finished
}

// prepare checks that the session can run a turn, stores the user's message and announces
// the turn. Nothing is stored when the session's model cannot be resolved.
func (h *Harness) prepare(ctx context.Context, sessionID string, in Input) (*turn, error) {
	sess, err := h.opts.Store.Session(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("start a turn: %w", err)
	}
	if _, err := h.opts.Store.Workspace(ctx, sess.WorkspaceID); err != nil {
		return nil, fmt.Errorf("start a turn in session %s: its workspace: %w", sessionID, err)
	}
	prov, model, err := h.opts.Models.Model(ctx, sess.Provider, sess.Model)
	if err != nil {
		return nil, fmt.Errorf("start a turn in session %s: model %q of provider %q: %w", sessionID, sess.Model, sess.Provider, err)
	}
	if prov == nil {
		return nil, fmt.Errorf("start a turn in session %s: no provider named %q is configured", sessionID, sess.Provider)
	}
	user, err := h.opts.Store.AppendMessage(ctx, store.Message{SessionID: sessionID, Role: store.RoleUser, Content: in.Text, Status: store.StatusComplete})
	if err != nil {
		return nil, fmt.Errorf("start a turn in session %s: %w", sessionID, err)
	}
	t := &turn{
		h: h, id: store.NewID("turn_"), sessionID: sessionID, session: sess, prov: prov, model: model,
		userMsg: user, images: in.Images, done: make(chan struct{}),
		ev:     &emitter{pub: h.opts.Events, sessionID: sessionID, log: h.log},
		ledger: tool.NewLedger(), facts: h.sessionFacts(sessionID),
	}
	t.ctx, t.cancel = context.WithCancelCause(h.base)
	t.wctx = context.WithoutCancel(t.ctx)
	// The turn goes on whatever becomes of the request that started it.
	t.ev.emit(context.WithoutCancel(ctx), newEvent(EventTurnStarted, TurnStarted{TurnID: t.id, UserMessageID: user.ID}), messageCreated(user))
	return t, nil
}

// run plays the turn to its end and announces how it ended.
func (t *turn) run() {
	defer t.cancel(nil)
	t.snap = t.beginSnapshot()
	reason, why := t.loop()
	t.finish(reason, why)
}

// loop runs rounds until one ends the turn, and says why it ended.
func (t *turn) loop() (reason, why string) {
	opts := &t.h.opts
	history, err := opts.Store.ListMessages(t.wctx, t.sessionID)
	if err != nil {
		return ReasonError, fmt.Sprintf("could not read the transcript: %v", err)
	}
	t.history = history
	for {
		if r, w, stop := t.stopped(); stop {
			return r, w
		}
		t.rounds++
		ans, err := t.answer()
		if ans != nil {
			t.history = append(t.history, ans.msg)
		}
		if r, w, stop := t.stopped(); stop {
			return r, w
		}
		if err != nil {
			return ReasonError, err.Error()
		}
		msg := &t.history[len(t.history)-1]
		if len(ans.calls) == 0 {
			// Its events go out with turn.finished, in one write.
			t.unpublished = ans.batch
			return ReasonDone, ""
		}
		t.runCalls(msg, ans.groups, ans.ws, ans.batch)
		if !ans.interactiveOnly {
			t.works++
		}
		if r, w, stop := t.stopped(); stop {
			return r, w
		}
		if t.works >= opts.WorkRounds {
			return ReasonBudget, fmt.Sprintf("the turn used its work budget of %d rounds; send a message to let it go on", opts.WorkRounds)
		}
		if t.rounds >= opts.MaxRounds {
			return ReasonCeiling, fmt.Sprintf("the turn reached the ceiling of %d rounds; send a message to let it go on", opts.MaxRounds)
		}
	}
}

// stopped reports whether Stop or Close ended the turn, with the reason to give.
func (t *turn) stopped() (reason, why string, stop bool) {
	if t.ctx.Err() == nil {
		return "", "", false
	}
	cause := context.Cause(t.ctx)
	if errors.Is(cause, errClosing) {
		return ReasonInterrupted, cause.Error(), true
	}
	return ReasonStopped, cause.Error(), true
}

// workspace reads the session's workspace as a call is to see it: re-read each round, so a
// change made meanwhile (an allowed path added) counts from the next round on.
func (t *turn) workspace() (host.Workspace, error) {
	ws, err := t.h.opts.Store.Workspace(t.wctx, t.session.WorkspaceID)
	if err != nil {
		return host.Workspace{}, fmt.Errorf("the workspace of session %s: %w", t.sessionID, err)
	}
	return host.Workspace{ID: ws.ID, Path: ws.Path, Allowed: ws.AllowedPaths}, nil
}

// system is the system prompt of the turn's requests: the configured one and the folder
// the tools work in.
func (t *turn) system(ws host.Workspace) string {
	var b strings.Builder
	b.WriteString(t.h.opts.System)
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString("The workspace folder is ")
	b.WriteString(ws.Path)
	b.WriteString("; tools resolve relative paths against it.")
	return b.String()
}

// beginSnapshot starts the turn's undo snapshot beside the first model call; the turn
// waits for it before its first tool call and at its end.
func (t *turn) beginSnapshot() *snapshot {
	s := t.h.opts.Snapshots
	if s == nil {
		return nil
	}
	snap := &snapshot{done: make(chan struct{})}
	ws, err := t.workspace()
	if err != nil {
		t.h.log.Warn("no snapshot for this turn", "session", t.sessionID, "turn", t.id, "error", err)
		close(snap.done)
		return snap
	}
	roots := append([]string{ws.Path}, ws.Allowed...)
	go func() {
		defer close(snap.done)
		ut, err := s.Begin(t.ctx, undo.TurnSpec{ID: t.id, SessionID: t.sessionID, Roots: roots})
		if err != nil {
			// The turn still runs; its ledger then holds what went through ctx.fs only.
			t.h.log.Warn("no snapshot for this turn: changes made other than through ctx.fs will not be on its ledger",
				"session", t.sessionID, "turn", t.id, "roots", roots, "error", err)
			return
		}
		for _, w := range ut.Warnings() {
			t.h.log.Warn("snapshot of the turn", "session", t.sessionID, "turn", t.id, "warning", w)
		}
		snap.turn = ut
	}()
	return snap
}

// finish files the turn's ledger under its last assistant message and publishes
// turn.finished.
func (t *turn) finish(reason, why string) {
	ut := t.snap.wait()
	changes := t.ledger.Changes()
	if ut != nil {
		all, err := ut.Finish(t.wctx, changes)
		if err != nil {
			t.h.log.Error("finish the turn's snapshot: the ledger keeps the changes made through ctx.fs only",
				"session", t.sessionID, "turn", t.id, "error", err)
			t.discard(ut)
			ut = nil
		} else {
			changes = all
		}
	}
	target := t.lastAnswer
	if target == "" {
		target = t.lastAny
	}
	switch {
	case target == "":
		if len(changes) > 0 {
			t.h.log.Error("the turn changed files but drew no answer to file its ledger under", "session", t.sessionID, "turn", t.id, "changes", len(changes))
		}
		t.discard(ut)
	case ut != nil:
		if _, err := ut.File(t.wctx, t.h.opts.Store, target); err != nil {
			t.h.log.Error("file the turn's ledger with its undo record", "session", t.sessionID, "turn", t.id, "message", target, "error", err)
			t.discard(ut)
			if !errors.Is(err, store.ErrConflict) {
				t.fileLedger(target, changes)
			}
		}
	default:
		t.fileLedger(target, changes)
	}
	if reason == ReasonDone {
		why = ""
	}
	t.ev.emit(t.wctx, append(t.unpublished, newEvent(EventTurnFinished, TurnFinished{
		TurnID: t.id, Reason: reason, Error: why, MessageID: target, Rounds: t.rounds,
		Changed: Summarize(changes), Usage: t.usage,
	}))...)
}

func (t *turn) fileLedger(target string, changes []tool.Change) {
	if _, err := t.h.opts.Store.FileLedger(t.wctx, t.sessionID, target, changes); err != nil {
		t.h.log.Error("file the turn's ledger", "session", t.sessionID, "turn", t.id, "message", target, "changes", len(changes), "error", err)
	}
}

func (t *turn) discard(ut *undo.Turn) {
	if ut == nil {
		return
	}
	if err := ut.Discard(); err != nil {
		t.h.log.Warn("discard the turn's snapshot", "session", t.sessionID, "turn", t.id, "error", err)
	}
}
