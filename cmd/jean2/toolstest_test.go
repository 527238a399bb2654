package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `jean2 tools test` runs a tool's cases in a real worker under the real policy: a fixture
// workspace, a declared variable, a scripted answer, a stub model, a snapshot, the ledger
// and what the sandbox refused. All pass: exit 0.
func TestToolsTestPasses(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "tested")
	copyDir(t, "testdata/tested", dir)
	out, stderr, code := c.run("", "tools", "test", "tested")
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"ok    declined (tests/declined.json#1)", "ok    summarises a note (tests/summary.json)", "all 2 cases passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// The tool's own write outside the workspace was refused, and the case saw it.
	if _, err := os.Stat("/var/tmp/jean2-tools-test-escape.txt"); err == nil {
		t.Error("the sandbox let the tool write /var/tmp/jean2-tools-test-escape.txt")
	}
	// By folder, from inside it, and --json.
	c.ws = dir
	out, _, code = c.run("", "tools", "test", "--json")
	var rep []struct {
		Case   string
		Passed bool
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep) != 2 || !rep[0].Passed || !rep[1].Passed {
		t.Fatalf("--json: exit %d %s", code, out)
	}
}

// A case that does not hold fails: exit 1, and the report names the case and each
// difference.
func TestToolsTestReportsFailures(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "tested")
	copyDir(t, "testdata/tested", dir)
	wrong := `{
  "name": "expects the wrong things",
  "input": { "path": "a.txt" },
  "workspace": { "files": { "a.txt": "one two three" } },
  "answers": ["y"],
  "llm": [{ "text": "three words", "prompt": "four" }, { "json": { "tags": "not an array" } }],
  "expect": {
    "result": { "summary": "four words", "tags": ["numbers"], "words": 4, "missing": true },
    "asks": [],
    "files": { "summary.txt": "four words", "a.txt": null },
    "ledger": [{ "path": "other.txt", "op": "write" }],
    "refused": ["reading /etc"],
    "llmCalls": 3
  }
}`
	if err := os.WriteFile(filepath.Join(dir, "tests", "wrong.json"), []byte(wrong), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := c.run("", "tools", "test", "tested")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"FAIL  expects the wrong things (tests/wrong.json)",
		`result.summary: got "three words", want "four words"`,
		`result.tags: got "not an array", want an array`,
		`result.words: got 3, want 4`,
		`result.missing is missing, want true`,
		`asks: the tool made 1 ask(s), want 0: confirm "Write the summary of a.txt?"`,
		`files["a.txt"]: the file exists, want it absent`,
		`files["summary.txt"]: got "three words", want "four words"`,
		`ledger[0]: no change {"path":"other.txt","op":"write"}`,
		`refused: nothing was refused, want a refusal containing "reading /etc"`,
		`llmCalls: the tool called the model 2 time(s), want 3`,
		`llm: model call 1: the prompt lacks "four"`,
		`llm: model call 2: the scripted json does not match the tool's schema`,
		"ok    declined",
		"1 of 3 cases failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// --run picks cases by name: the passing ones alone pass.
	if out, _, code := c.run("", "tools", "test", "tested", "--run", "declined"); code != 0 || !strings.Contains(out, "1 case passed") || strings.Contains(out, "1 cases") {
		t.Fatalf("--run: exit %d %s", code, out)
	}
	// A changed visualization fails against its snapshot until --update rewrites it.
	snap := filepath.Join(dir, "tests", "__snapshots__", "summary.json")
	if err := os.WriteFile(snap, []byte(`{"type":"code","content":"old text","language":"text"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = c.run("", "tools", "test", "tested", "--run", "summarises")
	if code != 1 || !strings.Contains(out, `visualization.content: got "> two greek letters", want "old text" (snapshot tests/__snapshots__/summary.json; jean2 tools test --update rewrites it)`) ||
		!strings.Contains(out, `visualization.path is new (not in the snapshot): "$WORKSPACE/summary.txt"`) {
		t.Fatalf("snapshot: exit %d\n%s", code, out)
	}
	if out, _, code := c.run("", "tools", "test", "tested", "--run", "summarises", "--update"); code != 0 || !strings.Contains(out, "wrote tests/__snapshots__/summary.json") {
		t.Fatalf("--update: exit %d %s", code, out)
	}
	if out, _, code := c.run("", "tools", "test", "tested", "--run", "summarises"); code != 0 {
		t.Fatalf("after --update: exit %d %s", code, out)
	}
	// A malformed case file is an error that names it.
	_ = os.WriteFile(filepath.Join(dir, "tests", "bad.json"), []byte(`{"name":"x","expct":{}}`), 0o644)
	if _, stderr, code := c.run("", "tools", "test", "tested"); code != 1 || !strings.Contains(stderr, `tests/bad.json: json: unknown field "expct"`) {
		t.Fatalf("bad case file: exit %d %s", code, stderr)
	}
}
