package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// Hook events, named as Claude Code names them.
const (
	HookPreToolUse   = "PreToolUse"
	HookPostToolUse  = "PostToolUse"
	HookSessionStart = "SessionStart"
	HookStop         = "Stop"
	HookPreCompact   = "PreCompact"
)

// Limits of a hook's run.
const (
	// DefaultHookTimeout is a hook's time when its "timeout" gives none; MaxHookTimeout the
	// most it may ask for.
	DefaultHookTimeout = 30 * time.Second
	MaxHookTimeout     = 10 * time.Minute
	// maxHookInput bounds the JSON a hook reads on stdin: it travels in the command's own
	// text (one argument of at most 128 KiB to the kernel).
	maxHookInput = 96 << 10
	// hookShell is the tool a hook's command runs through: confined as the model's commands.
	hookShell = "shell"
)

// EventHookFailed is published on the session's log when a hook failed, timed out or was
// not run; the turn goes on as if it had allowed.
const EventHookFailed = "hook.failed"

// HookFailed is the payload of hook.failed.
type HookFailed struct {
	Event   string `json:"event"`
	Command string `json:"command,omitempty"`
	Tool    string `json:"tool,omitempty"`
	CallID  string `json:"callId,omitempty"`
	Error   string `json:"error"`
}

// HookCommand is one command to run at an event (Claude Code's {"type":"command",
// "command", "timeout" in seconds}).
type HookCommand struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout"`
}

// HookMatcher is the commands of an event for the tools whose name matches Matcher (a
// regular expression, anchored; "" or "*" matches every tool). Claude Code's tool names
// match their jean2 built-ins ("Bash" matches shell).
type HookMatcher struct {
	Matcher string        `json:"matcher"`
	Hooks   []HookCommand `json:"hooks"`
}

// Hooks are the "hooks" of $JEAN2_HOME/config.json, by event.
type Hooks map[string][]HookMatcher

