package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// spawn runs a task call of the turn: it starts the child session, waits for its turn to
// end and returns the child's last answer. Stopping the call (the parent's Stop) stops the
// child; the child's changes join the parent turn's ledger, so the parent's "Changed N
// files" and Restore include them.
func (t *turn) spawn(ctx context.Context, c *tool.Context, in taskIn) tool.Result {
	if t.fam.depth >= MaxSubagentDepth {
		_, why := t.toolAllowed(TaskToolName)
		return tool.Errorf("task: %s", why)
	}
	tools, err := t.childTools(in.Tools)
	if err != nil {
		return tool.Errorf("task: %v", err)
	}
	model := t.session.Model
	if in.Model != "" {
		if _, _, err := t.h.opts.Models.Model(ctx, t.session.Provider, in.Model); err != nil {
			return tool.Errorf("task: model %q of provider %q: %v", in.Model, t.session.Provider, err)
		}
		model = in.Model
	}
	select {
	case t.fam.running <- struct{}{}:
	default:
		c.Progress(tool.Progress{Message: fmt.Sprintf("waiting: %d subagents are running, the most at once", MaxRunningChildren)})
		select {
		case t.fam.running <- struct{}{}:
		case <-ctx.Done():
			return tool.Errorf("task: stopped while waiting for a subagent to end: %v", context.Cause(ctx))
		}
	}
	defer func() { <-t.fam.running }()
	child, err := t.startChild(ctx, c, in, tools, model)
	if err != nil {
		return tool.Errorf("task: %v", err)
	}
	return t.awaitChild(ctx, c, child)
}

// childTools checks the tools a task call asks for against the turn's own: a child may have
// fewer, never more. nil asks for all of the turn's.
func (t *turn) childTools(asked []string) ([]string, error) {
	if asked == nil && (t.fam.tools != nil || !t.preset.Narrows()) {
		return t.fam.tools, nil
	}
	var mine []string
	for _, f := range t.toolsForLLM(t.session.WorkspaceID) {
		mine = append(mine, f.Function.Name)
	}
	if asked == nil {
		// The session's agent narrows the turn: "all of mine" is the tools it has.
		return mine, nil
	}
	out := []string{}
	for _, name := range asked {
		if !slices.Contains(mine, name) {
			return nil, fmt.Errorf("tool %q is not one of yours, and a subagent may only have tools you have: %s", name, strings.Join(mine, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// startChild stores the child session and starts its turn on the prompt.
func (t *turn) startChild(ctx context.Context, c *tool.Context, in taskIn, tools []string, model string) (*turn, error) {
	title := in.Description
	if title == "" {
		title = firstLineTitle(in.Prompt)
	}
	sess, _, err := t.h.opts.Store.CreateChildSession(ctx,
		store.Session{WorkspaceID: t.session.WorkspaceID, Title: title, Provider: t.session.Provider, Model: model},
		store.Subagent{ParentSessionID: t.sessionID, ParentCallID: c.CallID, Tools: tools, Instructions: in.Instructions,
			Agent: in.Agent, Description: in.Description})
	if err != nil {
		return nil, err
	}
	label := "[" + title + "] "
	fam := &family{depth: t.fam.depth + 1, tools: tools, instructions: in.Instructions, parent: t, budget: t.fam.budget,
		running: make(chan struct{}, MaxRunningChildren), report: func(p tool.Progress) {
			p.Message = label + p.Message
			c.Progress(p)
		}}
	t.h.spawning.put(sess.ID, fam)
	_, err = t.h.Start(ctx, sess.ID, Input{Text: in.Prompt})
	t.h.spawning.take(sess.ID) // Start took it, unless it failed before preparing the turn
	if err != nil {
		return nil, fmt.Errorf("start the subagent's turn in session %s: %w", sess.ID, err)
	}
	t.ev.emit(t.wctx, newEvent(EventSubagentStarted, SubagentStarted{CallID: c.CallID, SessionID: sess.ID,
		Description: in.Description, Model: model, Tools: tools}))
	c.Progress(tool.Progress{Message: label + "subagent " + sess.ID + " started", Data: sessionData(sess.ID)})
	return fam.turn, nil
}

// awaitChild waits for the child's turn to end (stopping it when the call is stopped),
// hands its changes to the turn's ledger and returns its last answer.
func (t *turn) awaitChild(ctx context.Context, c *tool.Context, child *turn) tool.Result {
	stop := context.AfterFunc(ctx, func() { t.h.Stop(child.sessionID) })
	<-child.done
	stop()
	for _, ch := range child.ledger.Changes() {
		t.ledger.Record(ch)
	}
	reason, why := child.endReason, child.endWhy
	t.ev.emit(t.wctx, newEvent(EventSubagentFinished, SubagentFinished{CallID: c.CallID, SessionID: child.sessionID, Reason: reason, Error: why}))
	answer := lastAnswerText(child.history)
	viz := structured(map[string]any{"sessionId": child.sessionID, "reason": reason, "answer": answer})
	switch {
	case reason == ReasonDone:
		return tool.Result{Success: true, Result: jsonString(answer), Visualization: viz}
	case answer != "":
		return tool.Result{Success: true, Visualization: viz,
			Result: jsonString(fmt.Sprintf("[the subagent's turn ended early (%s: %s); its last answer:]\n%s", reason, why, answer))}
	}
	return tool.Result{Success: false, Visualization: viz,
		Error: fmt.Sprintf("the subagent (session %s) ended with no answer: %s: %s", child.sessionID, reason, why)}
}

// lastAnswerText is the text of the last assistant message of a transcript.
func lastAnswerText(history []store.Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		if m.Role != store.RoleAssistant {
			continue
		}
		if s := strings.TrimSpace(m.Content); s != "" { // the text of its text parts
			return s
		}
	}
	return ""
}

// jsonString is s as a JSON string.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string: cannot fail
	return b
}

// sessionData is the progress data naming a child session, for clients to link to it.
func sessionData(sessionID string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"sessionId": sessionID})
	return b
}

// structured is a structured-response visualization of data.
func structured(data any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": tool.VizStructuredResponse, "data": data})
	return b
}
