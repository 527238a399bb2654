package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
)

// agentRequest is what the agent tests read of a request the model was sent.
type agentRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (f *fixture) agentRequest(i int) agentRequest {
	f.t.Helper()
	reqs := f.fake.Requests()
	if i >= len(reqs) {
		f.t.Fatalf("request %d of %d", i, len(reqs))
	}
	var r agentRequest
	if err := reqs[i].Decode(&r); err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (r agentRequest) toolNames() []string {
	var out []string
	for _, tl := range r.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

// agentTurn sends text to the session and waits for its turn.finished.
func (f *fixture) agentTurn(sesID, text string) event {
	f.t.Helper()
	sock := f.dial("/api/sessions/"+sesID+"/ws", nil)
	defer sock.close()
	var started struct{ Turn harness.TurnInfo }
	f.call("POST", "/api/sessions/"+sesID+"/turns", map[string]any{"text": text}, 202, &started)
	// The socket replays the session's log: an earlier turn's end comes first.
	for {
		fin, _ := sock.until("turn.finished", 60*time.Second)
		if strings.Contains(string(fin.Payload), started.Turn.ID) {
			return fin
		}
	}
}

// toolResult is the result of the call callID as request i sent it to the model.
func (f *fixture) toolResult(i int, callID string) string {
	f.t.Helper()
	var r struct {
		Messages []struct {
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := f.fake.Requests()[i].Decode(&r); err != nil {
		f.t.Fatal(err)
	}
	for _, m := range r.Messages {
		if m.ToolCallID == callID {
			return m.Content
		}
	}
	f.t.Fatalf("request %d has no result of %s", i, callID)
	return ""
}

// Under the plan agent the host keeps the model from changing anything: write-file, edit
// and shell are not offered, and when the scripted model calls them anyway each call is
// refused with an error the model reads, and nothing changes on disk. The agent is stored
// with the session and shown in its listing; switched back to build, the same write-file
// call goes through.
func TestPlanAgentRefusesChanges(t *testing.T) {
	f := newFixture(t)
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{})
	f.start()
	ws, ses := f.session()
	if ses.Agent != harness.DefaultAgent {
		t.Fatalf("a new session's agent: %q", ses.Agent)
	}
	var v sessionView
	f.call("PATCH", "/api/sessions/"+ses.ID, map[string]any{"agent": "plan"}, 200, &v)
	var list struct{ Sessions []sessionView }
	f.call("GET", "/api/workspaces/"+ws.ID+"/sessions", nil, 200, &list)
	if v.Agent != "plan" || len(list.Sessions) != 1 || list.Sessions[0].Agent != "plan" {
		t.Fatalf("after the switch: %+v; listed %+v", v.Session, list.Sessions)
	}

	if err := os.WriteFile(filepath.Join(f.ws, "keep.txt"), []byte("as it was\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_w", "write-file", `{"path":"made.txt","content":"planted"}`),
		providertest.OpenAIToolCall("test-model", "call_sh", "shell", `{"command":"echo planted > shelled.txt; rm keep.txt"}`),
		providertest.OpenAIToolCall("test-model", "call_e", "edit", `{"path":"keep.txt","oldString":"as it was","newString":"changed"}`),
		providertest.OpenAIToolCall("test-model", "call_w2", "write-file", `{"path":"made.txt","content":"planted again"}`),
		providertest.OpenAIText("test-model", "Here is the plan."),
	)
	fin := f.agentTurn(ses.ID, "change things")
	if !strings.Contains(string(fin.Payload), `"reason":"done"`) {
		t.Fatalf("turn: %s", fin.Payload)
	}
	for _, name := range []string{"made.txt", "shelled.txt"} {
		if _, err := os.Stat(filepath.Join(f.ws, name)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a plan turn: %v", name, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "keep.txt")); err != nil || string(b) != "as it was\n" {
		t.Errorf("keep.txt after a plan turn: %q %v", b, err)
	}
	offered := f.agentRequest(0).toolNames()
	for _, name := range []string{"write-file", "edit", "multiedit", "apply-patch", "shell", "todowrite", "write_note", "memory", "skill_manage"} {
		if slices.Contains(offered, name) {
			t.Errorf("plan offered %s: %v", name, offered)
		}
	}
	if !slices.Contains(offered, "read-file") || !slices.Contains(offered, "grep") || !slices.Contains(offered, "skill") || !slices.Contains(offered, "session_search") {
		t.Errorf("plan did not offer the read-only tools: %v", offered)
	}
	if sys := string(f.agentRequest(0).Messages[0].Content); !strings.Contains(sys, "plan mode") {
		t.Errorf("the plan instructions are not in the system prompt: %.300s", sys)
	}
	for i, call := range []string{"call_w", "call_sh", "call_e", "call_w2"} {
		tool := []string{"write-file", "shell", "edit", "write-file"}[i]
		res := f.toolResult(i+1, call)
		if !strings.Contains(res, `refused: this session runs the \"plan\" agent (plan mode)`) || !strings.Contains(res, tool+" can change things") {
			t.Errorf("the model was not told %s was refused: %s", tool, res)
		}
	}

	// Back to build: the same call writes the file.
	f.call("PATCH", "/api/sessions/"+ses.ID, map[string]any{"agent": "build"}, 200, &v)
	if v.Agent != harness.DefaultAgent {
		t.Fatalf("after switching back: %q", v.Agent)
	}
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_w3", "write-file", `{"path":"made.txt","content":"built"}`),
		providertest.OpenAIText("test-model", "done"),
	)
	f.agentTurn(ses.ID, "now do it")
	if b, err := os.ReadFile(filepath.Join(f.ws, "made.txt")); err != nil || string(b) != "built" {
		t.Fatalf("made.txt under build: %q %v", b, err)
	}
	if code := errorCode(t, f.call("PATCH", "/api/sessions/"+ses.ID, map[string]any{"agent": "nobody"}, 400, nil)); code != codeBadRequest {
		t.Fatalf("unknown agent: %s", code)
	}
}

const reviewerAgent = `---
name: reviewer
description: Reviews code without touching it
tools: Read, Grep, Bash(git diff:*)
model: inherit
color: blue
---
You review code. VERSION-ONE.
`

// Agent files in Claude Code's shape load from the workspace's .jean2/agents and from
// $JEAN2_HOME/agents: listed with the built-ins, chosen for a session, their body joins the
// system prompt and their tools list narrows what is offered and run. A saved file counts
// at the next turn; a broken file is listed as a problem and the others still load; a
// session whose agent's file broke refuses to start a turn rather than run without it.
func TestAgentFilesLoadLive(t *testing.T) {
	f := newFixture(t)
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{})
	f.start()
	ws, ses := f.session()
	dir := filepath.Join(f.ws, ".jean2", "agents")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "reviewer.md"), reviewerAgent)
	write(filepath.Join(dir, "broken.md"), "---\nname: [unclosed\n---\nbody\n")
	write(filepath.Join(f.home, "agents", "docs.md"), "---\ndescription: Writes docs\n---\nWrite docs.\n")

	var all harness.Agents
	f.call("GET", "/api/workspaces/"+ws.ID+"/agents", nil, 200, &all)
	if got := strings.Join(all.Names(), ","); got != "build,plan,docs,reviewer" {
		t.Fatalf("agents: %s", got)
	}
	rev, _ := all.Lookup("reviewer")
	if strings.Join(rev.Tools, ",") != "grep,read-file" || rev.Scope != "workspace" || len(rev.Warnings) != 1 {
		t.Fatalf("reviewer: %+v", rev)
	}
	if len(all.Problems) != 1 || !strings.HasSuffix(all.Problems[0].Path, "broken.md") || !strings.Contains(all.Problems[0].Error, "front matter") {
		t.Fatalf("problems: %+v", all.Problems)
	}

	var v sessionView
	f.call("PATCH", "/api/sessions/"+ses.ID, map[string]any{"agent": "reviewer"}, 200, &v)
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_n", "write_note", `{"text":"x"}`),
		providertest.OpenAIText("test-model", "reviewed"),
	)
	f.agentTurn(ses.ID, "review")
	r0 := f.agentRequest(0)
	if got := strings.Join(r0.toolNames(), ","); got != "grep,read-file" {
		t.Fatalf("reviewer offered: %s", got)
	}
	if sys := string(r0.Messages[0].Content); !strings.Contains(sys, "VERSION-ONE") {
		t.Fatalf("the agent's body is not in the system prompt: %.2000s", sys)
	}
	if res := f.toolResult(1, "call_n"); !strings.Contains(res, `refused: the \"reviewer\" agent of this session may use only these tools: grep, read-file`) {
		t.Fatalf("the write-note call was not refused: %s", res)
	}

	// Saved while the server runs: the next turn reads it.
	write(filepath.Join(dir, "reviewer.md"), strings.Replace(reviewerAgent, "VERSION-ONE", "VERSION-TWO", 1))
	f.fake.Push(providertest.OpenAIText("test-model", "again"))
	f.agentTurn(ses.ID, "again")
	if sys := string(f.agentRequest(2).Messages[0].Content); !strings.Contains(sys, "VERSION-TWO") || strings.Contains(sys, "VERSION-ONE") {
		t.Fatalf("the saved file was not read at the next turn: %.2000s", sys)
	}

	// An agent's model replaces the session's.
	write(filepath.Join(f.home, "agents", "docs.md"), "---\ndescription: Writes docs\nmodel: docs-model\n---\nWrite docs.\n")
	f.call("PATCH", "/api/sessions/"+ses.ID, map[string]any{"agent": "docs"}, 200, &v)
	f.fake.Push(providertest.OpenAIText("docs-model", "documented"))
	f.runTurn(ses.ID, "document")
	var sent struct{ Model string }
	if err := f.fake.Requests()[3].Decode(&sent); err != nil || sent.Model != "docs-model" {
		t.Fatalf("the docs agent's turn asked for model %q (%v)", sent.Model, err)
	}
	f.call("PATCH", "/api/sessions/"+ses.ID, map[string]any{"agent": "reviewer"}, 200, &v)

	// The file breaks: the session's turn is refused, naming the file, and nothing runs.
	write(filepath.Join(dir, "reviewer.md"), "---\ntools: Read\n")
	data := f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "more"}, 400, nil)
	if !strings.Contains(string(data), "reviewer.md was not loaded") || !strings.Contains(string(data), "never closed") {
		t.Fatalf("turn with a broken agent: %s", data)
	}
	if n := len(f.fake.Requests()); n != 4 {
		t.Fatalf("%d model requests, want 4", n)
	}
}
