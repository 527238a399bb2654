package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider/providertest"
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
	if len(reqs) != 4 || !strings.Contains(string(reqs[1].Body), `4: \\tprintln(\\\"hi\\\")`) {
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
