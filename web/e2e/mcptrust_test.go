package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWorkspaceMCPTrust: a workspace whose .jean2/mcp.json no person trusted shows, under
// it in the menu, what the file wants to start; "Trust…" asks with the commands listed, and
// trusting starts its server.
func TestWorkspaceMCPTrust(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.ws, "started") // a confined server writes its workspace only
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"planted": map[string]any{
		"command": "/bin/sh", "args": []string{"-c", "echo started > " + marker},
	}}})
	if err := os.MkdirAll(filepath.Join(f.ws, ".jean2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, ".jean2", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.session("first")
	f.open("#/s/" + s.ID)
	f.waitText(".workspace .mcp-trust", "wants to start: planted: /bin/sh -c")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the untrusted file's command started")
	}
	f.clickText(".workspace .mcp-trust", "Trust…")
	// This server runs with the sandbox off: the dialog says so, for the file and for each
	// command (not the "confined" a sandboxed host would run them under).
	f.waitText("dialog[open]", "outside the sandbox (the sandbox mode is off)")
	f.waitText("dialog[open] .mcp-trust-commands", "planted: /bin/sh -c")
	f.waitText("dialog[open] .mcp-trust-commands", "UNCONFINED (jean2's sandbox mode is off)")
	f.clickText("dialog[open]", "Trust and start")
	f.waitJS("the notice to go", `document.querySelector(".workspace .mcp-trust").textContent === ""`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the trusted file's server was not started")
		}
	}
}
