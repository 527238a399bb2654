package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// The chat's header names the session's agent; Tab then Enter on an empty line switches to
// the next agent (plan), whose turn the host keeps from writing; /agent lists the agents
// with a broken agent file reported, and /agent NAME switches back.
func TestChatSwitchesAgents(t *testing.T) {
	srv, base, fake := testServer(t, builtin.Tools(builtin.Options{})...)
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".jean2", "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".jean2", "agents", "broken.md"), []byte("---\nname: broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, typed := io.Pipe()
	var out screen
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Server: base, Token: srv.Token(), Workspace: ws, Stdin: in, Stdout: &out})
	}()
	type_ := func(s string) {
		t.Helper()
		if _, err := io.WriteString(typed, s); err != nil {
			t.Fatal(err)
		}
	}
	out.waitFor(t, "agent build")
	type_("\t\n")
	out.waitFor(t, "Agent: plan (plan mode: read-only")

	fake.Push(
		providertest.OpenAIToolCall("test-model", "call_w", "write-file", `{"path":"made.txt","content":"x"}`),
		providertest.OpenAIText("test-model", "Planned."),
	)
	type_("write made.txt\n")
	out.waitFor(t, "Planned.")
	out.waitFor(t, "── done")
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("made.txt under plan: %v", err)
	}
	if !strings.Contains(out.String(), "refused: this session runs the \"plan\" agent") {
		t.Errorf("the refusal is not shown:\n%s", out.String())
	}

	type_("/agent\n")
	out.waitFor(t, "▸ plan")
	out.waitFor(t, "not loaded: "+filepath.Join(ws, ".jean2", "agents", "broken.md"))
	type_("/agent build\n")
	out.waitFor(t, "Agent: build")
	var ses session
	id := strings.Fields(out.String()[strings.Index(out.String(), "session ses_")+len("session "):])[0]
	if err := NewClient(base, srv.Token()).Call(context.Background(), "GET", "/api/sessions/"+id, nil, &ses); err != nil || ses.Agent != "build" {
		t.Fatalf("session %s after /agent build: %+v %v", id, ses.Session, err)
	}
	type_("/quit\n")
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return; the screen:\n%s", out.String())
	}
}

// A hook that failed is shown where the person reads the turn.
func TestChatShowsHookFailed(t *testing.T) {
	var out bytes.Buffer
	u := newChatUI(Options{Stdout: &out}, nil, session{Session: store.Session{ID: "ses_1"}}, store.Workspace{Path: "/ws"}, false)
	u.handleEvent(store.Event{SessionID: "ses_1", Seq: 1, Type: harness.EventHookFailed,
		Payload: json.RawMessage(`{"event":"PreToolUse","command":"sleep 60","tool":"shell","error":"timed out after 1s and was killed"}`)})
	if got := out.String(); !strings.Contains(got, "(hook PreToolUse sleep 60 failed: timed out after 1s and was killed)") {
		t.Fatalf("screen: %q", got)
	}
}

// jean2 run --agent plan: the headless turn runs read-only (the scripted model's write-file
// is refused, nothing is written) and the session keeps the agent; an unknown agent is a
// mistake of the options, naming the agents there are.
func TestHeadlessAgent(t *testing.T) {
	srv, base, fake := testServer(t, builtin.Tools(builtin.Options{})...)
	ws := t.TempDir()
	fake.Push(
		providertest.OpenAIToolCall("test-model", "call_w", "write-file", `{"path":"made.txt","content":"x"}`),
		providertest.OpenAIText("test-model", "The plan: write made.txt."),
	)
	var out, errs bytes.Buffer
	o := HeadlessOptions{Server: base, Token: srv.Token(), Workspace: ws, Agent: "plan", Prompt: "write made.txt", Stdout: &out, Stderr: &errs}
	res, err := RunHeadless(context.Background(), o)
	if err != nil || res.Reason != "done" || res.Text != "The plan: write made.txt." {
		t.Fatalf("run: %+v %v; stderr %s", res, err, errs.String())
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("made.txt under --agent plan: %v", err)
	}
	var ses session
	if err := NewClient(base, srv.Token()).Call(context.Background(), "GET", "/api/sessions/"+res.SessionID, nil, &ses); err != nil || ses.Agent != "plan" {
		t.Fatalf("the session's agent: %q %v", ses.Agent, err)
	}
	o.Agent = "nobody"
	_, err = RunHeadless(context.Background(), o)
	var ue UsageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, `--agent "nobody"`) || !strings.Contains(ue.Msg, "build, plan") {
		t.Fatalf("an unknown agent: %v", err)
	}
}

// A session's other changes (its title, set when its first answer ends) are no switch of
// agent: the chat said "(agent switched to build from another client)" after every first
// answer of a session that names no agent.
func TestChatSessionUpdateIsNoSwitch(t *testing.T) {
	var buf bytes.Buffer
	u := &chatUI{out: &lockedWriter{w: &buf}, ses: session{Session: store.Session{ID: "s1"}}}
	u.sessionUpdated(session{Session: store.Session{ID: "s1", Title: "Greetings"}})
	u.sessionUpdated(session{Session: store.Session{ID: "s1", Agent: harness.DefaultAgent}})
	if buf.Len() != 0 {
		t.Fatalf("a title or the default agent named was taken for a switch: %q", buf.String())
	}
	u.sessionUpdated(session{Session: store.Session{ID: "s1", Agent: "plan"}})
	if !strings.Contains(buf.String(), "(agent switched to plan from another client)") || u.agentName() != "plan" {
		t.Fatalf("a switch to plan: %q, agent %q", buf.String(), u.agentName())
	}
}
