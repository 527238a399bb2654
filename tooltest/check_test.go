package tooltest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPartialMatch(t *testing.T) {
	got := json.RawMessage(`{"a":1,"b":{"c":[1,{"d":"x","e":2}],"f":null},"g":"extra"}`)
	if d := partial("r", json.RawMessage(`{"a":1,"b":{"c":[1,{"d":"x"}]}}`), got); len(d) != 0 {
		t.Fatalf("a partial expectation failed: %v", d)
	}
	d := strings.Join(partial("r", json.RawMessage(`{"a":2,"b":{"c":[1],"f":{}},"h":true}`), got), "\n")
	for _, want := range []string{"r.a: got 1, want 2", "r.b.c: got 2 items, want 1", "r.b.f: got null, want an object", "r.h is missing, want true"} {
		if !strings.Contains(d, want) {
			t.Errorf("differences lack %q:\n%s", want, d)
		}
	}
}

func TestLoadRefusesEscapingFixtures(t *testing.T) {
	dir := t.TempDir()
	if err := writeCase(dir, "x.json", `{"workspace":{"files":{"../out.txt":"x"}}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `workspace.files "../out.txt": the path leaves the workspace`) {
		t.Fatalf("err %v", err)
	}
	if err := writeCase(dir, "x.json", `[{"llm":[{"text":"a","json":{}}]}]`); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "tests/x.json, case 1: llm[0] needs exactly one of text, json and error") {
		t.Fatalf("err %v", err)
	}
}

func writeCase(dir, name, content string) error {
	if err := os.MkdirAll(filepath.Join(dir, Dir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, Dir, name), []byte(content), 0o644)
}
