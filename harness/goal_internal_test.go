package harness

import (
	"strings"
	"testing"
)

// The evaluator's answer is read strictly: the JSON asked for (a code fence forgiven), or
// an error that names what came — never a guess that the goal is met.
func TestParseVerdict(t *testing.T) {
	for _, c := range []struct {
		in   string
		want GoalVerdict
		err  bool
	}{
		{`{"done": true, "reason": "tests pass"}`, GoalVerdict{Done: true, Reason: "tests pass"}, false},
		{"```json\n{\"done\": false, \"reason\": \"write docs\"}\n```", GoalVerdict{Reason: "write docs"}, false},
		{`{"reason": "no verdict"}`, GoalVerdict{}, true},
		{`Yes, it is done.`, GoalVerdict{}, true},
		{`{"done": "yes"}`, GoalVerdict{}, true},
		{`{"done": true} and more`, GoalVerdict{}, true},
		{`{"done": true, "confidence": 0.9}`, GoalVerdict{Done: true}, false},
	} {
		got, err := parseVerdict(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parseVerdict(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// PostToolUse feedback joins a JSON result as a field, keeping it JSON, and a text result
// as a last paragraph.
func TestWithHookNotes(t *testing.T) {
	if got := withHookNotes(`{"success":true,"result":{"n":1}}`, []string{"a", `b "q"`}); got != `{"success":true,"result":{"n":1},"hookFeedback":["a","b \"q\""]}` {
		t.Errorf("JSON result: %s", got)
	}
	if got := withHookNotes(`{}`, []string{"a"}); got != `{"hookFeedback":["a"]}` {
		t.Errorf("empty object: %s", got)
	}
	if got := withHookNotes("exitCode: 0\nhi", []string{"a", "b"}); !strings.HasSuffix(got, "\n\nPostToolUse hook feedback:\na\nb") {
		t.Errorf("text result: %q", got)
	}
}

// hookSays reads Claude Code's shapes: exit 2's stderr, a block decision, a deny, and
// additionalContext at the top level or in hookSpecificOutput (which wins), and
// hookSpecificOutput.updatedInput (read with any decision but deny; null is none).
func TestHookSays(t *testing.T) {
	for _, c := range []struct {
		r              hookRun
		why, note, upd string
	}{
		{hookRun{stdout: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls"}}}`}, "", "", `{"command":"ls"}`},
		{hookRun{stdout: `{"hookSpecificOutput":{"updatedInput":null}}`}, "", "", ""},
		{hookRun{stdout: `{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"r","updatedInput":{"a":1}}}`}, "r", "", `{"a":1}`},
		{hookRun{exitCode: 2, stderr: " lint failed \n"}, "lint failed", "", ""},
		{hookRun{exitCode: 2}, "no reason given", "", ""},
		{hookRun{stdout: `{"decision":"block","reason":"no"}`}, "no", "", ""},
		{hookRun{stdout: `{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"r"}}`}, "r", "", ""},
		{hookRun{stdout: `{"additionalContext":"top"}`}, "", "top", ""},
		{hookRun{stdout: `{"additionalContext":"top","hookSpecificOutput":{"additionalContext":"inner"}}`}, "", "inner", ""},
		{hookRun{stdout: "plain text"}, "", "", ""},
		{hookRun{exitCode: 1, stdout: `{"additionalContext":"x"}`}, "", "", ""},
	} {
		why, note, upd := hookSays(c.r)
		if why != c.why || note != c.note || string(upd) != c.upd {
			t.Errorf("hookSays(%+v) = %q, %q, %s; want %q, %q, %s", c.r, why, note, upd, c.why, c.note, c.upd)
		}
	}
}
