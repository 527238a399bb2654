package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/server"
)

// rowsJS lists the diff rows of the tool card of a tool as "kind old new text", the sign
// and the words said to a screen reader left out.
func rowsJS(toolName string) string {
	return `[...document.querySelectorAll('.tool-card[data-tool="` + toolName + `"] tr.line')].map((r) => {
	  const code = r.querySelector(".code").cloneNode(true);
	  code.querySelectorAll(".sign, .sr-only").forEach((e) => e.remove());
	  return [r.classList[1], r.querySelector(".ln.old").textContent, r.querySelector(".ln.new").textContent, code.textContent].join(" ");
	}).join("\n")`
}

// TestToolCardsDrawWholeLineDiffs (issue 24): the web card of an edit inside a line shows
// the whole line removed and added with its numbers and context (it showed "a - b" removed
// and "(a - b)  # fixed" added, as if "return " had gone), multiedit the same, and
// apply-patch shows each file's diff instead of only the files' names.
func TestToolCardsDrawWholeLineDiffs(t *testing.T) {
	f := newFixtureWith(t, func(_ *fixture, cfg *server.Config) {
		cfg.Host.Builtins = builtin.Tools(builtin.Options{})
	})
	calc := "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
	if err := os.WriteFile(filepath.Join(f.ws, "calc.py"), []byte(calc), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.session("diffs")
	patch := "*** Begin Patch\n*** Update File: calc.py\n@@ def add(a, b):\n-    return a + b\n+    return b + a\n*** Add File: notes.txt\n+hello\n*** End Patch"
	f.fake.Push(
		toolCalls([2]string{"edit", `{"path":"calc.py","oldString":"a - b","newString":"(a - b)  # fixed"}`}),
		toolCalls([2]string{"multiedit", `{"path":"calc.py","edits":[{"oldString":"def mul","newString":"def multiply"}]}`}),
		toolCalls([2]string{"apply-patch", `{"patch":` + jsString(patch) + `}`}),
		text("Done."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "fix calc\n")
	f.waitText(".message.assistant", "Done.")

	f.waitText(`.tool-card[data-tool="edit"] [data-viz-type=diff]`, "return (a - b)  # fixed")
	edit := f.eval(rowsJS("edit"))
	for _, want := range []string{"context 5 5 def sub(a, b):", "removed 6      return a - b", "added  6     return (a - b)  # fixed", "context 7 7 "} {
		if !strings.Contains(edit, want) {
			t.Errorf("the edit card lacks %q; its rows:\n%s", want, edit)
		}
	}
	multi := f.eval(rowsJS("multiedit"))
	for _, want := range []string{"removed 9  def mul(a, b):", "added  9 def multiply(a, b):"} {
		if !strings.Contains(multi, want) {
			t.Errorf("the multiedit card lacks %q; its rows:\n%s", want, multi)
		}
	}
	f.waitText(`.tool-card[data-tool="apply-patch"] [data-viz-type=diffs]`, "Applied patch to 2 files")
	patchRows := f.eval(rowsJS("apply-patch"))
	for _, want := range []string{"removed 2      return a + b", "added  2     return b + a", "added  1 hello"} {
		if !strings.Contains(patchRows, want) {
			t.Errorf("the apply-patch card lacks %q; its rows:\n%s", want, patchRows)
		}
	}
	f.waitText(`.tool-card[data-tool="apply-patch"]`, "Created "+filepath.Join(f.ws, "notes.txt"))
	f.shot("tool-card-diffs-patch")
	f.eval(`document.querySelector('.tool-card[data-tool="edit"]').scrollIntoView(); ""`)
	f.shot("tool-card-diffs-edit")
}
