package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// Subagents: a `task` call of a turn starts a child session in the same workspace, runs one
// turn in it and returns that turn's last answer. The child is a session like any other
// (stored, listed, restorable through its parent); what it may do is its parent's at most.
const (
	// TaskToolName is the name of the tool that starts a subagent.
	TaskToolName = "task"
	// MaxSubagentDepth is how deep children go: a session a person talks to is at depth 0,
	// its children at 1, theirs at 2; a session at MaxSubagentDepth starts none.
	MaxSubagentDepth = 2
	// MaxRunningChildren is how many children one turn runs at once; more task calls wait
	// for one of them to end.
	MaxRunningChildren = 5
	// taskTimeoutMs bounds a task call: a child's turn is bounded by the tree's work
	// budget, but may wait on a person's answers meanwhile.
	taskTimeoutMs = 2 * 60 * 60 * 1000
)

// Events a parent's log gets about its children (the children's own events are in their
// own logs: subscribe to the child's session to follow it).
const (
	EventSubagentStarted  = "subagent.started"
	EventSubagentFinished = "subagent.finished"
)

// SubagentStarted is the payload of subagent.started: CallID (a task call of the parent)
// started the child session SessionID.
type SubagentStarted struct {
	CallID      string   `json:"callId"`
	SessionID   string   `json:"sessionId"`
	Description string   `json:"description,omitempty"`
	Model       string   `json:"model"`
	Tools       []string `json:"tools"` // nil: all of the parent's
}

// SubagentFinished is the payload of subagent.finished: how the child's turn ended.
type SubagentFinished struct {
	CallID    string `json:"callId"`
	SessionID string `json:"sessionId"`
	Reason    string `json:"reason"`
	Error     string `json:"error,omitempty"`
}

// family is what a turn is in a tree of sessions: how deep, what it may use, and, when a
// task call of a running turn started it, that turn.
type family struct {
	depth        int
	tools        []string // the tools it may use; nil: every tool offered
	instructions string   // the parent's instructions for it
	parent       *turn    // the turn whose task call started it; nil for a turn a person started
	budget       *budget  // shared by the whole tree of turns
	// running holds a place for each of this turn's children running now.
	running chan struct{}
	// report, for a child, tells the parent's task call what the child does (as progress).
	report func(tool.Progress)
	turn   *turn // the turn itself, once prepared
}

// budget is a tree's work budget: every turn of the tree spends from it.
type budget struct {
	mu            sync.Mutex
	works, rounds int
}

func (b *budget) addRound() {
	b.mu.Lock()
	b.rounds++
	b.mu.Unlock()
}

func (b *budget) addWork() {
	b.mu.Lock()
	b.works++
	b.mu.Unlock()
}

func (b *budget) spent() (works, rounds int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.works, b.rounds
}

// spawned holds the families of children being started, until their turn is prepared.
type spawned struct {
	mu sync.Mutex
	m  map[string]*family
}

func (s *spawned) put(sessionID string, f *family) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*family{}
	}
	s.m[sessionID] = f
}

func (s *spawned) take(sessionID string) *family {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.m[sessionID]
	delete(s.m, sessionID)
	return f
}

// joinFamily gives a turn being prepared its place in its tree: the family a task call made
// for it, or, for a turn a person started, one read from the store (a child session a person
// talks to keeps its parent's limits on tools).
func (h *Harness) joinFamily(ctx context.Context, t *turn) error {
	if f := h.spawning.take(t.sessionID); f != nil {
		f.turn = t
		t.fam = f
		return nil
	}
	f := &family{budget: &budget{}, running: make(chan struct{}, MaxRunningChildren), turn: t}
	id := t.sessionID
	for f.depth <= MaxSubagentDepth {
		sub, err := h.opts.Store.Subagent(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return err
		}
		if id == t.sessionID {
			f.tools, f.instructions = sub.Tools, sub.Instructions
		}
		f.depth++
		id = sub.ParentSessionID
	}
	t.fam = f
	return nil
}

