package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jean2/jean2/host"
)

// What hooks tell the model, and the turns a Stop hook asks for (docs/harness.md, "Hooks").

// HookContinuePrefix begins the user message jean2 sends when a Stop hook blocked the end of
// a turn: the model reads the hook's reason and goes on.
const HookContinuePrefix = "[jean2 Stop hook] "

// maxStopChain bounds the turns Stop hooks may ask for in a row, whatever they do with
// stop_hook_active: a hook that always blocks cannot keep the agent going for ever.
const maxStopChain = 5

// withHookNotes joins what PostToolUse hooks said to a call's result as the model reads
// it: a field "hookFeedback" of a JSON object (the usual result), text after it otherwise.
func withHookNotes(modelText string, notes []string) string {
	trimmed := strings.TrimSpace(modelText)
	if strings.HasPrefix(trimmed, "{") && strings.HasSuffix(trimmed, "}") && json.Valid([]byte(trimmed)) {
		fb, _ := json.Marshal(notes) // strings: cannot fail
		body := strings.TrimSpace(trimmed[:len(trimmed)-1])
		sep := ","
		if body == "{" {
			sep = ""
		}
		return body + sep + `"hookFeedback":` + string(fb) + "}"
	}
	return modelText + "\n\nPostToolUse hook feedback:\n" + strings.Join(notes, "\n")
}

// stopHooks runs the Stop hooks as the turn ends; a hook that blocks a turn that ended
// well leaves its reason for afterTurn, which goes on with a new turn.
func (t *turn) stopHooks(ws host.Workspace, reason string) {
	said := t.runHooks(ws, HookStop, "", "", map[string]any{"stop_hook_active": t.stopChain > 0, "reason": reason})
	if said.block == "" || reason != ReasonDone {
		return
	}
	if t.stopChain >= maxStopChain {
		t.reportHook(HookFailed{Event: HookStop, Error: fmt.Sprintf(
			"Stop hooks blocked the end of %d turns in a row; the turn ends anyway (the hook's reason: %s)", t.stopChain, firstLine(said.block))})
		return
	}
	t.stopBlock = said.block
}

// stopContinuation is the turn a Stop hook asked for, nil when none did.
func (t *turn) stopContinuation() *Input {
	if t.stopBlock == "" {
		return nil
	}
	return &Input{Text: HookContinuePrefix + "A Stop hook did not let the turn end: " + t.stopBlock, stopChain: t.stopChain + 1}
}

// preCompactHooks runs the PreCompact hooks before the turn compacts its conversation
// (trigger "auto"); their matchers match the trigger.
func (t *turn) preCompactHooks() {
	if len(t.hooks.commands(HookPreCompact, "auto")) == 0 {
		return
	}
	ws, err := t.h.opts.Store.Workspace(t.wctx, t.session.WorkspaceID)
	if err != nil {
		t.reportHook(HookFailed{Event: HookPreCompact, Error: "the session's workspace: " + err.Error()})
		return
	}
	t.runHooks(host.Workspace{ID: ws.ID, Path: ws.Path, Allowed: ws.AllowedPaths}, HookPreCompact, "auto", "",
		map[string]any{"trigger": "auto", "custom_instructions": ""})
}

// manualPreCompactHooks runs the PreCompact hooks of a compaction a person asked for
// (trigger "manual"), outside any turn: the hooks run as a turn's would, on the session's
// workspace, confined the same way.
func (h *Harness) manualPreCompactHooks(ctx context.Context, sessionID string, ws host.Workspace) error {
	facts, err := h.sessionFacts(ctx, sessionID)
	if err != nil {
		return err
	}
	t := &turn{h: h, sessionID: sessionID, ev: h.emitter(sessionID), facts: facts, ctx: ctx, wctx: context.WithoutCancel(ctx)}
	t.loadHooks()
	if len(t.hooks.commands(HookPreCompact, "manual")) == 0 {
		return nil
	}
	t.runHooks(ws, HookPreCompact, "manual", "", map[string]any{"trigger": "manual", "custom_instructions": ""})
	if ctx.Err() != nil {
		return errors.Join(ctx.Err(), context.Cause(ctx))
	}
	return nil
}
