package chat

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jean2/jean2/store"
)

// The chat draws the contract's events once each: text from deltas and from the part
// (without repeating it), a tool call's line once and its outcome once, the user's own
// message not echoed but another client's shown, a failed model call, the turn's summary.
func TestChatDrawsEventsOnce(t *testing.T) {
	var out bytes.Buffer
	u := newChatUI(Options{Stdout: &out}, nil, session{Session: store.Session{ID: "ses_1", Title: "t"}}, store.Workspace{Path: "/ws"}, false)
	u.own = []string{"hi there"}
	seq := int64(0)
	ev := func(typ, payload string) {
		seq++
		u.handleEvent(store.Event{SessionID: "ses_1", Seq: seq, Type: typ, Payload: json.RawMessage(payload)})
	}
	ev("turn.started", `{"turnId":"t1","userMessageId":"m1"}`)
	ev("message.created", `{"message":{"id":"m1","role":"user","content":"hi there","parts":[]}}`)
	ev("message.created", `{"message":{"id":"m2","role":"assistant","content":"","parts":[]}}`)
	ev("part.created", `{"part":{"id":"p1","messageId":"m2","kind":"text","text":"Hel"}}`)
	ev("part.delta", `{"messageId":"m2","partId":"p1","text":"lo "}`)
	ev("part.delta", `{"messageId":"m2","partId":"p1","text":"world\u001b[2J"}`)
	ev("part.updated", `{"part":{"id":"p1","messageId":"m2","kind":"text","text":"Hello world\u001b[2J","status":"complete"}}`)
	ev("part.created", `{"part":{"id":"p2","messageId":"m2","kind":"tool_call","toolName":"ls","status":"pending"}}`)
	ev("part.updated", `{"part":{"id":"p2","messageId":"m2","kind":"tool_call","toolName":"ls","args":"{\"dir\": \".\"}","status":"running"}}`)
	ev("tool.progress", `{"messageId":"m2","partId":"p2","callId":"c1","progress":{"message":"listing","current":1,"total":3}}`)
	done := `{"part":{"id":"p2","messageId":"m2","kind":"tool_call","toolName":"ls","args":"{}","status":"complete","duration":1500000000,
		"visualization":{"type":"file-list","files":[{"path":"a.txt","action":"created"}]}}}`
	ev("part.updated", done)
	ev("part.updated", done) // a repeat draws nothing more
	ev("message.updated", `{"message":{"id":"m3","role":"assistant","status":"error","error":"rate limited"}}`)
	ev("message.created", `{"message":{"id":"m4","role":"user","content":"from the web","parts":[{"id":"i1","kind":"image","mediaType":"image/png"},{"id":"i2","kind":"image","mediaType":"image/gif"}]}}`)
	ev("turn.finished", `{"turnId":"t1","reason":"budget","messageId":"m2","rounds":5,"changed":{"files":2,"failed":1},"usage":{"inputTokens":30,"outputTokens":12}}`)

	got := out.String()
	for _, want := range []string{
		"Hello world\\u001b[2J\n",
		`⏺ ls {"dir":"."}`,
		"  … listing 1/3",
		"  ✓ 1.5s",
		"    + a.txt",
		"The model failed: rate limited",
		"(from another client) you: from the web [2 images]",
		"── paused: the work budget of this turn is spent",
		"Changed 2 files (1 failed) · 30 in / 12 out tokens",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, once := range []string{"Hello world", "⏺ ls", "✓", "a.txt"} {
		if n := strings.Count(got, once); n != 1 {
			t.Errorf("%q drawn %d times:\n%s", once, n, got)
		}
	}
	if strings.Contains(got, "hi there") {
		t.Errorf("the user's own message was echoed:\n%s", got)
	}
	if strings.Contains(got, "\x1b") || u.running {
		t.Errorf("escape in the output or still running (%v):\n%q", u.running, got)
	}
}

// A tool call's arguments are shown compact and as written: no \u0026 for & or \u003e for >.
func TestArgsSummaryKeepsShellOperators(t *testing.T) {
	got := argsSummary(`{"command": "python3 hello.py && git status 2>&1 | head -3"}`)
	if want := ` {"command":"python3 hello.py && git status 2>&1 | head -3"}`; got != want {
		t.Fatalf("argsSummary = %q, want %q", got, want)
	}
}
