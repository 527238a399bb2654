package builtin_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// calc.py of issue 24's report.
const calcPy = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"

// diffLines draws a "diff" visualization as "-old/new text" lines, one per change.
func diffLines(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var v struct {
		Type  string `json:"type"`
		Hunks []struct {
			Changes []struct {
				Type    string `json:"type"`
				Content string `json:"content"`
				Old     int    `json:"oldLineNumber"`
				New     int    `json:"newLineNumber"`
			} `json:"changes"`
		} `json:"hunks"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Type != "diff" {
		t.Fatalf("not a diff visualization (%v): %s", err, raw)
	}
	var out []string
	for _, h := range v.Hunks {
		for _, c := range h.Changes {
			out = append(out, fmt.Sprintf("%s%d/%d %s", map[string]string{"context": " ", "removed": "-", "added": "+"}[c.Type], c.Old, c.New, c.Content))
		}
	}
	return out
}

func wantLines(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: the diff drawn is\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An edit inside a line is drawn as the whole line removed and added, with context and
// line numbers (issue 24: it was drawn as "-a - b" / "+(a - b)  # fixed", as if "return "
// had gone).
func TestEditDiffShowsWholeLines(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{"calc.py": calcPy})
	out := e.call("edit", `{"path":"calc.py","oldString":"a - b","newString":"(a - b)  # fixed"}`)
	if !out.Result.Success {
		t.Fatal(out.Result.Error)
	}
	wantLines(t, "edit", diffLines(t, out.Result.Visualization),
		" 3/3 ", " 4/4 ", " 5/5 def sub(a, b):",
		"-6/0     return a - b",
		"+0/6     return (a - b)  # fixed",
		" 7/7 ", " 8/8 ", " 9/9 def mul(a, b):")
}

func TestMultiEditDiffShowsWholeLines(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{"calc.py": calcPy})
	out := e.call("multiedit", `{"path":"calc.py","edits":[{"oldString":"def mul","newString":"def multiply"},{"oldString":"a + b","newString":"b + a"}]}`)
	if !out.Result.Success {
		t.Fatal(out.Result.Error)
	}
	wantLines(t, "multiedit", diffLines(t, out.Result.Visualization),
		" 1/1 def add(a, b):",
		"-2/0     return a + b",
		"+0/2     return b + a",
		" 3/3 ", " 4/4 ", " 5/5 def sub(a, b):", " 6/6     return a - b", " 7/7 ", " 8/8 ",
		"-9/0 def mul(a, b):",
		"+0/9 def multiply(a, b):",
		" 10/10     return a * b")
}

// apply-patch draws each file's diff, not only the names of the files it changed; an update
// further down a file numbers its lines as they are on each side.
func TestApplyPatchDrawsDiffs(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{"calc.py": calcPy, "old.txt": "bye\n"})
	patch := "*** Begin Patch\n*** Update File: calc.py\n@@ def add(a, b):\n-    return a + b\n+    # sum\n+    return a + b\n@@ def mul(a, b):\n-    return a * b\n+    return b * a\n" +
		"*** Add File: new.txt\n+hello\n*** Delete File: old.txt\n*** End Patch"
	e.asker.byType["permission"] = "true"
	out := e.call("apply-patch", fmt.Sprintf(`{"patch":%q}`, patch))
	if !out.Result.Success {
		t.Fatal(out.Result.Error)
	}
	var v struct {
		Type  string            `json:"type"`
		Title string            `json:"title"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(out.Result.Visualization, &v); err != nil || v.Type != "diffs" || len(v.Items) != 3 {
		t.Fatalf("visualization (%v): %s", err, out.Result.Visualization)
	}
	wantLines(t, "update", diffLines(t, v.Items[0]),
		" 1/1 def add(a, b):",
		"+0/2     # sum",
		" 2/3     return a + b",
		" 3/4 ", " 4/5 ",
		// a second hunk: lines 5 and 6 are more than twice the context from either change
		" 7/8 ", " 8/9 ", " 9/10 def mul(a, b):",
		"-10/0     return a * b",
		"+0/11     return b * a")
	wantLines(t, "add", diffLines(t, v.Items[1]), "+0/1 hello")
	wantLines(t, "delete", diffLines(t, v.Items[2]), "-1/0 bye")
}
