package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/web/internal/browsertest"
)

// axeSource finds axe-core (scripts/setup installs it into .deps; JEAN2_AXE names another
// copy of axe.min.js).
func axeSource(t *testing.T) string {
	t.Helper()
	p := os.Getenv("JEAN2_AXE")
	if p == "" {
		p, _ = filepath.Abs("../../.deps/node_modules/axe-core/axe.min.js")
	}
	src, err := os.ReadFile(p)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("axe-core is not installed at %s: scripts/setup installs it", p)
		}
		t.Skipf("axe-core is not installed at %s (scripts/setup installs it; JEAN2_AXE names another axe.min.js)", p)
	}
	return string(src)
}

// axeCheck runs axe-core (WCAG 2 A and AA rules) on the page as it is and fails on every
// violation, naming the rule and the elements.
func (f *fixture) axeCheck(src, where string) {
	f.t.Helper()
	f.axeCheckOf(src, where, "document")
}

// axeCheckOf is axeCheck of the part of the page the JavaScript expression context names
// (axe-core's context: a node, a selector, {include: [...]}).
func (f *fixture) axeCheckOf(src, where, context string) {
	f.t.Helper()
	if _, err := browsertest.Eval[bool](f.b, 30*time.Second, src+";true"); err != nil {
		f.t.Fatalf("load axe-core: %v", err)
	}
	out, err := browsertest.Eval[string](f.b, 60*time.Second, `axe.run(`+context+`, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } })
  .then((r) => JSON.stringify(r.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ") + " — " + (n.failureSummary || "").split("\n").slice(0, 2).join(" ")) }))))`)
	if err != nil {
		f.t.Fatalf("run axe-core: %v", err)
	}
	var violations []struct {
		ID, Help string
		Nodes    []string
	}
	if err := json.Unmarshal([]byte(out), &violations); err != nil {
		f.t.Fatal(err)
	}
	for _, v := range violations {
		f.t.Errorf("%s: axe %s (%s):\n  %s", where, v.ID, v.Help, strings.Join(v.Nodes, "\n  "))
	}
}

// TestAxeClean: the conversation with every visualization and an ask, the tools page and
// Settings pass axe-core's WCAG 2 A/AA rules, in light and dark.
func TestAxeClean(t *testing.T) {
	src := axeSource(t)
	f := newFixture(t)
	s := f.session("axe")
	var calls [][2]string
	for _, typ := range []string{"diff", "diffs", "code", "file-list", "table", "markdown", "shell-output", "todo-list", "structured-response", "none"} {
		calls = append(calls, [2]string{"show", fmt.Sprintf(`{"type":%q}`, typ)})
	}
	permission := `{"ask":{"type":"permission","question":"May I read the logs?","risk":"medium","resource":"logs","duration":"session"}}`
	f.fake.Push(toolCalls(calls...), toolCalls([2]string{"ask_it", permission}), text("All drawn."))
	for _, scheme := range []string{"light", "dark"} {
		if err := f.b.Do(10*time.Second, emulateScheme(scheme)); err != nil {
			t.Fatal(err)
		}
		f.open("#/s/" + s.ID)
		if scheme == "light" {
			f.typeInto("#composer-input", "draw everything\n")
			f.waitText("dialog[open] .ask-permission", "May I read the logs?")
			f.axeCheck(src, scheme+" conversation with a permission dialog")
			f.answerDialog("once")
		}
		f.waitText(".message.assistant", "All drawn.")
		f.axeCheck(src, scheme+" conversation")
		f.open("#/tools")
		f.waitJS("the tools", `document.querySelector('.tool[data-tool="greet"]') !== null`)
		f.axeCheck(src, scheme+" tools page")
		f.open("#/settings")
		f.waitText(".providers", "openai")
		f.axeCheck(src, scheme+" settings")
	}
}

// emulateScheme makes the page see prefers-color-scheme: scheme.
func emulateScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}
