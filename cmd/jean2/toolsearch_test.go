package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/install"
)

// tools search lists the index with what is installed; install --all takes what is not
// installed, --installed reinstalls what is.
func TestToolsSearchAllAndInstalled(t *testing.T) {
	c := newCLI(t)
	repo := t.TempDir()
	put := func(name, version, desc, category string) install.IndexTool {
		data := makeTarGz(t, "", namedFiles(name, version))
		writeFile(t, filepath.Join(repo, "archives", name, version+".tar.gz"), data)
		return install.IndexTool{Name: name, Description: desc, Category: category, Version: version, SHA256: sha(data)}
	}
	tools := []install.IndexTool{
		put("greet", "1.0.0", "Says hello in many languages.", "fun"),
		put("count-words", "0.2.0", "Counts the words of a file.", "filesystem"),
		put("hello", "0.1.0", "Another greeting.", "fun"),
	}
	data, _ := json.Marshal(map[string]any{"version": 3, "registry": map[string]string{"baseUrl": "archives"}, "tools": tools})
	writeFile(t, filepath.Join(repo, "index.json"), data)
	env := []string{"JEAN2_TOOL_REGISTRY_URL=" + filepath.Join(repo, "index.json")}

	if out, stderr, code := c.runWith(env, "tools", "install", "hello"); code != 0 {
		t.Fatalf("install hello: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code := c.runWith(env, "tools", "search", "FUN")
	if code != 0 || !strings.Contains(out, "greet") || !strings.Contains(out, "hello") || strings.Contains(out, "count-words") ||
		!strings.Contains(out, "2 shown, 1 installed") {
		t.Fatalf("search fun: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = c.runWith(env, "tools", "search", "words", "file", "--json")
	var hits []searchHit
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) != 1 || hits[0].Name != "count-words" || hits[0].Installed || hits[0].Version != "0.2.0" {
		t.Fatalf("search --json: exit %d\n%s", code, out)
	}
	if out, _, _ := c.runWith(env, "tools", "search", "nothing-like-this"); !strings.Contains(out, "No tool of the index") {
		t.Fatalf("no match: %s", out)
	}

	out, stderr, code = c.runWith(env, "tools", "install", "--all")
	if code != 0 || !strings.Contains(out, "Installed greet 1.0.0") || !strings.Contains(out, "Installed count-words 0.2.0") || strings.Contains(out, "hello") {
		t.Fatalf("--all: exit %d\n%s\n%s", code, out, stderr)
	}
	_, stderr, code = c.runWith(env, "tools", "install", "--all")
	if code != 0 || !strings.Contains(stderr, "every tool of the index") {
		t.Fatalf("--all again: exit %d %s", code, stderr)
	}
	out, stderr, code = c.runWith(env, "tools", "install", "--installed", "--json")
	var outcomes []installOutcome
	if code != 0 || json.Unmarshal([]byte(out), &outcomes) != nil || len(outcomes) != 3 {
		t.Fatalf("--installed: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, o := range outcomes {
		if !o.OK || o.Result.Replaced == "" {
			t.Errorf("--installed %s: %+v; want it reinstalled over the installed copy", o.Source, o)
		}
	}
	if _, _, code := c.runWith(env, "tools", "install", "--recommended", "--installed"); code != 2 {
		t.Fatalf("--recommended with --installed: exit %d, want 2", code)
	}
}
