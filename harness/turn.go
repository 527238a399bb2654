package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// preset is the session's agent (agents.go) as its files read when the turn started:
	// the tools it is offered and may run, and instructions for the system prompt.
	preset Agent
	// hooks are config.json's hooks as the turn's start read them (hooks.go).
	hooks Hooks
	// stopChain counts the turns before this one that Stop hooks asked for in a row;
	// stopBlock is the reason a Stop hook gave for going on after this one (hookflow.go).
	stopChain int
	stopBlock string

	// ctx is cancelled by Stop (errStopped) or Close (errClosing); calls link to it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// wctx is for the turn's own writes: not cancelled by Stop, so a stopped turn still
	// seals what it left.
	wctx context.Context
	done chan struct{} // closed when the turn is over and turn.finished is out
	// ended is set in the write that stores turn.finished, before the event goes out:
	// a client that sees turn.finished finds the session free for its next turn.
	ended atomic.Bool

	// fam is the turn's place in its tree of sessions (subagents.go).
	fam *family
	// endReason and endWhy say how the turn ended, for a parent waiting on it.
	endReason, endWhy string

	ev     *emitter
	snap   *snapshot // nil without snapshots
	ledger *tool.Ledger
	facts  *tool.SessionFacts

	history       []store.Message // the session's transcript as stored, kept current by the turn
	lastAnswer    string          // the last assistant message of the turn that was not dropped
	lastAny       string          // the last assistant message of the turn, dropped or not
	rounds, works int
	// workRounds and maxRounds are the turn's limits, fixed when it started.
	workRounds, maxRounds int
	// sysPrompt is the system prompt in effect when the turn started; instructions the
	// instruction files read at its first round (nil before).
	sysPrompt    string
	instructions *Instructions
	// agent is the part of the system prompt the skills and the memory files make
	// (agentPrompt), read at the turn's first round (nil before).
	agent *string
	// window is the context window of the session's model in tokens, 0 when unknown.
	window  int
	usage   provider.Usage
	pend    ops            // the last answer's writes, committed with turn.finished
	pendMsg *store.Message // and that answer, to join the history once stored

	// ws is the workspace as the turn's start read it, for its first round (later rounds
	// read it again).
	ws *host.Workspace

	// carry holds the writes of calls' outcomes, committed with the next write of the
	// turn (the next group's start, the next answer's first flush, the turn's end): the
	// next model call needs no commit to wait for. Parallel calls add to it at once.
	carryMu sync.Mutex
	carry   ops
}

// carryOn queues a write to be committed with the turn's next one.
func (t *turn) carryOn(o op) {
	t.carryMu.Lock()
	t.carry = append(t.carry, o)
	t.carryMu.Unlock()
}

// keepForEnd keeps writes the database could not take (a fault of its own) for the turn's
// end, which is retried until it is stored: a tool's outcome, an answer, their events.
func (t *turn) keepForEnd(o ops) {
	t.pend = append(t.pend, o...)
}

// takeCarry returns the queued writes, to commit, and forgets them.
func (t *turn) takeCarry() ops {
	t.carryMu.Lock()
	defer t.carryMu.Unlock()
	o := t.carry
	t.carry = nil
	return o
}

