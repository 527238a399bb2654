package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/sandbox"
)

// hookFixture is a started fixture whose shell runs confined and whose config.json has
// hooks.
func hookFixture(t *testing.T, hooks map[string]any) *fixture {
	t.Helper()
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || !st.NetNS {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	f := newFixture(t)
	sb := host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0]}
	f.cfg.Host.Sandbox = sb
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: f.cfg.Host.Layout}})
	data, _ := json.Marshal(map[string]any{"hooks": hooks})
	if err := os.WriteFile(filepath.Join(f.home, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return f.start()
}

func command(cmd string) map[string]any {
	return map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd}}}
}

// What PostToolUse hooks say reaches the model with the call's result, in Claude Code's
// shapes: additionalContext printed as JSON by a hook that exits 0 (at the top level or in
// hookSpecificOutput), and the stderr of one that exits 2 (the call ran already). A hook
// that exits 0 printing plain text tells the model nothing.
func TestPostToolUseHooksTellTheModel(t *testing.T) {
	f := hookFixture(t, map[string]any{"PostToolUse": []any{
		command(`echo '{"additionalContext": "remember to run gofmt"}'`),
		command(`echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "the build is green"}}'`),
		command(`echo 'lint failed: x.go:3 unused variable' >&2; exit 2`),
		command(`echo 'plain text the model must not see'`),
	}})
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "shell", `{"command":"echo hi"}`),
		providertest.OpenAIText("test-model", "done"),
	)
	f.turnAndWait(ses.ID, "say hi")
	res := f.toolResult(1, "call_1")
	for _, want := range []string{"hi\n", "PostToolUse hook feedback:\nremember to run gofmt\nthe build is green\nlint failed: x.go:3 unused variable"} {
		if !strings.Contains(res, want) {
			t.Errorf("the result the model read lacks %q:\n%s", want, res)
		}
	}
	if strings.Contains(res, "plain text") {
		t.Errorf("a hook's plain stdout reached the model:\n%s", res)
	}
}

// A Stop hook that exits 2 does not let the turn end: its stderr goes to the model in a
// message marked as jean2's, and the agent goes on with a new turn; that turn's Stop hook
// sees stop_hook_active true and lets it end. Exactly two turns run.
func TestStopHookExit2GoesOn(t *testing.T) {
	f := hookFixture(t, map[string]any{"Stop": []any{command(
		`cat >> stop-inputs.jsonl; echo >> stop-inputs.jsonl; if [ ! -f stopped-once ]; then touch stopped-once; echo 'the tests fail: fix them first' >&2; exit 2; fi`)}})
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIText("test-model", "all done"),
		providertest.OpenAIText("test-model", "fixed the tests"),
		providertest.OpenAIText("test-model", "a third turn must not run"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "finish"}, 202, nil)
	sock.until("turn.finished", 90*time.Second)
	sock.until("turn.finished", 90*time.Second)
	time.Sleep(500 * time.Millisecond)
	reqs := f.fake.Requests()
	if len(reqs) != 2 || f.srv.harness.Running(ses.ID) {
		t.Fatalf("%d model requests, running %v; want 2 and idle", len(reqs), f.srv.harness.Running(ses.ID))
	}
	want := harness.HookContinuePrefix + "A Stop hook did not let the turn end: the tests fail: fix them first"
	if !strings.Contains(string(reqs[1].Body), want) {
		t.Errorf("the second turn's request lacks %q:\n%.1000s", want, reqs[1].Body)
	}
	in, _ := os.ReadFile(filepath.Join(f.ws, "stop-inputs.jsonl"))
	if got := string(in); !strings.Contains(got, `"stop_hook_active":false`) || !strings.Contains(got, `"stop_hook_active":true`) {
		t.Errorf("the Stop hooks' inputs:\n%s", got)
	}
}

// A PreCompact hook runs before a compaction, given its trigger: the hook's file is there
// when the summary is asked for.
func TestPreCompactHookRunsFirst(t *testing.T) {
	f := hookFixture(t, map[string]any{"PreCompact": []any{
		map[string]any{"matcher": "manual", "hooks": []any{map[string]any{"type": "command", "command": "cat > precompact.json"}}},
		map[string]any{"matcher": "auto", "hooks": []any{map[string]any{"type": "command", "command": "touch wrong-trigger"}}},
	}})
	_, ses := f.session()
	for i := range 3 {
		f.fake.Push(providertest.NewOpenAIStream("test-model").Text("ok").Finish("stop").Usage(3, 1).Done().Reply())
		f.turnAndWait(ses.ID, strings.Repeat("long words ", 100)+string(rune('A'+i)))
	}
	hookFile := filepath.Join(f.ws, "precompact.json")
	var seenFirst []byte
	f.fake.Respond(func(providertest.Request) providertest.Reply {
		seenFirst, _ = os.ReadFile(hookFile)
		return providertest.NewOpenAIStream("test-model").Text("SUMMARY").Finish("stop").Usage(3, 1).Done().Reply()
	})
	f.call("POST", "/api/sessions/"+ses.ID+"/compact", nil, 200, nil)
	if !strings.Contains(string(seenFirst), `"hook_event_name":"PreCompact"`) || !strings.Contains(string(seenFirst), `"trigger":"manual"`) {
		t.Errorf("when the summary was asked for, the PreCompact hook's input was %q", seenFirst)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "wrong-trigger")); !os.IsNotExist(err) {
		t.Errorf("the hook matched to auto ran for a manual compaction: %v", err)
	}
}

// A PreCompact hook matched to "auto" runs before a turn compacts a conversation that no
// longer fits the model's context window: its file is there when the summary is asked for.
func TestPreCompactHookRunsBeforeAutoCompaction(t *testing.T) {
	f := hookFixture(t, map[string]any{"PreCompact": []any{
		map[string]any{"matcher": "auto", "hooks": []any{map[string]any{"type": "command", "command": "cat > precompact.json"}}},
	}})
	f.call("PUT", "/api/providers", map[string]any{"providers": []map[string]any{{"name": "openai", "kind": "openai",
		"baseUrl": f.fake.BaseURL(), "apiKey": f.fake.Key, "model": "test-model", "contextWindow": 6000}}}, 200, nil)
	_, ses := f.session()
	hookFile := filepath.Join(f.ws, "precompact.json")
	var mu sync.Mutex // the fake answers on its own goroutine
	var summaries int
	var seenFirst []byte
	f.fake.Respond(func(r providertest.Request) providertest.Reply {
		if strings.Contains(string(r.Body), "You summarize a conversation") {
			mu.Lock()
			defer mu.Unlock()
			summaries++
			seenFirst, _ = os.ReadFile(hookFile)
			return providertest.NewOpenAIStream("test-model").Text("SUMMARY").Finish("stop").Usage(3, 1).Done().Reply()
		}
		return providertest.NewOpenAIStream("test-model").Text("ok").Finish("stop").Usage(3, 1).Done().Reply()
	})
	compacted := func() bool { mu.Lock(); defer mu.Unlock(); return summaries > 0 }
	for i := 0; i < 8 && !compacted(); i++ {
		f.turnAndWait(ses.ID, strings.Repeat("long words ", 400)+string(rune('A'+i)))
	}
	mu.Lock()
	defer mu.Unlock()
	if summaries == 0 {
		t.Fatalf("no compaction after 8 turns of 4400 characters in a window of 6000 tokens")
	}
	if !strings.Contains(string(seenFirst), `"trigger":"auto"`) {
		t.Errorf("when the summary was asked for, the PreCompact hook's input was %q", seenFirst)
	}
}
