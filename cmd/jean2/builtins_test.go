package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/builtin"
)

// isBuiltin reports whether name is a tool compiled into jean2; tests about folder tools
// leave those out of what they count.
func isBuiltin(name string) bool {
	for _, t := range builtin.Tools(builtin.Options{}) {
		if t.Definition().Name == name {
			return true
		}
	}
	return false
}

// withoutBuiltins drops built-ins from a decoded `tools list --json` (any slice of structs
// with a Name field, decoded again from its JSON).
func withoutBuiltins[T any](t *testing.T, entries []T) []T {
	t.Helper()
	var out []T
	for _, e := range entries {
		raw, _ := json.Marshal(e)
		var n struct{ Name string }
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatal(err)
		}
		if !isBuiltin(n.Name) {
			out = append(out, e)
		}
	}
	return out
}

// A fresh jean2 lists the built-ins; config.json turns one off; a tool folder of the
// same name replaces one; and a built-in runs from the command line.
func TestBuiltinsListedRunAndTurnedOff(t *testing.T) {
	c := newCLI(t)
	out, stderr, code := c.run("", "tools", "list", "--json")
	var entries []struct{ Name, Runtime, Status, Replaces string }
	if code != 0 || json.Unmarshal([]byte(out), &entries) != nil {
		t.Fatalf("list: exit %d %s %s", code, out, stderr)
	}
	want := map[string]bool{}
	for _, tl := range builtin.Tools(builtin.Options{}) {
		want[tl.Definition().Name] = true
	}
	for _, e := range entries {
		if want[e.Name] && e.Runtime == "builtin" && e.Status == "ok" {
			delete(want, e.Name)
		}
	}
	if len(want) != 0 {
		t.Fatalf("built-ins not listed: %v in %+v", want, entries)
	}
	if err := os.WriteFile(filepath.Join(c.ws, "notes.txt"), []byte("first\nsecond\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = c.run("", "tools", "run", "grep", "--input", `{"pattern":"sec","path":"."}`, "--workspace", c.ws)
	if code != 0 || !strings.Contains(out, `"file": "notes.txt"`) || !strings.Contains(out, `"line": 2`) {
		t.Fatalf("run grep: exit %d %s %s", code, out, stderr)
	}
	if err := os.WriteFile(filepath.Join(c.home, "config.json"), []byte(`{"disabledBuiltins":["grep"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ = c.run("", "tools", "list", "--json")
	_ = json.Unmarshal([]byte(out), &entries)
	for _, e := range entries {
		if e.Name == "grep" && e.Status != "disabled" {
			t.Fatalf("grep after config.json turned it off: %+v", e)
		}
	}
	if out, _, code = c.run("", "tools", "run", "grep", "--input", `{"pattern":"sec","path":"."}`, "--workspace", c.ws); code == 0 {
		t.Fatalf("a disabled built-in ran: %s", out)
	}
}