// prepare checks that the session can run a turn, stores the user's message (its images
// as parts) and announces the turn, in one transaction. Nothing is stored when the
// session's model cannot be resolved.
func (h *Harness) prepare(ctx context.Context, sessionID string, in Input) (*turn, error) {
	sess, ws, err := h.opts.Store.SessionWorkspace(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("start a turn: %w", err)
	}
	agent, err := h.sessionAgent(sess, ws.Path)
	if err != nil {
		return nil, fmt.Errorf("start a turn in session %s: %w", sessionID, err)
	}
	wantModel := sess.Model
	if agent.Model != "" {
		wantModel = agent.Model
	}
	prov, model, err := h.opts.Models.Model(ctx, sess.Provider, wantModel)
	if err != nil && agent.Model != "" {
		return nil, fmt.Errorf("start a turn in session %s: %w: agent %q (%s) names model %q, which provider %q cannot serve: %v",
			sessionID, ErrNoAgent, agent.Name, agent.Path, agent.Model, sess.Provider, err)
	}
	if err != nil {
		return nil, fmt.Errorf("start a turn in session %s: model %q of provider %q: %w", sessionID, wantModel, sess.Provider, err)
	}
	if prov == nil {
		return nil, fmt.Errorf("start a turn in session %s: no provider named %q is configured", sessionID, sess.Provider)
	}
	facts, err := h.sessionFacts(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("start a turn in session %s: %w", sessionID, err)
	}
	t := &turn{
		h: h, id: store.NewID("turn_"), sessionID: sessionID, session: sess, prov: prov, model: model, preset: agent,
		done:   make(chan struct{}),
		ws:     &host.Workspace{ID: ws.ID, Path: ws.Path, Allowed: ws.AllowedPaths},
		ev:     h.emitter(sessionID),
		ledger: tool.NewLedger(), facts: facts, stopChain: in.stopChain,
	}
	t.workRounds, t.maxRounds = h.limits()
	if err := h.joinFamily(ctx, t); err != nil {
		return nil, fmt.Errorf("start a turn in session %s: %w", sessionID, err)
	}
	t.sysPrompt = h.systemPrompt()
	t.window = h.windowOf(sess.Provider, model)
	user := store.Message{ID: store.NewID("msg_"), SessionID: sessionID, Role: store.RoleUser, Content: in.Text, Status: store.StatusComplete}
	for _, img := range in.Images {
		user.Parts = append(user.Parts, store.Part{Kind: store.PartImage, Status: store.StatusComplete, MediaType: img.MediaType, Data: img.Data})
	}
	for _, r := range in.Resources {
		user.Parts = append(user.Parts, r.part())
	}
	// The turn goes on whatever becomes of the request that started it, but its message
	// is stored only while the request waits for it.
	err = t.ev.commit(ctx, ops{func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		m, err := tx.AppendMessage(ctx, user)
		if err != nil {
			return nil, err
		}
		if err := tx.OpenTurn(ctx, store.OpenTurn{SessionID: sessionID, TurnID: t.id, UserMessageID: m.ID}); err != nil {
			return nil, err
		}
		t.userMsg = m
		return []store.NewEvent{newEvent(EventTurnStarted, TurnStarted{TurnID: t.id, UserMessageID: m.ID}), messageCreated(m)}, nil
	}})
	if err != nil {
		return nil, fmt.Errorf("start a turn in session %s: %w", sessionID, err)
	}
	t.ctx, t.cancel = context.WithCancelCause(h.base)
	t.wctx = context.WithoutCancel(t.ctx)
	return t, nil
}

// run plays the turn to its end and announces how it ended.
func (t *turn) run() {
	defer t.cancel(nil)
	t.snap = t.beginSnapshot()
	ws := *t.ws // the first round takes t.ws
	t.loadHooks()
	// A subagent's session runs its tool hooks; SessionStart and Stop are its root's.
	root := t.fam.depth == 0
	if root && t.userMsg.Seq == 1 {
		t.runHooks(ws, HookSessionStart, "", "", map[string]any{"source": "startup"})
	}
	reason, why := t.loop()
	t.endReason, t.endWhy = reason, why
	if root {
		t.stopHooks(ws, reason)
	}
	t.finish(reason, why)
	t.nameSession(reason)
}

// loop runs rounds until one ends the turn, and says why it ended.
func (t *turn) loop() (reason, why string) {
	if err := t.loadHistory(); err != nil {
		return ReasonError, err.Error()
	}
	for {
		if r, w, stop := t.stopped(); stop {
			return r, w
		}
		t.countRound()
		ans, err := t.answer()
		if ans == nil || err != nil {
			// What the answer had is committed.
			if ans != nil {
				t.history = append(t.history, ans.msg)
			}
			if r, w, stop := t.stopped(); stop {
				return r, w
			}
			if err == nil {
				err = errors.New("the model gave no answer")
			}
			return ReasonError, err.Error()
		}
		if len(ans.calls) == 0 {
			// Its writes and events go out with turn.finished, in one commit.
			t.pend, t.pendMsg = append(t.pend, ans.pend...), &ans.msg
			if r, w, stop := t.stopped(); stop {
				return r, w
			}
			return ReasonDone, ""
		}
		// With its writes, the first calls' start is committed; a Stop seals the calls.
		if err := t.runCalls(&ans.msg, ans.groups, ans.ws, ans.pend); err != nil {
			return ReasonError, err.Error()
		}
		t.history = append(t.history, ans.msg)
		if !ans.interactiveOnly {
			t.countWork()
		}
		if r, w, stop := t.stopped(); stop {
			return r, w
		}
		if r, w, over := t.overBudget(); over {
			return r, w
		}
	}
}

