package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plantMCPJSON writes the workspace's .jean2/mcp.json as a tool could: a stdio server whose
// command leaves marker behind.
func plantMCPJSON(t *testing.T, ws, marker string) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"planted": map[string]any{
		"command": "/bin/sh", "args": []string{"-c", "echo started > " + marker},
	}}})
	if err := os.MkdirAll(filepath.Join(ws, ".jean2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".jean2", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// `tools list`, `tools run` and `mcp` started the commands of the workspace's
// .jean2/mcp.json, whoever wrote it. They now start them only once a person trusted that
// content with `jean2 mcp trust`, and say how; a changed file asks again.
func TestMCPWorkspaceFileNeedsTrust(t *testing.T) {
	c := newCLI(t)
	copyDir(t, "../../host/testdata/word-count", filepath.Join(c.home, "tools", "word-count"))
	_ = os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("one two"), 0o644)
	marker := filepath.Join(c.ws, "started") // a confined server writes its workspace only
	plantMCPJSON(t, c.ws, marker)

	for _, args := range [][]string{
		{"tools", "list"},
		{"tools", "run", "word-count", "--input", `{"path":"a.txt"}`, "--workspace", c.ws},
		{"mcp", "--workspace", c.ws},
	} {
		_, stderr, _ := c.run("", args...)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("jean2 %s started the untrusted workspace's command", strings.Join(args, " "))
		}
		if !strings.Contains(stderr, "is not trusted") || !strings.Contains(stderr, "planted: /bin/sh -c") || !strings.Contains(stderr, "jean2 mcp trust --workspace "+c.ws) {
			t.Errorf("jean2 %s does not say the file is untrusted and how to trust it:\n%s", strings.Join(args, " "), stderr)
		}
	}

	// Not a terminal and no --yes: nothing is trusted.
	out, stderr, code := c.run("y\n", "mcp", "trust")
	if code != 1 || !strings.Contains(out, "planted: /bin/sh -c") || !strings.Contains(stderr, "--yes") {
		t.Fatalf("trust without a terminal: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, _, _ = c.run("", "tools", "list"); fileExists(marker) {
		t.Fatal("started after a refused trust")
	}
	out, stderr, code = c.run("", "mcp", "trust", "--yes", "--workspace", c.ws)
	if code != 0 || !strings.Contains(out, "Trusted ") {
		t.Fatalf("trust --yes: exit %d\n%s\n%s", code, out, stderr)
	}
	if fi, err := os.Stat(filepath.Join(c.home, "trusted-workspaces.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("trust store: %v %v", fi, err)
	}
	if _, stderr, _ = c.run("", "tools", "list"); !fileExists(marker) || strings.Contains(stderr, "not trusted") {
		t.Fatalf("the trusted file's command was not started:\n%s", stderr)
	}

	// Changed: asks again.
	marker2 := filepath.Join(c.ws, "started-again")
	plantMCPJSON(t, c.ws, marker2)
	if _, stderr, _ = c.run("", "tools", "list"); fileExists(marker2) || !strings.Contains(stderr, "is not trusted") {
		t.Fatalf("the changed file started without a new trust:\n%s", stderr)
	}
	if out, _, code = c.run("", "mcp", "trust", "--revoke"); code != 0 || !strings.Contains(out, "taken back") {
		t.Fatalf("revoke: exit %d %s", code, out)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// jean2 chat asks, when it opens a workspace whose mcp.json no person trusted, showing what
// it starts; y trusts it and the server starts it.
func TestChatAsksToTrustWorkspaceMCP(t *testing.T) {
	c := newChatEnv(t)
	marker := filepath.Join(c.ws, "started") // a confined server writes its workspace only
	plantMCPJSON(t, c.ws, marker)
	p := c.chat([]string{"NO_COLOR=1", "JEAN2_SERVER=http://127.0.0.1:1"})
	p.waitFor("mcp.json wants to start (each confined by jean2's sandbox, able to do what is said after it):")
	p.waitFor("planted: /bin/sh -c")
	p.waitFor("confined: writes the workspace (not its .jean2) and its own cache folder; no network")
	p.waitFor("Trust this file? [y/N]")
	if fileExists(marker) {
		t.Fatal("started before the person answered")
	}
	p.send("y")
	p.waitFor("Trusted; its MCP servers are starting.")
	p.waitFor("> ")
	for deadline := time.Now().Add(30 * time.Second); !fileExists(marker); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the trusted file's server was not started")
		}
	}
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v; the screen:\n%s", err, p.screen.String())
	}
}
