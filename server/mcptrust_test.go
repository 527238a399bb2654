package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/store"
)

// plantMCPJSON writes <folder>/.jean2/mcp.json as a tool could (before .jean2 was sealed):
// one stdio server whose command leaves marker behind.
func plantMCPJSON(t *testing.T, folder, marker string) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"planted": map[string]any{
		"command": "/bin/sh", "args": []string{"-c", "echo started > " + marker + "; exec sleep 60"},
	}}})
	if err := os.MkdirAll(filepath.Join(folder, ".jean2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, ".jean2", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitFile(path string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	return false
}

// A tool that writes <workspace>/.jean2/mcp.json got its command started, unconfined, by
// serve's workspace MCP watcher at its next poll. A workspace's servers now start only once
// a person trusted that file's content; a changed file asks again.
func TestWorkspaceMCPPlantedCommandNeedsTrust(t *testing.T) {
	f := newFixture(t)
	f.cfg.WorkspaceMCP = WorkspaceMCPOptions{Poll: 50 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	f.start()
	folder := t.TempDir()
	var ws store.Workspace
	f.call("POST", "/api/workspaces", map[string]any{"path": folder, "name": "victim"}, 201, &ws)

	marker := filepath.Join(folder, "started") // a confined server writes its workspace only
	plantMCPJSON(t, folder, marker)
	// The watcher reads the file (the poll, or at once after a workspace change) and lists
	// it as not trusted, saying what it wants to start and how to trust it.
	tools := f.waitTools("the untrusted file listed", "?workspaceId="+ws.ID, func(m map[string]toolView) bool {
		return m["mcp.json:"+filepath.Join(folder, ".jean2", "mcp.json")].Name != ""
	})
	problem := tools["mcp.json:"+filepath.Join(folder, ".jean2", "mcp.json")]
	if !strings.Contains(problem.Error, "not trusted") || !strings.Contains(problem.Error, "/bin/sh -c") || !strings.Contains(problem.Error, "jean2 mcp trust --workspace") {
		t.Errorf("the untrusted file is listed as %+v", problem)
	}
	// Listed means that sync ran and decided: nothing was made to start it.
	f.srv.wsMCP.mu.Lock()
	started := len(f.srv.wsMCP.byWS)
	f.srv.wsMCP.mu.Unlock()
	if _, err := os.Stat(marker); err == nil || started != 0 {
		t.Fatalf("serve started the command a tool planted in %s/.jean2/mcp.json, untrusted (%d workspaces' servers running)", folder, started)
	}

	// The web client's question: what it wants to start, and the hash to trust.
	var state mcpTrustView
	f.call("GET", "/api/workspaces/"+ws.ID+"/mcp-trust", nil, 200, &state)
	if !state.Present || state.Trusted || state.SHA256 == "" || len(state.Servers) != 1 || state.Servers[0].Command != "/bin/sh" ||
		len(state.Commands) != 1 || !strings.HasPrefix(state.Commands[0], "planted: /bin/sh -c ") {
		t.Fatalf("trust state: %+v", state)
	}
	// A hash other than the file's (the person saw an older content) is refused.
	body := f.call("POST", "/api/workspaces/"+ws.ID+"/mcp-trust", map[string]any{"sha256": strings.Repeat("0", 64)}, 409, nil)
	if errorCode(t, body) != codeConflict {
		t.Fatalf("wrong hash: %s", body)
	}
	// Trusted: started.
	f.call("POST", "/api/workspaces/"+ws.ID+"/mcp-trust", map[string]any{"sha256": state.SHA256}, 200, &state)
	if !state.Trusted {
		t.Fatalf("after trusting: %+v", state)
	}
	if !waitFile(marker, 30*time.Second) {
		t.Fatal("the trusted file's server was not started")
	}
	if fi, err := os.Stat(filepath.Join(f.home, "trusted-workspaces.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("trust store: %v %v", fi, err)
	}

	// The file changes (a tool, or a pull): its servers stop and it asks again.
	marker2 := filepath.Join(folder, "started-again")
	plantMCPJSON(t, folder, marker2)
	f.waitTools("the changed file listed as untrusted", "?workspaceId="+ws.ID, func(m map[string]toolView) bool {
		return strings.Contains(m["mcp.json:"+filepath.Join(folder, ".jean2", "mcp.json")].Error, "started-again")
	})
	f.srv.wsMCP.mu.Lock()
	started = len(f.srv.wsMCP.byWS)
	f.srv.wsMCP.mu.Unlock()
	if _, err := os.Stat(marker2); err == nil || started != 0 {
		t.Fatalf("the changed file's command started untrusted (%d workspaces' servers running)", started)
	}
	f.call("GET", "/api/workspaces/"+ws.ID+"/mcp-trust", nil, 200, &state)
	if state.Trusted {
		t.Fatalf("the changed file is reported trusted: %+v", state)
	}
}
