package server

import (
	"encoding/json"
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

// TestHookAttackInputTooLargeToCheck: a person's PreToolUse hook denies `rm -rf` in shell
// commands. A hook reads the call's input in its command's own text, at most 96 KiB; a
// larger input was replaced by {"_truncated": …} and the hook, seeing no command, let the
// call run. So a model (led by a page it read) padded its command past 96 KiB and removed
// what the hook guards. A call whose input its PreToolUse hooks cannot be given is not run.
func TestHookAttackInputTooLargeToCheck(t *testing.T) {
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || !st.NetNS {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	f := newFixture(t)
	sb := host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0]}
	f.cfg.Host.Sandbox = sb
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: f.cfg.Host.Layout}})
	cfg := map[string]any{"hooks": map[string]any{"PreToolUse": []any{
		map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command",
			"command": `if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi`}}},
	}}}
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(f.home, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f.start()
	if err := os.MkdirAll(filepath.Join(f.ws, "stuff"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, ses := f.session()
	padded, _ := json.Marshal(map[string]string{"command": ": " + strings.Repeat("x", 100<<10) + "; rm -rf stuff"})
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_big", "shell", string(padded)),
		providertest.OpenAIText("test-model", "done"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "tidy up"}, 202, nil)
	if fin, _ := sock.until("turn.finished", 90*time.Second); !strings.Contains(string(fin.Payload), `"reason":"done"`) {
		t.Fatalf("turn: %s", fin.Payload)
	}
	res := f.toolResult(1, "call_big")
	if _, err := os.Stat(filepath.Join(f.ws, "stuff")); err != nil {
		t.Fatalf("a command padded past what a hook is given ran unchecked and removed stuff (%v); the model read: %.200s", err, res)
	}
	if !strings.Contains(res, "PreToolUse") {
		t.Errorf("the model was not told why: %.300s", res)
	}
	t.Logf("the model read: %.300s", res)
}