// ReadHooks reads the hooks of $JEAN2_HOME/config.json; none when there is no file. It is
// read at each turn's start, so a saved change counts at the next turn.
func ReadHooks(home string) (Hooks, error) {
	if home == "" {
		return nil, nil
	}
	path := filepath.Join(home, "config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the hooks of %s: %w", path, err)
	}
	var cfg struct {
		Hooks Hooks `json:"hooks"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("the hooks of %s: %w", path, err)
	}
	for event, ms := range cfg.Hooks {
		switch event {
		case HookPreToolUse, HookPostToolUse, HookSessionStart, HookStop, HookPreCompact:
		default:
			return nil, fmt.Errorf("the hooks of %s: event %q is not one jean2 runs (PreToolUse, PostToolUse, SessionStart, Stop, PreCompact)", path, event)
		}
		for _, m := range ms {
			if _, err := matcherPattern(m.Matcher); err != nil {
				return nil, fmt.Errorf("the hooks of %s: %s matcher %q: %w", path, event, m.Matcher, err)
			}
		}
	}
	return cfg.Hooks, nil
}

// matcherPattern compiles a matcher, Claude Code's tool names turned into jean2's.
func matcherPattern(m string) (*regexp.Regexp, error) {
	if m == "" || m == "*" {
		return nil, nil
	}
	alts := strings.Split(m, "|")
	for i, a := range alts {
		if j, ok := claudeTools[strings.TrimSpace(a)]; ok {
			alts[i] = regexp.QuoteMeta(j)
		}
	}
	return regexp.Compile("^(?:" + strings.Join(alts, "|") + ")$")
}

// commands are the hook commands of an event for a tool ("" for events without one).
func (hs Hooks) commands(event, toolName string) []HookCommand {
	var out []HookCommand
	for _, m := range hs[event] {
		re, _ := matcherPattern(m.Matcher) // checked by ReadHooks
		if re != nil && toolName != "" && !re.MatchString(toolName) {
			continue
		}
		out = append(out, m.Hooks...)
	}
	return out
}

// hookRun is what came of one hook command.
type hookRun struct {
	exitCode       int
	stdout, stderr string
}

// hookOutcome is what the hooks of an event said, by Claude Code's rules: block is the
// reason the first hook that blocked gave (PreToolUse: the call is denied; Stop: the agent
// is to go on), notes what the model is to read beside a call's result (PostToolUse).
type hookOutcome struct {
	block string
	notes []string
	// input is the tool input PreToolUse hooks rewrote the call's to (updatedInput), nil
	// when none did; each hook after the one that rewrote it reads the new input.
	input json.RawMessage
}

// runHooks runs the hooks of an event, one after another, each with the JSON input Claude
// Code gives (session_id, hook_event_name, cwd and the event's own fields) on stdin, and
// says what they decided (hookOutcome). Matchers match toolName: a tool's name, or the
// trigger of PreCompact. A hook that fails, times out or cannot run is reported
// (hook.failed) and counts as allowing: a broken hook never stops the work nor hangs the
// turn.
func (t *turn) runHooks(ws host.Workspace, event, toolName, callID string, fields map[string]any) hookOutcome {
	cmds := t.hooks.commands(event, toolName)
	if len(cmds) == 0 {
		return hookOutcome{}
	}
	input, cut := hookInput(t.sessionID, event, ws, fields)
	if cut && event == HookPreToolUse {
		return hookOutcome{block: uncheckedInput()}
	}
	// A stopped turn's Stop hooks still run (bounded by their time): the turn ends either way.
	parent := t.ctx
	if event == HookStop || event == HookPreCompact {
		parent = t.wctx
	}
	var out hookOutcome
	for _, c := range cmds {
		r, err := t.runHook(parent, ws, c, input)
		if err != nil {
			t.reportHook(HookFailed{Event: event, Command: c.Command, Tool: toolName, CallID: callID, Error: err.Error()})
			continue
		}
		blocks := event == HookPreToolUse || event == HookPostToolUse || event == HookStop
		if r.exitCode != 0 && !(r.exitCode == 2 && blocks) {
			t.reportHook(HookFailed{Event: event, Command: c.Command, Tool: toolName, CallID: callID,
				Error: fmt.Sprintf("exited with code %d: %s", r.exitCode, firstLine(r.stderr))})
			continue
		}
		why, note, updated := hookSays(r)
		switch event {
		case HookPreToolUse:
			if why != "" {
				return hookOutcome{block: why}
			}
			if updated != nil {
				out.input = updated
				fields["tool_input"] = updated
				if input, cut = hookInput(t.sessionID, event, ws, fields); cut {
					return hookOutcome{block: uncheckedInput()}
				}
			}
		case HookPostToolUse:
			// The call ran: a block, like a note, is only told to the model.
			for _, s := range []string{why, note} {
				if s != "" {
					out.notes = append(out.notes, s)
				}
			}
		case HookStop:
			if why != "" && out.block == "" {
				out.block = why
			}
		}
	}
	return out
}

// hookInput is the one line of JSON a hook reads on stdin.
func hookInput(sessionID, event string, ws host.Workspace, fields map[string]any) (input []byte, cut bool) {
	in := map[string]any{"session_id": sessionID, "hook_event_name": event, "cwd": ws.Path}
	for k, v := range fields {
		in[k] = v
	}
	input, _ = json.Marshal(in) // plain values: cannot fail
	if len(input) > maxHookInput {
		in["tool_input"] = map[string]any{"_truncated": fmt.Sprintf("the input was %d bytes, more than a hook is given", len(input))}
		delete(in, "tool_response")
		input, _ = json.Marshal(in)
		cut = true
	}
	return input, cut
}

// uncheckedInput is why a call whose input its PreToolUse hooks cannot be given whole is
// not run: a hook that decides on the input (a guard against `rm -rf`) would let through
// what it never saw, and a model could pad its input past the size to get by
// (server TestHookAttackInputTooLargeToCheck).
func uncheckedInput() string {
	return fmt.Sprintf("its input is larger than the %d bytes a hook is given, so the PreToolUse hooks could not check it: make the call smaller (a long text: write it in parts)", maxHookInput)
}

// hookStdout is the JSON a hook may print on stdout (Claude Code's fields).
type hookStdout struct {
	Decision          string `json:"decision"`
	Reason            string `json:"reason"`
	AdditionalContext string `json:"additionalContext"`
	Specific          struct {
		Decision          string          `json:"permissionDecision"`
		Reason            string          `json:"permissionDecisionReason"`
		AdditionalContext string          `json:"additionalContext"`
		UpdatedInput      json.RawMessage `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// hookSays reads a hook's run: why it blocks ("" when it does not: exit code 2 and its
// stderr, or {"decision":"block","reason"} / permissionDecision "deny" on stdout), the
// additional context it gives the model (additionalContext, top level or in
// hookSpecificOutput) and the input it rewrites the call's to (hookSpecificOutput's
// updatedInput, whole as in Claude Code; nil for none), read only when it exited 0.
func hookSays(r hookRun) (why, note string, updated json.RawMessage) {
	if r.exitCode == 2 {
		return cmpOr(r.stderr, "no reason given"), "", nil
	}
	var out hookStdout
	if r.exitCode != 0 || json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &out) != nil {
		return "", "", nil
	}
	if u := bytes.TrimSpace(out.Specific.UpdatedInput); len(u) > 0 && !bytes.Equal(u, []byte("null")) {
		updated = u
	}
	note = cmpOr(out.Specific.AdditionalContext, out.AdditionalContext)
	switch {
	case out.Decision == "block" || out.Decision == "deny":
		why = cmpOr(out.Reason, "no reason given")
	case out.Specific.Decision == "deny":
		why = cmpOr(out.Specific.Reason, "no reason given")
	}
	return why, note, updated
}

