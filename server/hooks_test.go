package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/store"
)

// Hooks of config.json run through the confined shell at their events: SessionStart gets
// the session's JSON on stdin; a PreToolUse hook matched by Claude Code's "Bash" denies an
// `rm -rf` with a reason the model reads (nothing is removed) and lets another command run;
// a PostToolUse hook sees the call's input and result and cannot write outside the
// workspace (the sandbox refuses; the failure is reported); a hanging PreToolUse hook is
// killed at its time limit, reported, and the call goes on; a failing Stop hook is
// reported. The turn does not wait on any of them longer than their limits.
func TestHooksRunConfinedAndDeny(t *testing.T) {
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || !st.NetNS {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	f := newFixture(t)
	sb := host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0]}
	f.cfg.Host.Sandbox = sb
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: f.cfg.Host.Layout}})
	outside := filepath.Join(f.root, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "cat > session-start.json"}}}},
		"PreToolUse": []any{
			map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command",
				"command": `if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here; remove files one by one' >&2; exit 2; fi`}}},
			map[string]any{"matcher": "write_note", "hooks": []any{map[string]any{"type": "command", "command": "sleep 60", "timeout": 1}}},
		},
		"PostToolUse": []any{map[string]any{"matcher": "shell", "hooks": []any{map[string]any{"type": "command",
			"command": "cat > post.json; echo leaked > " + filepath.Join(outside, "leak")}}}},
		"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "echo cannot stop >&2; exit 7"}}}},
	}}
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(f.home, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f.start()
	if err := os.MkdirAll(filepath.Join(f.ws, "stuff"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_rm", "shell", `{"command":"rm -rf stuff"}`),
		providertest.OpenAIToolCall("test-model", "call_ok", "shell", `{"command":"echo ok > ran.txt"}`),
		providertest.OpenAIToolCall("test-model", "call_note", "write_note", `{"path":"note.txt","text":"noted"}`),
		providertest.OpenAIText("test-model", "done"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	began := time.Now()
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "tidy up"}, 202, nil)
	fin, before := sock.until("turn.finished", 90*time.Second)
	took := time.Since(began)
	t.Logf("the turn with a hanging hook (1 s limit) took %v", took)
	if !strings.Contains(string(fin.Payload), `"reason":"done"`) || took > 30*time.Second {
		t.Fatalf("turn after %v: %s", took, fin.Payload)
	}

	if _, err := os.Stat(filepath.Join(f.ws, "stuff")); err != nil {
		t.Errorf("the denied rm -rf removed stuff: %v", err)
	}
	if res := f.toolResult(1, "call_rm"); !strings.Contains(res, "denied by a PreToolUse hook: rm -rf is not allowed here; remove files one by one") {
		t.Errorf("the model was not told why: %s", res)
	}
	for name, want := range map[string]string{
		"ran.txt": "ok", "note.txt": "noted",
		"session-start.json": `"hook_event_name":"SessionStart"`,
		"post.json":          `"tool_response":{"success":true`,
	} {
		if b, err := os.ReadFile(filepath.Join(f.ws, name)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %q %v, want %q in it", name, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "leak")); !os.IsNotExist(err) {
		t.Errorf("a hook wrote outside the workspace: %v", err)
	}
	var failed []string
	for _, ev := range before {
		if ev.Type == harness.EventHookFailed {
			var p harness.HookFailed
			mustJSON(t, ev.Payload, &p)
			failed = append(failed, p.Event+" "+p.Tool+": "+p.Error)
		}
	}
	got := strings.Join(failed, "\n")
	for _, want := range []string{"PostToolUse shell: exited with code 1", "PreToolUse write_note: timed out after 1s", "Stop : exited with code 7: cannot stop"} {
		if !strings.Contains(got, want) {
			t.Errorf("hook.failed events lack %q:\n%s", want, got)
		}
	}
}

// A PreToolUse hook rewrites a call's input in Claude Code's shape
// (hookSpecificOutput.updatedInput): the rewritten command is what runs, what the stored
// call and its part.updated show, and what the next hook reads; an updatedInput that does
// not fit the tool's schema is refused like a model's would be — the call does not run, the
// model reads why, and the failure is reported.
func TestPreToolUseHookRewritesInput(t *testing.T) {
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || !st.NetNS {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	f := newFixture(t)
	sb := host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0]}
	f.cfg.Host.Sandbox = sb
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: f.cfg.Host.Layout}})
	rewrite := func(match, to string) map[string]any {
		return map[string]any{"type": "command", "command": "if grep -q '" + match + "'; then echo '" +
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":` + to + `}}'; fi`}
	}
	cfg := map[string]any{"hooks": map[string]any{"PreToolUse": []any{
		map[string]any{"matcher": "Bash", "hooks": []any{
			rewrite("echo model", `{"command":"echo hooked > out.txt"}`),
			// The second hook reads the first one's input: it sees "hooked", not "model".
			map[string]any{"type": "command", "command": "cat > second-hook.json"},
		}},
		map[string]any{"matcher": "write_note", "hooks": []any{rewrite("bad.txt", `{"path":5,"text":"x"}`)}},
	}}}
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(f.home, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f.start()
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_sh", "shell", `{"command":"echo model > out.txt"}`),
		providertest.OpenAIToolCall("test-model", "call_bad", "write_note", `{"path":"bad.txt","text":"x"}`),
		providertest.OpenAIText("test-model", "done"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "write"}, 202, nil)
	_, events := sock.until("turn.finished", 90*time.Second)

	if b, err := os.ReadFile(filepath.Join(f.ws, "out.txt")); err != nil || string(b) != "hooked\n" {
		t.Errorf("out.txt = %q, %v; want the rewritten command's output", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "second-hook.json")); err != nil || !strings.Contains(string(b), `"tool_input":{"command":"echo hooked \u003e out.txt"}`) {
		t.Errorf("the second hook read %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "bad.txt")); !os.IsNotExist(err) {
		t.Errorf("the call whose rewritten input does not fit the schema ran: %v", err)
	}
	if res := f.toolResult(2, "call_bad"); !strings.Contains(res, "a PreToolUse hook's updatedInput for write_note: invalid arguments for write_note") {
		t.Errorf("the model's result of the bad rewrite: %s", res)
	}
	var list struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &list)
	args := map[string]string{}
	for _, m := range list.Messages {
		for _, p := range m.Parts {
			if p.CallID != "" {
				args[p.CallID] = p.Args
			}
		}
	}
	if args["call_sh"] != `{"command":"echo hooked > out.txt"}` || args["call_bad"] != `{"path":"bad.txt","text":"x"}` {
		t.Errorf("stored calls: %v", args)
	}
	var sawRewrite, reported bool
	for _, ev := range events {
		if ev.Type == harness.EventPartUpdated && strings.Contains(string(ev.Payload), `"args":"{\"command\":\"echo hooked \u003e out.txt\"}","status":"running"`) {
			sawRewrite = true
		}
		if ev.Type == harness.EventHookFailed && strings.Contains(string(ev.Payload), "updatedInput for write_note") {
			reported = true
		}
	}
	if !sawRewrite || !reported {
		t.Errorf("part.updated with the rewritten running call: %v; hook.failed of the bad rewrite: %v", sawRewrite, reported)
	}
}
