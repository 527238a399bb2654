package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
)

// Goal mode: a person states a completion condition for a session; after each turn of the
// session an evaluator (a model call given the condition and the transcript's recent part)
// says whether it is met, and while it is not the agent goes on with a new turn, until it
// is met, the goal's budget of turns is spent, or a person stops it.

// EventGoalChanged carries GoalChanged whenever a session's goal is set, cleared, judged or
// ends.
const EventGoalChanged = "goal.changed"

// Budgets of a goal, in turns.
const (
	DefaultGoalTurns = 10
	MaxGoalTurns     = 100
)

// States of a goal.
const (
	GoalActive      = "active"       // turns go on until the evaluator says it is met
	GoalMet         = "met"          // the evaluator said it is met
	GoalBudgetSpent = "budget spent" // MaxTurns turns ran and it was not met
	GoalStopped     = "stopped"      // a person stopped the turn or the evaluation
	GoalFailed      = "failed"       // a turn failed, or the evaluator could not judge (Error says)
)

// GoalContinuePrefix begins the user messages jean2 itself sends to go on towards a goal,
// so the model, the person and the clients can tell them from the person's own.
const GoalContinuePrefix = "[jean2 goal] "

// Limits of the evaluator's call.
const (
	goalEvalTimeout = 2 * time.Minute
	// goalTranscript is how much of the transcript's end, in bytes, the evaluator reads.
	goalTranscript = 12 << 10
	goalPartClip   = 1500
)

const goalSystem = `You judge whether a coding agent has met a goal a person set for it. You are given the goal's completion condition and the recent part of the conversation (the person's messages, the agent's answers, its tool calls and their results). Judge only from what the conversation shows. Answer with exactly one JSON object and nothing else: {"done": true or false, "reason": "one sentence"}. When not done, reason says what is still missing, as an instruction to the agent; when done, what shows the condition is met.`