// countRound and countWork count a round of the turn, and one that ran work, in the turn and
// in its tree's budget.
func (t *turn) countRound() {
	t.rounds++
	t.fam.budget.addRound()
}

func (t *turn) countWork() {
	t.works++
	t.fam.budget.addWork()
}

// overBudget says whether the turn's tree has spent the work budget or reached the ceiling
// of rounds: a child's rounds count in its parent's budget.
func (t *turn) overBudget() (reason, why string, over bool) {
	works, rounds := t.fam.budget.spent()
	whose := "the turn used its"
	if works > t.works || rounds > t.rounds {
		whose = "the turn and its subagents used their"
	}
	if works >= t.workRounds {
		return ReasonBudget, fmt.Sprintf("%s work budget of %d rounds; send a message to let it go on", whose, t.workRounds), true
	}
	if rounds >= t.maxRounds {
		return ReasonCeiling, fmt.Sprintf("%s ceiling of %d rounds; send a message to let it go on", strings.Replace(whose, " used ", " reached ", 1), t.maxRounds), true
	}
	return "", "", false
}

// toolAllowed says whether the turn may use the tool, and why not.
func (t *turn) toolAllowed(name string) (bool, string) {
	if why := t.refuses(name); why != "" { // the session's agent (agents.go)
		return false, why
	}
	if name == TaskToolName && t.fam.depth >= MaxSubagentDepth {
		return false, fmt.Sprintf("this session is a subagent at depth %d, the deepest there may be: it may not start subagents; do the work itself", t.fam.depth)
	}
	if t.fam.tools != nil && !slices.Contains(t.fam.tools, name) {
		return false, fmt.Sprintf("tool %s is not among the tools this subagent was given (%s)", name, strings.Join(t.fam.tools, ", "))
	}
	return true, ""
}

// toolsForLLM are the tools the turn offers the model: the workspace's, narrowed to the
// family's.
func (t *turn) toolsForLLM(workspaceID string) []tool.Function {
	all := t.h.offered(workspaceID).ListForLLM()
	out := all[:0:0]
	for _, f := range all {
		if ok, _ := t.toolAllowed(f.Function.Name); ok {
			out = append(out, f)
		}
	}
	return out
}

// askSession is the session whose people answer the turn's asks: a child started by a task
// call asks the person of its root session (the ask names the child, hub.PendingAsk).
func (t *turn) askSession() string {
	f := t.fam
	for f.parent != nil {
		f = f.parent.fam
	}
	return f.turn.sessionID
}

// subagentPrompt is what the system prompt of a child's turn adds: that it is a subagent,
// and its parent's instructions.
func (t *turn) subagentPrompt() string {
	if t.fam.depth == 0 {
		return ""
	}
	p := "You are a subagent: another agent's task call started this session to do one piece of work. " +
		"Do it with the tools you have, then end with a complete, self-contained answer: your last message is all the other agent gets back."
	if strings.TrimSpace(t.fam.instructions) != "" {
		p += "\n\nInstructions for this task:\n" + t.fam.instructions
	}
	return p
}

