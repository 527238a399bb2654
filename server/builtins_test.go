package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/sandbox"
)

// The settings turn built-ins off while the server runs, and back on; the list is kept
// across a restart and applied before the first turn.
func TestDisabledBuiltinsSetting(t *testing.T) {
	f := newFixture(t)
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{})
	f.start()
	status := func(name string) string {
		var list struct{ Tools []host.Entry }
		f.call("GET", "/api/tools", nil, 200, &list)
		for _, e := range list.Tools {
			if e.Name == name {
				return e.Status
			}
		}
		return "missing"
	}
	if got := status("grep"); got != host.StatusOK {
		t.Fatalf("grep before: %s", got)
	}
	var st settingsAnswer
	f.call("PATCH", "/api/settings", map[string]any{"disabledBuiltins": []string{"grep", "question"}}, 200, &st)
	if len(st.DisabledBuiltins) != 2 || status("grep") != host.StatusDisabled || status("question") != host.StatusDisabled || status("read-file") != host.StatusOK {
		t.Fatalf("after turning off: %+v grep=%s", st, status("grep"))
	}
	if code := errorCode(t, f.call("PATCH", "/api/settings", map[string]any{"disabledBuiltins": []string{""}}, 400, nil)); code != codeBadRequest {
		t.Fatalf("empty name: %s", code)
	}
	f.stop()
	f.start()
	if status("grep") != host.StatusDisabled {
		t.Fatal("grep came back on after a restart")
	}
	f.call("PATCH", "/api/settings", map[string]any{"disabledBuiltins": []string{}}, 200, &st)
	if status("grep") != host.StatusOK || status("question") != host.StatusOK {
		t.Fatalf("after turning back on: grep=%s question=%s", status("grep"), status("question"))
	}
}

// A turn of the scripted model reads a file, edits it and writes a todo list with the
// built-ins: the model sees each result, the file changes on disk, and the edit's diff
// and the todo list reach the client as visualizations.
func TestTurnReadsAndEditsWithBuiltins(t *testing.T) {
	f := newFixture(t)
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{})
	f.start()
	if err := os.WriteFile(filepath.Join(f.ws, "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_read", "read-file", `{"path":"main.go"}`),
		providertest.OpenAIToolCall("test-model", "call_edit", "edit", `{"path":"main.go","oldString":"println(\"hi\")","newString":"println(\"hello\")"}`),
		providertest.OpenAIToolCall("test-model", "call_todo", "todowrite", `{"todos":[{"content":"greet","status":"completed"}]}`),
		providertest.OpenAIText("test-model", "done"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "say hello instead"}, 202, nil)
	fin, before := sock.until("turn.finished", 60*time.Second)
	if !strings.Contains(string(fin.Payload), `"done"`) {
		t.Fatalf("turn: %s", fin.Payload)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "main.go")); !strings.Contains(string(b), `println("hello")`) {
		t.Fatalf("main.go after the turn: %q", b)
	}
	reqs := f.fake.Requests()
	if len(reqs) != 4 || !strings.Contains(string(reqs[1].Body), `4: \tprintln(\"hi\")`) {
		t.Fatalf("the model did not see the numbered file: %d requests; second: %.2000s", len(reqs), reqs[1].Body)
	}
	var diff, todo bool
	for _, ev := range before {
		p := string(ev.Payload)
		diff = diff || (ev.Type == "part.updated" && strings.Contains(p, `"type":"diff"`) && strings.Contains(p, `println(\"hello\")`))
		todo = todo || (ev.Type == "part.updated" && strings.Contains(p, `"type":"todo-list"`))
	}
	if !diff || !todo {
		t.Fatalf("visualizations: diff %v todo %v among %s", diff, todo, types(before))
	}
}