// Goal is a session's goal, stored with it.
type Goal struct {
	Condition string `json:"condition"`
	MaxTurns  int    `json:"maxTurns"`
	State     string `json:"state"`
	// TurnsUsed counts the session's turns that ended while the goal was active.
	TurnsUsed int          `json:"turnsUsed"`
	Verdict   *GoalVerdict `json:"lastVerdict,omitempty"`
	// Error says why a failed goal failed.
	Error     string    `json:"error,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// GoalVerdict is the evaluator's answer.
type GoalVerdict struct {
	Done   bool   `json:"done"`
	Reason string `json:"reason"`
}

// GoalChanged is the payload of goal.changed; Goal is nil when the goal was cleared.
type GoalChanged struct {
	Goal *Goal `json:"goal"`
}

// goalRuns holds the cancel functions of the goal evaluations running, by session, so Stop
// reaches a session between its turns.
type goalRuns struct {
	mu sync.Mutex
	m  map[string]context.CancelCauseFunc
}

func (g *goalRuns) begin(sessionID string, cancel context.CancelCauseFunc) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]context.CancelCauseFunc{}
	}
	g.m[sessionID] = cancel
	g.mu.Unlock()
}

func (g *goalRuns) end(sessionID string) {
	g.mu.Lock()
	delete(g.m, sessionID)
	g.mu.Unlock()
}

// stop cancels the session's evaluation; false when none runs.
func (g *goalRuns) stop(sessionID string) bool {
	g.mu.Lock()
	cancel, ok := g.m[sessionID]
	g.mu.Unlock()
	if ok {
		cancel(errStopped)
	}
	return ok
}

// SetGoal sets a session's goal, active with no turn used: the end of the session's running
// turn, or of its next, is the first the evaluator judges. maxTurns 0 means
// DefaultGoalTurns.
func (h *Harness) SetGoal(ctx context.Context, sessionID, condition string, maxTurns int) (Goal, error) {
	condition = strings.TrimSpace(condition)
	switch {
	case condition == "":
		return Goal{}, fmt.Errorf("%w: set the goal of session %s: the condition is empty", ErrBadInput, sessionID)
	case maxTurns < 0 || maxTurns > MaxGoalTurns:
		return Goal{}, fmt.Errorf("%w: set the goal of session %s: maxTurns %d is not between 1 and %d", ErrBadInput, sessionID, maxTurns, MaxGoalTurns)
	case maxTurns == 0:
		maxTurns = DefaultGoalTurns
	}
	g := Goal{Condition: condition, MaxTurns: maxTurns, State: GoalActive}
	if err := h.saveGoal(ctx, sessionID, &g); err != nil {
		return Goal{}, err
	}
	return g, nil
}

// ClearGoal removes a session's goal: its turns are not judged any more.
func (h *Harness) ClearGoal(ctx context.Context, sessionID string) error {
	h.goals.stop(sessionID)
	return h.saveGoal(ctx, sessionID, nil)
}

// Goal returns a session's goal; nil when it has none.
func (h *Harness) Goal(ctx context.Context, sessionID string) (*Goal, error) {
	g, _, err := h.storedGoal(ctx, sessionID)
	return g, err
}

// storedGoal is the session's goal with its JSON as stored (for ReplaceSessionGoal).
func (h *Harness) storedGoal(ctx context.Context, sessionID string) (*Goal, json.RawMessage, error) {
	raw, err := h.opts.Store.SessionGoal(ctx, sessionID)
	if err != nil || raw == nil {
		return nil, nil, err
	}
	var g Goal
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, nil, fmt.Errorf("the goal stored with session %s: %w", sessionID, err)
	}
	return &g, raw, nil
}

// saveGoal stores g (nil clears it) and announces it.
func (h *Harness) saveGoal(ctx context.Context, sessionID string, g *Goal) error {
	_, err := h.replaceGoal(ctx, sessionID, nil, g)
	return err
}

// replaceGoal stores g (nil clears it) and announces it; with old not nil, only when the
// goal stored is still old (false when a person changed it meanwhile).
func (h *Harness) replaceGoal(ctx context.Context, sessionID string, old json.RawMessage, g *Goal) (bool, error) {
	var raw json.RawMessage
	if g != nil {
		g.UpdatedAt = time.Now().UTC()
		raw, _ = json.Marshal(g) // plain values: cannot fail
	}
	if old == nil {
		if err := h.opts.Store.SetSessionGoal(ctx, sessionID, raw); err != nil {
			return false, err
		}
	} else if ok, err := h.opts.Store.ReplaceSessionGoal(ctx, sessionID, old, raw); !ok || err != nil {
		return false, err
	}
	h.emitter(sessionID).emit(context.WithoutCancel(ctx), newEvent(EventGoalChanged, GoalChanged{Goal: g}))
	return true, nil
}

// afterTurn follows a turn's end, the session free: a message a person queued goes first;
// otherwise, when the session has an active goal, the turn is judged and, while the goal is
// not met and its budget lasts, a new turn goes on towards it.
func (h *Harness) afterTurn(sessionID string, t *turn) {
	// A turn a Stop hook did not let end goes on first; the goal judges the turn that
	// ends.
	next := t.stopContinuation()
	if next == nil {
		next = h.goalStep(t)
	}
	if next == nil || len(h.Queue(sessionID)) > 0 {
		h.sendQueued(sessionID)
		return
	}
	_, err := h.Start(context.WithoutCancel(h.base), sessionID, *next)
	switch {
	case err == nil, errors.Is(err, ErrBusy):
		// A person's turn started meanwhile: it is judged at its end.
	case errors.Is(err, ErrClosed):
		// The goal stays active; a turn the person starts after the restart goes on.
	default:
		h.endGoal(sessionID, GoalFailed, "the next turn towards the goal could not start: "+err.Error())
	}
}

// goalStep counts the turn against the session's active goal and judges it: the message
// of the turn to go on with, nil when the goal ended (met, budget spent, stopped, failed) or
// there is none.
func (h *Harness) goalStep(t *turn) *Input {
	if t.fam.depth != 0 {
		return nil // a subagent's turns serve its parent's
	}
	g, old, err := h.storedGoal(context.WithoutCancel(h.base), t.sessionID)
	if err != nil {
		h.log.Warn("read the session's goal after its turn", "session", t.sessionID, "error", err)
		return nil
	}
	if g == nil || g.State != GoalActive {
		return nil
	}
	g.TurnsUsed++
	switch t.endReason {
	case ReasonStopped:
		h.settleGoal(t.sessionID, old, g, GoalStopped, "")
		return nil
	case ReasonInterrupted:
		h.settleGoal(t.sessionID, old, g, GoalActive, "") // the turn after a restart goes on
		return nil
	case ReasonError:
		h.settleGoal(t.sessionID, old, g, GoalFailed, "the turn failed: "+t.endWhy)
		return nil
	}
	v, err := h.judgeGoal(t, g.Condition)
	switch {
	case errors.Is(err, errStopped):
		h.settleGoal(t.sessionID, old, g, GoalStopped, "")
		return nil
	case errors.Is(err, errClosing):
		h.settleGoal(t.sessionID, old, g, GoalActive, "") // judged after the next turn
		return nil
	case err != nil:
		h.settleGoal(t.sessionID, old, g, GoalFailed, "the evaluator could not judge the goal: "+err.Error())
		return nil
	}
	g.Verdict = &v
	switch {
	case v.Done:
		h.settleGoal(t.sessionID, old, g, GoalMet, "")
		return nil
	case g.TurnsUsed >= g.MaxTurns:
		h.settleGoal(t.sessionID, old, g, GoalBudgetSpent, "")
		return nil
	}
	if !h.settleGoal(t.sessionID, old, g, GoalActive, "") {
		return nil
	}
	return &Input{Text: GoalContinuePrefix + "Continue towards the goal: " + cmpOr(v.Reason, g.Condition)}
}

// settleGoal stores the goal in state, unless a person set or cleared the session's goal
// since old was read (theirs stands then). It reports whether it stored it.
func (h *Harness) settleGoal(sessionID string, old json.RawMessage, g *Goal, state, why string) bool {
	g.State, g.Error = state, why
	ok, err := h.replaceGoal(context.WithoutCancel(h.base), sessionID, old, g)
	if err != nil {
		h.log.Warn("store the session's goal", "session", sessionID, "state", state, "error", err)
	}
	return ok && err == nil
}

// endGoal ends the session's goal, if still active, in state.
func (h *Harness) endGoal(sessionID, state, why string) {
	g, old, err := h.storedGoal(context.WithoutCancel(h.base), sessionID)
	if err != nil || g == nil || g.State != GoalActive {
		return
	}
	h.settleGoal(sessionID, old, g, state, why)
}

// judgeGoal asks the session's model whether the condition is met by what the turn's
// transcript shows. Stop cancels it (errStopped), as Close does (errClosing).
func (h *Harness) judgeGoal(t *turn, condition string) (GoalVerdict, error) {
	ctx, cancel := context.WithCancelCause(h.base)
	defer cancel(nil)
	h.goals.begin(t.sessionID, cancel)
	defer h.goals.end(t.sessionID)
	ctx, cancelTime := context.WithTimeout(ctx, goalEvalTimeout)
	defer cancelTime()
	text := "The goal's completion condition:\n" + condition + "\n\nThe recent part of the conversation:\n" + recentTranscript(t.history)
	s, err := t.prov.Stream(ctx, provider.Request{Model: t.model, System: goalSystem, MaxTokens: 300,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: text}}})
	var res provider.Response
	if err == nil {
		res, err = provider.Collect(s)
	}
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errStopped) || errors.Is(cause, errClosing) {
			return GoalVerdict{}, cause
		}
		return GoalVerdict{}, fmt.Errorf("model %s: %w", t.model, err)
	}
	return parseVerdict(res.Text)
}

// parseVerdict reads the evaluator's strict JSON answer: one object with a boolean "done"
// (a code fence around it, and fields beside the two asked for, are forgiven); anything
// else is an error, never a guess.
func parseVerdict(text string) (GoalVerdict, error) {
	s := strings.TrimSpace(text)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	var v struct {
		Done   *bool  `json:"done"`
		Reason string `json:"reason"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err != nil || v.Done == nil || dec.More() {
		return GoalVerdict{}, fmt.Errorf("the answer was not the JSON asked for ({\"done\": bool, \"reason\": string}): %q", clip(text, 200))
	}
	return GoalVerdict{Done: *v.Done, Reason: strings.TrimSpace(v.Reason)}, nil
}