// stopped reports whether Stop or Close ended the turn, with the reason to give.
func (t *turn) stopped() (reason, why string, stop bool) {
	if t.ctx.Err() == nil {
		return "", "", false
	}
	cause := context.Cause(t.ctx)
	if errors.Is(cause, errClosing) || errors.Is(cause, errLeaseLost) {
		return ReasonInterrupted, cause.Error(), true
	}
	return ReasonStopped, cause.Error(), true
}

// workspace reads the session's workspace as a call is to see it: re-read each round (the
// first takes what the turn's start read), so a change made meanwhile (an allowed path
// added) counts from the next round on.
func (t *turn) workspace() (host.Workspace, error) {
	if w := t.ws; w != nil {
		t.ws = nil
		return *w, nil
	}
	ws, err := t.h.opts.Store.Workspace(t.wctx, t.session.WorkspaceID)
	if err != nil {
		return host.Workspace{}, fmt.Errorf("the workspace of session %s: %w", t.sessionID, err)
	}
	return host.Workspace{ID: ws.ID, Path: ws.Path, Allowed: ws.AllowedPaths}, nil
}

// system is the system prompt of the turn's requests: the one in effect when the turn
// started, the folder the tools work in, and the instruction files (read once per turn, at
// its first round: a file changed during the turn counts from the next).
func (t *turn) system(ws host.Workspace) string {
	var b strings.Builder
	b.WriteString(t.sysPrompt)
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString("The workspace folder is ")
	b.WriteString(ws.Path)
	b.WriteString("; tools resolve relative paths against it.")
	if t.instructions == nil {
		in := ReadInstructions(ws.Path, t.h.opts.Home)
		t.instructions = &in
	}
	if p := t.instructions.prompt(); p != "" {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	if t.agent == nil {
		p := agentPrompt(t.h.opts.Home, ws.Path, t.h.opts.SkillsRead)
		t.agent = &p
	}
	if *t.agent != "" {
		b.WriteString("\n\n")
		b.WriteString(*t.agent)
	}
	if p := t.subagentPrompt(); p != "" {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	if p := t.preset.prompt(); p != "" {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	return b.String()
}

// beginSnapshot starts the turn's undo snapshot beside the first model call; the turn
// waits for it before its first tool call and at its end.
func (t *turn) beginSnapshot() *snapshot {
	s := t.h.opts.Snapshots
	if s == nil || t.fam.parent != nil {
		// A child started by a task call takes none: it runs inside its parent's turn,
		// whose snapshot sees what it changes.
		return nil
	}
	snap := &snapshot{done: make(chan struct{})}
	var ws host.Workspace
	var err error
	if t.ws != nil {
		ws = *t.ws // the first round takes it too
	} else {
		ws, err = t.workspace()
	}
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
			// The person is asked before the first tool call (undoGate).
			t.h.log.Warn("no snapshot for this turn", "session", t.sessionID, "turn", t.id, "roots", roots, "error", err)
			snap.err, snap.roots = err, roots
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
// turn.finished, committed with the last answer's writes.
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
	if t.snap != nil && t.snap.noUndo != "" {
		for _, root := range t.snap.roots {
			changes = append(changes, undo.UntrackedChange(root, t.snap.noUndo))
		}
	}
	target := t.lastAnswer
	if target == "" {
		target = t.lastAny
	}
	pend := append(t.takeCarry(), t.pend...)
	t.pend = nil
	var ledger op
	switch {
	case target == "":
		if len(changes) > 0 {
			t.h.log.Error("the turn changed files but drew no answer to file its ledger under", "session", t.sessionID, "turn", t.id, "changes", len(changes))
		}
		t.discard(ut)
	case ut != nil:
		// Undo files under a stored message, in writes of its own. Writes not stored go
		// with the turn's end, which is retried while the database is down.
		if err := t.ev.commit(t.wctx, pend); err != nil {
			t.h.log.Error("store the turn's last answer", "session", t.sessionID, "turn", t.id, "error", err)
		} else {
			pend = nil
		}
		// Fenced by the turn's lease, as its other writes.
		err := t.ev.commit(t.wctx, ops{func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
			_, err := ut.FileIn(ctx, tx, target)
			return nil, err
		}})
		if err == nil {
			ut.Filed()
		} else {
			t.h.log.Error("file the turn's ledger with its undo record", "session", t.sessionID, "turn", t.id, "message", target, "error", err)
			t.discard(ut)
			if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrLeaseLost) {
				ledger = t.fileLedger(target, changes)
			}
		}
	default:
		ledger = t.fileLedger(target, changes)
	}
	if reason == ReasonDone {
		why = ""
	}
	end := t.closeTurn(TurnFinished{
		TurnID: t.id, Reason: reason, Error: why, MessageID: target, Rounds: t.rounds,
		Changed: Summarize(changes), Usage: t.usage,
	})
	t.storeEnd(pend, ledger, end)
	if t.pendMsg != nil {
		t.history = append(t.history, *t.pendMsg)
	}
	t.keepHistory()
}

// Retries of a turn's end the database failed to store: the first after endRetryMin, each
// next twice as late, at most endRetryMax apart.
const (
	endRetryMin = 100 * time.Millisecond
	endRetryMax = 5 * time.Second
)

// storeEnd commits the turn's last writes (pend), its ledger (when not nil) and its end.
// While the database fails to serve the write (down, restarting: store.Fault) it tries
// again until it is stored or the harness closes (the next start seals the turn then): a
// turn never stays "streaming" with no turn.finished. A write the database refused is tried
// once more without the ledger, so the answer and turn.finished still go out; a turn whose
// lease was lost (store.ErrLeaseLost) writes nothing.
func (t *turn) storeEnd(pend ops, ledger, end op) {
	all := append(slices.Clone(pend), end)
	if ledger != nil {
		all = append(slices.Clone(pend), ledger, end)
	}
	wait := endRetryMin
	for attempt := 1; ; attempt++ {
		err := t.ev.commit(t.wctx, all)
		if err != nil {
			// closeTurn marked the turn ended inside the transaction that did not
			// commit: the session stays claimed while its end is retried.
			t.ended.Store(false)
		}
		switch {
		case err == nil:
			if attempt > 1 {
				t.h.log.Info("stored the end of the turn once the database was back", "session", t.sessionID, "turn", t.id, "attempts", attempt)
			}
			return
		case errors.Is(err, store.ErrLeaseLost):
			t.h.log.Error("the end of the turn is not stored: another instance took the session over and sealed the turn",
				"session", t.sessionID, "turn", t.id, "error", err)
			return
		case store.Fault(err) == "":
			if ledger == nil {
				t.h.log.Error("store the end of the turn", "session", t.sessionID, "turn", t.id, "error", err)
				return
			}
			// Whatever kept the ledger from being filed, the answer and turn.finished
			// still go out.
			t.h.log.Error("store the end of the turn with its ledger; storing it without", "session", t.sessionID, "turn", t.id, "error", err)
			all, ledger = append(slices.Clone(pend), end), nil
			continue
		}
		t.h.log.Warn("the database failed to store the end of the turn; retrying", "session", t.sessionID, "turn", t.id,
			"attempt", attempt, "retry_in", wait, "error", err)
		select {
		case <-time.After(wait):
		case <-t.h.base.Done():
			t.h.log.Error("the server is closing before the end of the turn could be stored: its next start seals it",
				"session", t.sessionID, "turn", t.id, "error", err)
			return
		}
		wait = min(2*wait, endRetryMax)
	}
}

// closeTurn is the write that ends the turn: its open-turn record goes (crash recovery
// looks no further), and turn.finished is announced.
func (t *turn) closeTurn(fin TurnFinished) op {
	return func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		if err := tx.CloseTurn(ctx, t.sessionID, t.id); err != nil {
			return nil, err
		}
		if err := t.h.releaseLeaseIn(ctx, tx, t.sessionID); err != nil {
			return nil, err
		}
		t.ended.Store(true)
		return []store.NewEvent{newEvent(EventTurnFinished, fin)}, nil
	}
}

// fileLedger is the write of the turn's ledger under target.
func (t *turn) fileLedger(target string, changes []tool.Change) op {
	return func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		if _, err := tx.FileLedger(ctx, t.sessionID, target, changes); err != nil {
			return nil, fmt.Errorf("file the turn's ledger (%d changes): %w", len(changes), err)
		}
		return nil, nil
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
