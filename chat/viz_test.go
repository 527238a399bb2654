package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every visualization type of REFERENCE §6 is drawn for a terminal: without colour here,
// with the marks and numbers a person reads.
func TestDrawVizEveryType(t *testing.T) {
	// Images are saved to the user's cache folder: the test's own.
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache) // macOS's cache folder is below HOME
	cases := []struct {
		name, viz string
		want      []string
	}{
		{"diff", `{"type":"diff","path":"a.go","additions":1,"deletions":1,"hunks":[{"oldStart":9,"oldLines":2,"newStart":9,"newLines":2,
			"changes":[{"type":"context","content":"package a"},{"type":"removed","content":"var x = 1"},{"type":"added","content":"var x = 2"}]}]}`,
			[]string{"a.go  +1 -1", "@@ -9,2 +9,2 @@", " 9  9  package a", "10    -var x = 1", "   10 +var x = 2"}},
		{"diffs", `{"type":"diffs","items":[{"type":"diff","path":"one.txt","additions":1,"deletions":0,"hunks":[]},{"type":"diff","title":"Deleted two.txt","path":"two.txt","additions":0,"deletions":2,"hunks":[]}]}`,
			[]string{"one.txt  +1 -0", "Deleted two.txt", "two.txt  +0 -2"}},
		{"code", `{"type":"code","path":"x.py","content":"a = 1\nb = 2\n","language":"python","created":true,"highlightLines":[2]}`,
			[]string{"x.py  (created, 2 lines, python)", "1 │ a = 1", "2 ▶ b = 2"}},
		{"file-list", `{"type":"file-list","files":[{"path":"new.txt","action":"created"},{"path":"old.txt","action":"deleted"},{"path":"m.go","line":3,"content":"func m()"}],
			"groups":[{"label":"Edited","icon":"edit","files":[{"path":"e.txt","action":"modified"}]}],"total":10}`,
			[]string{"+ new.txt", "- old.txt", "  m.go:3  func m()", "✎ Edited (1)", "  ~ e.txt", "… 10 files in all"}},
		{"table", `{"type":"table","columns":[{"key":"name","label":"Name"},{"key":"n"}],"rows":[{"name":"alpha","n":1},{"name":"b","n":{"x":true}}],"totalRows":5}`,
			[]string{"Name   n", "─────  ────────", "alpha  1", `b      {"x":true}`, "2 of 5 rows"}},
		{"markdown", `{"type":"markdown","content":"# Title\n\nSome **bold** text.\n` + "```" + `\ncode\n` + "```" + `","sourceUrl":"https://example.com"}`,
			[]string{"# Title", "Some **bold** text.", "code", "source: https://example.com"}},
		{"shell-output", `{"type":"shell-output","command":"make test","stdout":"ok\n","stderr":"warn\n","exitCode":2}`,
			[]string{"$ make test", "ok", "warn", "exit code 2"}},
		{"todo-list", `{"type":"todo-list","items":[{"content":"plan","status":"completed","priority":"high"},{"content":"build","status":"in_progress"},{"content":"ship","status":"pending","priority":"low"},{"content":"skip","status":"cancelled"}]}`,
			[]string{"[x] plan (high)", "[~] build", "[ ] ship (low)", "[-] skip"}},
		{"structured-response", `{"type":"structured-response","formatName":"Summary","data":{"ok":true,"items":[1,2]}}`,
			[]string{"Summary", `"ok": true`, `"items": [`}},
		{"none", `{"type":"none","message":"nothing to show"}`, []string{"nothing to show"}},
		{"images", `{"type":"images","images":[{"mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"}],"omitted":0}`,
			[]string{"[image/png 69 B, 1×1: saved to " + filepath.Join(cache, "jean2", "images", "")}},
		{"title and unknown type", `{"type":"sparkles","title":"Shiny"}`, []string{"Shiny", `(a "sparkles" visualization, which the terminal does not draw)`}},
		{"a known type that cannot be read", `{"type":"todo-list","items":"not a list"}`, []string{"(a todo-list visualization that could not be read: "}},
		{"escape sequences are shown, not run", `{"type":"none","message":"\u001b[2Jcleared"}`, []string{`\u001b[2Jcleared`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			drawViz(&b, chatStyle{}, json.RawMessage(c.viz), "")
			out := b.String()
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, out)
				}
			}
			if strings.Contains(out, "\x1b") {
				t.Errorf("an escape character reached the terminal:\n%q", out)
			}
		})
	}

	// The image was saved where the line says, as the bytes it had.
	saved, _ := filepath.Glob(filepath.Join(cache, "jean2", "images", "*.png"))
	if b, err := os.ReadFile(strings.Join(saved, "")); len(saved) != 1 || err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) != 69 {
		t.Errorf("saved images %v: %d bytes, %v", saved, len(b), err)
	}

	// Colour marks additions green and removals red, and only when asked for.
	var b bytes.Buffer
	drawViz(&b, chatStyle{color: true}, json.RawMessage(cases[0].viz), "")
	if !strings.Contains(b.String(), "\x1b[32m+var x = 2\x1b[0m") || !strings.Contains(b.String(), "\x1b[31m-var x = 1\x1b[0m") {
		t.Errorf("diff colours:\n%q", b.String())
	}
	// A collapsed or huge visualization is cut, saying how much was left out.
	var lines []string
	for i := range 1000 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	big, _ := json.Marshal(map[string]any{"type": "code", "path": "big.txt", "content": strings.Join(lines, "\n"), "created": false})
	b.Reset()
	drawViz(&b, chatStyle{}, big, "")
	if !strings.Contains(b.String(), "… 601 more lines") || strings.Contains(b.String(), "line 999") {
		t.Errorf("a 1000-line visualization was not cut at %d lines:\n%s", vizMaxLines, b.String()[len(b.String())-200:])
	}
	b.Reset()
	drawViz(&b, chatStyle{}, json.RawMessage(`{"type":"none","message":"x"`), "")
	if !strings.Contains(b.String(), "not a JSON object") {
		t.Errorf("broken JSON: %q", b.String())
	}
}