// recentTranscript is the end of the transcript as text, at most goalTranscript bytes,
// whole messages from the last backwards.
func recentTranscript(history []store.Message) string {
	var msgs []string
	size := 0
	for i := len(history) - 1; i >= 0 && size < goalTranscript; i-- {
		m := transcriptText(history[i])
		if m == "" {
			continue
		}
		if size+len(m) > goalTranscript && len(msgs) > 0 {
			break
		}
		msgs = append(msgs, m)
		size += len(m)
	}
	var b strings.Builder
	for i := len(msgs) - 1; i >= 0; i-- {
		b.WriteString(msgs[i])
		b.WriteString("\n")
	}
	return b.String()
}

// transcriptText is one message as the evaluator reads it.
func transcriptText(m store.Message) string {
	var b strings.Builder
	if c := strings.TrimSpace(m.Content); c != "" {
		fmt.Fprintf(&b, "[%s] %s\n", m.Role, clip(c, 4*goalPartClip))
	}
	for _, p := range m.Parts {
		switch p.Kind {
		case store.PartToolCall:
			fmt.Fprintf(&b, "[tool call %s] %s\n", p.ToolName, clip(p.Args, goalPartClip))
			if p.Result != "" {
				fmt.Fprintf(&b, "[tool result %s] %s\n", p.ToolName, clip(p.Result, goalPartClip))
			}
		case store.PartToolResult:
			fmt.Fprintf(&b, "[tool result %s] %s\n", p.ToolName, clip(p.Result, goalPartClip))
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