// invoke runs one call of the turn: refused when the turn may not use the tool, denied or
// rewritten by PreToolUse hooks, and given what a task call needs to start a child.
// rewrote hears the input hooks rewrote the call's to, before it runs.
func (t *turn) invoke(ctx context.Context, call host.Call, rewrote func(json.RawMessage)) host.Outcome {
	refuse := func(res tool.Result) host.Outcome {
		return host.Outcome{CallID: call.CallID, Tool: call.Tool, Result: res, ModelText: string(res.ModelJSON())}
	}
	if ok, why := t.toolAllowed(call.Tool); !ok {
		return refuse(tool.Errorf("%s", why))
	}
	why, updated := t.preToolHooks(call)
	if why != "" {
		return refuse(tool.Errorf("denied by a PreToolUse hook: %s", why))
	}
	if updated != nil {
		// The rewritten input is checked as the model's would be: it is what runs, what the
		// person is asked about and what the call's part shows.
		if err := t.checkRewrite(call.Tool, updated); err != nil {
			t.reportHook(HookFailed{Event: HookPreToolUse, Tool: call.Tool, CallID: call.CallID, Error: err.Error()})
			return refuse(tool.Errorf("not run: %v", err))
		}
		call.Args = updated
		rewrote(updated)
	}
	if f := t.fam; f.report != nil {
		f.report(tool.Progress{Message: "→ " + call.Tool})
	}
	out := t.h.opts.Tools.Invoke(context.WithValue(ctx, spawnerKey{}, t), call)
	return t.postToolHooks(call, out)
}

// checkRewrite checks the input a PreToolUse hook rewrote a call's to against the tool's
// schema.
func (t *turn) checkRewrite(toolName string, updated json.RawMessage) error {
	if err := checkArgs(string(updated)); err != nil {
		return fmt.Errorf("a PreToolUse hook's updatedInput for %s: %w", toolName, err)
	}
	if err := t.h.opts.Tools.Registry().Validate(toolName, updated); err != nil {
		return fmt.Errorf("a PreToolUse hook's updatedInput for %s: %w", toolName, err)
	}
	return nil
}

// groupKind says with which calls of an answer a call may run at once (plan).
type groupKind int

const (
	runsAlone groupKind = iota
	runsWithReadOnly
	runsWithTasks // task calls: each child runs in its own turn, so they run together
)

func kindOf(tl tool.Tool, def tool.Definition) groupKind {
	if def.ReadOnly() {
		return runsWithReadOnly
	}
	if _, ok := tl.(taskTool); ok { // not a folder tool that took the name
		return runsWithTasks
	}
	return runsAlone
}

// spawnerKey carries the turn a call belongs to, for the task tool.
type spawnerKey struct{}

// taskIn are the task tool's arguments.
type taskIn struct {
	Description  string   `json:"description"`
	Prompt       string   `json:"prompt"`
	Instructions string   `json:"instructions"`
	Tools        []string `json:"tools"`
	Model        string   `json:"model"`
	Agent        string   `json:"agent"`
}

// TaskTool is the task tool: it starts a subagent. It runs only in a turn of this package's
// harness (which gives the call its turn); anywhere else it says so.
func TaskTool() tool.Tool {
	return taskTool{tool.Func{Def: tool.Definition{
		Name: TaskToolName,
		Description: "Start a subagent: a new session in this workspace that does one task and returns its final answer. " +
			"It sees nothing of this conversation: put all it needs in prompt. Task calls of one answer run at once.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"description":{"type":"string","description":"A few words for people"},` +
			`"prompt":{"type":"string","description":"The whole task"},` +
			`"instructions":{"type":"string","description":"Added to its system prompt"},` +
			`"tools":{"type":"array","items":{"type":"string"},"description":"Some of your tools (default: all)"},` +
			`"model":{"type":"string","description":"Default: yours"},` +
			`"agent":{"type":"string"}},` +
			`"required":["prompt"],"additionalProperties":false}`),
		Timeout: taskTimeoutMs,
	}, Run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
		var in taskIn
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Errorf("invalid arguments for task: %v", err)
		}
		if strings.TrimSpace(in.Prompt) == "" {
			return tool.Errorf("task: prompt is empty: say what the subagent is to do")
		}
		parent, _ := ctx.Value(spawnerKey{}).(*turn)
		if parent == nil {
			return tool.Errorf("task: a subagent can only be started from a session's turn (jean2 serve, jean2 chat), not from this call")
		}
		return parent.spawn(ctx, c, in)
	}}}
}

// taskTool is the built-in task tool, told apart from a tool that took its name.
type taskTool struct{ tool.Func }
