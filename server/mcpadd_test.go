package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// POST /api/mcp/servers adds a server to $JEAN2_HOME/mcp.json, keeping what the file had;
// the list shows it (not started: jean2 serve started before it was added). What cannot
// work is refused saying why, and a broken file is left for the person to fix.
func TestAddMCPServer(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	file := filepath.Join(f.home, "mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"old": {"url": "https://mcp.example.com/mcp", "headers": {"X-Kept": "yes"}}}, "comment": "mine"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f.start()
	add := map[string]any{"name": "files", "command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"},
		"env": map[string]string{"DEBUG": "1"}, "network": []string{"registry.npmjs.org"}}
	var row mcpServerView
	f.call("POST", "/api/mcp/servers", add, 201, &row)
	if row.Name != "files" || row.Type != "stdio" || row.State != "not started" || !strings.Contains(row.Error, "reads the file again") {
		t.Fatalf("row of the added server = %+v", row)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v", file, err, fi.Mode())
	}
	var written struct {
		Servers map[string]map[string]any `json:"mcpServers"`
		Comment string                    `json:"comment"`
	}
	data, _ := os.ReadFile(file)
	if err := json.Unmarshal(data, &written); err != nil || written.Comment != "mine" || written.Servers["old"]["headers"] == nil ||
		written.Servers["files"]["command"] != "npx" || written.Servers["files"]["network"] == nil || written.Servers["files"]["sandbox"] != nil {
		t.Fatalf("mcp.json after adding: %s (%v)", data, err)
	}
	var list struct {
		Servers []mcpServerView `json:"servers"`
	}
	f.call("GET", "/api/mcp/servers", nil, 200, &list)
	var names []string
	for _, s := range list.Servers {
		names = append(names, s.Name+":"+s.State)
	}
	if strings.Join(names, ",") != "files:not started,old:not started" {
		t.Fatalf("listed %v", names)
	}
	f.call("POST", "/api/mcp/servers", map[string]any{"name": "web", "url": "https://mcp.example.org/mcp"}, 201, &row)
	if row.Type != "http" || row.URL != "https://mcp.example.org/mcp" {
		t.Fatalf("HTTP server's row = %+v", row)
	}

	for _, c := range []struct {
		body   map[string]any
		status int
		says   string
	}{
		{map[string]any{"name": "files", "command": "uvx"}, 409, "already lists a server named files"},
		{map[string]any{"name": "x"}, 400, "give command"},
		{map[string]any{"name": "x", "command": "a", "url": "https://a.example/mcp"}, 400, "not both"},
		{map[string]any{"name": "x", "url": "ftp://a.example/mcp"}, 400, "not an http(s) URL"},
		{map[string]any{"name": "../x", "command": "a"}, 400, "use letters"},
		{map[string]any{"name": "x", "command": "a", "network": []string{"http://bad/"}}, 400, "network"},
		{map[string]any{"name": "x", "command": "a", "env": map[string]string{"1A": "v"}}, 400, "not an environment variable name"},
		{map[string]any{"name": "x", "command": "a", "env": map[string]string{"K": "${OPENAI_API_KEY}"}}, 400, "keeps from tools"},
		{map[string]any{"name": "x", "command": "a", "sandbox": false}, 400, "sandbox"},
	} {
		body := f.call("POST", "/api/mcp/servers", c.body, c.status, nil)
		if !strings.Contains(string(body), c.says) {
			t.Errorf("POST %v: %s, want it to say %q", c.body, body, c.says)
		}
	}
	// A file that does not parse is not overwritten.
	broken := []byte(`{"mcpServers": {"a": {"command": "x", "bogus": 1}}}`)
	if err := os.WriteFile(file, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	body := f.call("POST", "/api/mcp/servers", map[string]any{"name": "y", "command": "a"}, 400, nil)
	if now, _ := os.ReadFile(file); string(now) != string(broken) || !strings.Contains(string(body), "fix it first") {
		t.Fatalf("broken file: %s; now %s", body, now)
	}
}