func cmpOr(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return strings.TrimSpace(def)
	}
	return strings.TrimSpace(s)
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return first
}

// runHook runs one hook command through the shell tool, so it is confined exactly as the
// model's commands are (the workspace, no network, a clean environment) and killed with
// everything it started when its time is up. The context gives it a little longer than
// that, so that even a shell that does not return cannot hold the turn.
func (t *turn) runHook(parent context.Context, ws host.Workspace, c HookCommand, input []byte) (hookRun, error) {
	if c.Type != "" && c.Type != "command" {
		return hookRun{}, fmt.Errorf("hook type %q is not run: only \"command\" hooks are", c.Type)
	}
	if strings.TrimSpace(c.Command) == "" {
		return hookRun{}, errors.New("the hook has no command")
	}
	if _, ok := t.h.opts.Tools.Registry().Lookup(hookShell); !ok {
		return hookRun{}, errors.New("hooks run through the shell built-in, which is not available (turned off?)")
	}
	limit := DefaultHookTimeout
	if c.Timeout > 0 {
		limit = min(time.Duration(c.Timeout*float64(time.Second)), MaxHookTimeout)
	}
	var tag [8]byte
	_, _ = rand.Read(tag[:])
	eof := "JEAN2_HOOK_INPUT_" + hex.EncodeToString(tag[:])
	// The input is one line of JSON: the random delimiter cannot occur in it.
	script := fmt.Sprintf("( %s\n) <<'%s'\n%s\n%s\n", c.Command, eof, input, eof)
	args, _ := json.Marshal(map[string]any{"command": script, "timeout": limit.Milliseconds()})
	ctx, cancel := context.WithTimeout(parent, limit+5*time.Second)
	defer cancel()
	out := t.h.opts.Tools.Invoke(ctx, host.Call{Tool: hookShell, Args: args, CallID: "hook_" + hex.EncodeToString(tag[:4]),
		SessionID: t.sessionID, Workspace: ws, Ledger: tool.NewLedger(), Session: t.facts})
	var res struct {
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		ExitCode int    `json:"exitCode"`
		TimedOut bool   `json:"timedOut"`
	}
	if len(out.Result.Result) == 0 || json.Unmarshal(out.Result.Result, &res) != nil {
		return hookRun{}, fmt.Errorf("did not run: %s", cmpOr(out.Result.Error, "the shell gave no result"))
	}
	if res.TimedOut || ctx.Err() != nil {
		return hookRun{}, fmt.Errorf("timed out after %s and was killed", limit)
	}
	return hookRun{exitCode: res.ExitCode, stdout: res.Stdout, stderr: res.Stderr}, nil
}

// reportHook tells the session's clients and the log that a hook failed.
func (t *turn) reportHook(f HookFailed) {
	t.h.log.Warn("a hook failed", "session", t.sessionID, "event", f.Event, "command", f.Command, "tool", f.Tool, "error", f.Error)
	t.ev.emit(t.wctx, newEvent(EventHookFailed, f))
}

// loadHooks reads the hooks for the turn; a config.json that cannot be read is reported
// and no hook runs.
func (t *turn) loadHooks() {
	hs, err := ReadHooks(t.h.opts.Home)
	if err != nil {
		t.reportHook(HookFailed{Event: "config", Error: err.Error() + "; no hook runs until it is fixed"})
		return
	}
	t.hooks = hs
}

// preToolHooks runs the PreToolUse hooks of a call the turn may make; it returns the reason
// one denied it with ("" when none did) and the input they rewrote the call's to (nil when
// none did).
func (t *turn) preToolHooks(call host.Call) (string, json.RawMessage) {
	said := t.runHooks(call.Workspace, HookPreToolUse, call.Tool, call.CallID,
		map[string]any{"tool_name": call.Tool, "tool_input": call.Args})
	return said.block, said.input
}

// postToolHooks runs the PostToolUse hooks of a call that ran, with its result as the model
// reads it; what they tell the model (additionalContext, exit 2's stderr, a block's reason)
// joins that result (hookflow.go).
func (t *turn) postToolHooks(call host.Call, out host.Outcome) host.Outcome {
	said := t.runHooks(call.Workspace, HookPostToolUse, call.Tool, call.CallID,
		map[string]any{"tool_name": call.Tool, "tool_input": call.Args, "tool_response": json.RawMessage(out.Result.ModelJSON())})
	if len(said.notes) > 0 {
		out.ModelText = withHookNotes(out.ModelText, said.notes)
	}
	return out
}
