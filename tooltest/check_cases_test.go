package tooltest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// TestCheckReportsEachDifference runs check on expectations that every part of an
// observation misses, and pins what it says, in order; then the same observation against
// expectations it meets, which must say nothing.
func TestCheckReportsEachDifference(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "here.txt"), []byte("actual"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "stays.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	obs := observed{
		workspace: ws,
		asks:      []tool.Ask{{Type: tool.AskPermission, Question: "May I?"}},
		ledger: []tool.Change{
			{Path: filepath.Join(ws, "a.txt"), Tool: "t", Op: "write", OK: true},
			{Path: filepath.Join(ws, "b.txt"), Tool: "t", Op: "rm", OK: true},
		},
		refused:  []string{"network: evil.example"},
		llmCalls: 2,
		llmErrs:  []string{"no answer left for call 3"},
	}
	res := tool.Result{Success: true, Result: json.RawMessage(`{"n":1}`), Visualization: json.RawMessage(`{"type":"none"}`)}
	expect := func(t *testing.T, raw string) Expect {
		t.Helper()
		var e Expect
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			t.Fatal(err)
		}
		return e
	}

	bad := expect(t, `{"error":"boom","result":{"n":2},"visualization":{"type":"text"},
		"asks":[{"type":"question"},{"type":"permission"}],
		"files":{"absent.txt":"want","here.txt":"wanted","stays.txt":null},
		"ledger":[{"op":"rm","path":"b.txt"},{"op":"write","path":"a.txt"}],
		"refused":["disk"],"llmCalls":1}`)
	problems, updated := check(t.TempDir(), Case{Expect: bad}, obs, res, Options{})
	want := []string{
		"success: got true, want false",
		`error: got "", want it to contain "boom"`,
		"result.n: got 1, want 2",
		`visualization.type: got "none", want "text"`,
		`asks: the tool made 1 ask(s), want 2: permission "May I?"`,
		`asks[0].type: got "permission", want "question"`,
		`files["absent.txt"]: the file is absent, want "want"`,
		`files["here.txt"]: got "actual", want "wanted"`,
		`files["stays.txt"]: the file exists, want it absent`,
		`ledger[1]: no change {"op":"write","path":"a.txt"} after the ones matched before; the ledger holds write a.txt ok=true; rm b.txt ok=true`,
		`refused: no refusal contains "disk"; refused were "network: evil.example"`,
		"llmCalls: the tool called the model 2 time(s), want 1",
		"llm: no answer left for call 3",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") || updated != "" {
		t.Fatalf("problems:\n%s\nwant:\n%s\nupdated %q", strings.Join(problems, "\n"), strings.Join(want, "\n"), updated)
	}

	// Nothing refused where a refusal is expected, and refusals where none are.
	problems, _ = check(t.TempDir(), Case{Expect: expect(t, `{"refused":["x"]}`)}, observed{workspace: ws}, res, Options{})
	if strings.Join(problems, "\n") != `refused: nothing was refused, want a refusal containing "x"` {
		t.Fatalf("nothing refused: %q", problems)
	}
	problems, _ = check(t.TempDir(), Case{Expect: expect(t, `{"refused":[]}`)}, obs, res, Options{})
	if strings.Join(problems, "\n") != `refused: want nothing refused, got "network: evil.example"`+"\nllm: no answer left for call 3" {
		t.Fatalf("refused none: %q", problems)
	}

	good := expect(t, `{"result":{"n":1},"visualization":{"type":"none"},"asks":[{"question":"May I?"}],
		"files":{"here.txt":"actual","gone.txt":null},"ledger":[{"op":"write","path":"a.txt"},{"op":"rm"}],
		"refused":["evil"],"llmCalls":2}`)
	obs.llmErrs = nil
	if problems, _ := check(t.TempDir(), Case{Expect: good}, obs, res, Options{}); len(problems) != 0 {
		t.Fatalf("a met expectation reported: %q", problems)
	}
	if problems, _ := check(t.TempDir(), Case{Expect: expect(t, `{"error":"failed"}`)}, obs, tool.Result{Error: "it failed badly"}, Options{}); len(problems) != 0 {
		t.Fatalf("an expected failure reported: %q", problems)
	}
	problems, _ = check(t.TempDir(), Case{Expect: expect(t, `{"success":true}`)}, obs, tool.Result{Error: "nope"}, Options{})
	if strings.Join(problems, "\n") != "success: got false, want true; the tool failed with: nope" {
		t.Fatalf("unexpected failure: %q", problems)
	}
}