// The end-to-end turn of a coding agent with the built-ins and the real launcher: the
// scripted model reads a file, edits it, runs a command (confined, through the launcher)
// that sees the edit, and writes a todo list. After a restart of the server, todoread in a
// new turn gives the same list back: the todo list lives in the store.
func TestTurnReadsEditsRunsAndKeepsTodos(t *testing.T) {
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || !st.NetNS {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	f := newFixture(t)
	sb := host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0]}
	f.cfg.Host.Sandbox = sb
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: f.cfg.Host.Layout}})
	if err := os.WriteFile(f.cfg.Host.Layout.DotEnv, []byte("ANTHROPIC_API_KEY=sk-ant-kept-in-jean2-home\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.start()
	if err := os.WriteFile(filepath.Join(f.ws, "greet.sh"), []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_read", "read-file", `{"path":"greet.sh"}`),
		providertest.OpenAIToolCall("test-model", "call_edit", "edit", `{"path":"greet.sh","oldString":"echo hi","newString":"echo hello from the edit"}`),
		providertest.OpenAIToolCall("test-model", "call_run", "shell", `{"command":"bash greet.sh && cat `+f.cfg.Host.Layout.DotEnv+` 2>&1; echo exit=$?","description":"run the script"}`),
		providertest.OpenAIToolCall("test-model", "call_todo", "todowrite", `{"todos":[{"content":"greet louder","status":"in_progress","priority":"high"},{"content":"ship it","status":"pending"}]}`),
		providertest.OpenAIText("test-model", "done"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "make the greeting louder and run it"}, 202, nil)
	fin, before := sock.until("turn.finished", 90*time.Second)
	if !strings.Contains(string(fin.Payload), `"done"`) {
		t.Fatalf("turn: %s", fin.Payload)
	}
	reqs := f.fake.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests to the model, want 5", len(reqs))
	}
	// The fourth request carries the shell's result: the edited script ran, in the workspace.
	shellSeen := string(reqs[3].Body)
	if !strings.Contains(shellSeen, "hello from the edit") {
		t.Fatalf("the model did not see the command's output: %.3000s", shellSeen)
	}
	if strings.Contains(shellSeen, "sk-ant-kept") || !strings.Contains(shellSeen, "exit=1") {
		t.Fatalf("the command read $JEAN2_HOME/.env (or did not try): %.3000s", shellSeen)
	}
	var shellViz bool
	for _, ev := range before {
		shellViz = shellViz || (ev.Type == "part.updated" && strings.Contains(string(ev.Payload), `"type":"shell-output"`))
	}
	if !shellViz {
		t.Fatalf("no shell-output visualization among %s", types(before))
	}
	sock.close()

	f.stop()
	f.start()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_list", "todoread", `{}`),
		providertest.OpenAIText("test-model", "still there"),
	)
	var view sessionView
	f.call("GET", "/api/sessions/"+ses.ID, nil, 200, &view)
	sock = f.dial(fmt.Sprintf("/api/sessions/%s/ws?after=%d", ses.ID, view.LastSeq), nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "what is left?"}, 202, nil)
	if fin, _ := sock.until("turn.finished", 60*time.Second); !strings.Contains(string(fin.Payload), `"rounds":2`) {
		t.Fatalf("second turn: %s", fin.Payload)
	}
	// The history holds todowrite's arguments anyway: look at todoread's own result.
	reqs = f.fake.Requests()
	var last struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    any    `json:"content"`
		} `json:"messages"`
	}
	mustJSON(t, reqs[len(reqs)-1].Body, &last)
	var listed string
	for _, m := range last.Messages {
		if m.Role == "tool" && m.ToolCallID == "call_list" {
			listed = fmt.Sprint(m.Content)
		}
	}
	if !strings.Contains(listed, "greet louder") || !strings.Contains(listed, "ship it") {
		t.Fatalf("todoread after a restart did not give the list back: %q", listed)
	}
	// Deleting the session ends what the host kept for it: its temporary folder goes.
	temp := filepath.Join(f.cfg.Host.Layout.WorkspaceTemp(ses.WorkspaceID), ses.ID)
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the session's temporary folder: %v", err)
	}
	sock.close()
	f.call("DELETE", "/api/sessions/"+ses.ID, nil, 204, nil)
	if _, err := os.Stat(temp); !os.IsNotExist(err) {
		t.Fatalf("the deleted session's temporary folder is still there: %v", err)
	}
}
