package e2e_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/server"
)

// TestAgentSwitchInHeader: the session header names the agent and counts the agent files
// that did not load; Tab in the empty message box switches to plan (stored with the session,
// still shown after a reload); under plan the scripted model's write-file call is refused
// on its card and nothing is written; a click on the control switches on, back to build.
func TestAgentSwitchInHeader(t *testing.T) {
	f := newFixtureWith(t, func(_ *fixture, cfg *server.Config) {
		cfg.Host.Builtins = builtin.Tools(builtin.Options{})
	})
	dir := filepath.Join(f.ws, ".jean2", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.md"), []byte("---\nname: broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.session("agents")
	f.open("#/s/" + s.ID)
	f.waitText("#agent", "Agent: build")
	f.waitText("#agent-problems", "1 agent file not loaded")
	if got := f.eval(`document.querySelector("#agent-problems").title`); got != filepath.Join(dir, "broken.md")+": the front matter opened by --- is never closed by a --- line" {
		t.Fatalf("the problem's tooltip: %q", got)
	}

	f.click("#composer-input")
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent(kb.Tab)); err != nil {
		t.Fatal(err)
	}
	f.waitText("#agent", "Agent: plan (read-only)")
	var ses struct{ Agent string }
	f.api("GET", "/api/sessions/"+s.ID, nil, &ses)
	if ses.Agent != "plan" {
		t.Fatalf("the session's agent after Tab: %q", ses.Agent)
	}
	if got := f.eval(`document.activeElement.id`); got != "composer-input" {
		t.Fatalf("Tab moved the focus to %q", got)
	}
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText("#agent", "Agent: plan (read-only)")

	f.fake.Push(toolCalls([2]string{"write-file", `{"path":"made.txt","content":"x"}`}), text("Planned."))
	f.typeInto("#composer-input", "write made.txt\n")
	f.waitText(".message.assistant", "Planned.")
	f.waitText(`.tool-card[data-tool="write-file"]`, "plan mode")
	if _, err := os.Stat(filepath.Join(f.ws, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("made.txt under plan: %v", err)
	}

	f.click("#agent")
	f.waitText("#agent", "Agent: build")
	f.api("GET", "/api/sessions/"+s.ID, nil, &ses)
	if ses.Agent != "build" {
		t.Fatalf("the session's agent after the click: %q", ses.Agent)
	}

	// The tools page lists the workspace's agents and the file that did not load.
	f.open("#/tools")
	f.waitText(`#agents li.agent[data-agent="plan"]`, "read-only")
	f.waitText("#agents .agent-problems", filepath.Join(dir, "broken.md")+": the front matter opened by --- is never closed")
}

// TestHooksShownInTheConversation: a PreToolUse hook of config.json that denies write-file
// shows its reason on the call's card (the file is not written), and a Stop hook that fails
// is reported as an error notice.
func TestHooksShownInTheConversation(t *testing.T) {
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		cfg.Host.Builtins = builtin.Tools(builtin.Options{})
		hooks := `{"hooks": {
  "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo 'no writes today' >&2; exit 2"}]}],
  "Stop": [{"hooks": [{"type": "command", "command": "echo broken >&2; exit 7"}]}]}}`
		if err := os.WriteFile(filepath.Join(f.home, "config.json"), []byte(hooks), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	s := f.session("hooks")
	f.open("#/s/" + s.ID)
	f.fake.Push(toolCalls([2]string{"write-file", `{"path":"made.txt","content":"x"}`}), text("Could not write."))
	f.typeInto("#composer-input", "write made.txt\n")
	f.waitText(".message.assistant", "Could not write.")
	f.waitText(`.tool-card[data-tool="write-file"]`, "denied by a PreToolUse hook: no writes today")
	f.waitText("#notices .notice.error", "Hook Stop failed: exited with code 7: broken")
	if _, err := os.Stat(filepath.Join(f.ws, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("made.txt despite the hook: %v", err)
	}
}
