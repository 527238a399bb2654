package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
)

// Agent files in the shapes people bring: Claude Code's front matter (tools as a comma
// list or a YAML list, Claude's tool names mapped, permissionMode plan), a file without
// front matter, and files that are refused one by one (unclosed front matter, a built-in's
// name, a symlink out of the folder) without keeping the others from loading.
func TestLoadAgents(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.md")
	files := map[string]string{
		filepath.Join(home, "agents", "explore.md"):        "---\nname: explore\nmodel: haiku\ndescription: Looks around\ntools:\n  - Glob\n  - LS\npermissionMode: plan\n---\nLook only.\n",
		filepath.Join(ws, ".claude", "agents", "fixer.md"): "---\nname: fixer\ndescription: Fixes\ntools: Read, Edit, Bash\ndisallowedTools: WebFetch\nmodel: gpt-fast\npermissionMode: bypassPermissions\n---\nFix it.\n",
		filepath.Join(ws, ".jean2", "agents", "plain.md"):  "Just a body.\n",
		filepath.Join(ws, ".jean2", "agents", "open.md"):   "---\nname: open\n",
		filepath.Join(ws, ".jean2", "agents", "plan.md"):   "---\nname: plan\n---\nmine\n",
		filepath.Join(ws, ".jean2", "agents", "off.md"):    "---\nname: off\ndisabled: true\n---\n",
		outside: "---\nname: leaked\n---\n",
	}
	for path, text := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(ws, ".jean2", "agents", "link.md")); err != nil {
		t.Fatal(err)
	}
	all := harness.LoadAgents(home, ws)
	if got := strings.Join(all.Names(), ","); got != "build,plan,explore,fixer,plain" {
		t.Fatalf("agents %s; problems %+v", got, all.Problems)
	}
	ex, _ := all.Lookup("explore")
	if !ex.ReadOnly || strings.Join(ex.Tools, ",") != "glob,ls" || ex.Instructions != "Look only." || ex.Scope != "home" ||
		ex.Model != "" || len(ex.Warnings) != 1 {
		t.Fatalf("explore %+v", ex)
	}
	fx, _ := all.Lookup("fixer")
	if fx.ReadOnly || strings.Join(fx.Tools, ",") != "edit,read-file,shell" || strings.Join(fx.DisallowedTools, ",") != "webfetch" ||
		fx.Model != "gpt-fast" || len(fx.Warnings) != 1 || !strings.Contains(fx.Warnings[0], "bypassPermissions") {
		t.Fatalf("fixer %+v", fx)
	}
	if pl, _ := all.Lookup("plain"); pl.Instructions != "Just a body." || pl.Tools != nil {
		t.Fatalf("plain %+v", pl)
	}
	if b, _ := all.Lookup(""); b.Name != harness.DefaultAgent {
		t.Fatalf("the default agent: %+v", b)
	}
	problems := map[string]string{}
	for _, p := range all.Problems {
		problems[filepath.Base(p.Path)] = p.Error
	}
	if len(problems) != 3 || !strings.Contains(problems["open.md"], "never closed") ||
		!strings.Contains(problems["plan.md"], "built-in") || !strings.Contains(problems["link.md"], "not read") {
		t.Fatalf("problems %+v", all.Problems)
	}
	if why := ex.Refuses("glob", nil); !strings.Contains(why, "plan mode") {
		t.Fatalf("a plan agent takes a tool that is not installed: %q", why)
	}
}

// BenchmarkLoadAgents reads 50 agent files, as each turn's start does.
func BenchmarkLoadAgents(b *testing.B) {
	ws := b.TempDir()
	dir := filepath.Join(ws, ".jean2", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		text := fmt.Sprintf("---\nname: agent%02d\ndescription: Agent number %d\ntools: Read, Grep, Glob\n---\n%s\n", i, i, strings.Repeat("Do the thing well. ", 100))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("a%02d.md", i)), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if all := harness.LoadAgents("", ws); len(all.Agents) != 52 {
			b.Fatalf("%d agents", len(all.Agents))
		}
	}
}

// A subagent never has more tools than its parent's agent lets the parent use: a task call
// that names no tools gives the child those the agent allows (not every tool), and the
// child's call of another tool is refused.
func TestAgentNarrowsSubagents(t *testing.T) {
	f := newSubagentFixture(t, func(o *harness.Options) { o.WorkRounds = 20 })
	dir := filepath.Join(f.ws, ".jean2", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lead.md"), []byte("---\nname: lead\ntools: trivial, task\n---\nDelegate.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.session.Agent = "lead"
	if _, err := f.db.UpdateSession(context.Background(), f.session); err != nil {
		t.Fatal(err)
	}
	var parentTools, childTools []string
	f.respond(func(r req) providertest.Reply {
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			parentTools = r.tools
			return f.call("call_p1", "task", map[string]any{"prompt": "CHILD"})
		case r.user == "PARENT":
			return f.say("parent: " + strings.Join(r.results, " | "))
		case r.user == "CHILD" && len(r.results) == 0:
			childTools = r.tools
			return f.call("call_c1", "note", map[string]any{"path": "x.txt", "text": "x"})
		}
		return f.say("child: " + strings.Join(r.results, " | "))
	})
	if _, fin := f.turn("PARENT"); fin.Reason != harness.ReasonDone {
		t.Fatalf("parent finished %+v", fin)
	}
	if !slices.Equal(parentTools, []string{"task", "trivial"}) || !slices.Equal(childTools, []string{"task", "trivial"}) {
		t.Fatalf("offered: parent %v, child %v; want [task trivial] both", parentTools, childTools)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "x.txt")); !os.IsNotExist(err) {
		t.Fatalf("the child wrote x.txt: %v", err)
	}
	msgs := f.messages()
	if answer := msgs[len(msgs)-1].Content; !strings.Contains(answer, "tool note is not among the tools this subagent was given (task, trivial)") {
		t.Fatalf("the parent's answer: %s", answer)
	}
}
