package mcpclient

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Trust is keyed by the workspace's real path and the file's exact content: a changed
// file, or another workspace, is not trusted; a link to the workspace is the workspace.
func TestTrustByRealPathAndContent(t *testing.T) {
	root := t.TempDir()
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "ws")
	write := func(content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(ws, ".jean2"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(WorkspaceConfigPath(ws), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr := NewTrust(home)
	if ok, err := tr.Trusted(ReadWorkspaceFile(ws)); !ok || err != nil {
		t.Fatalf("no file needs no trust: %v %v", ok, err)
	}
	write(`{"mcpServers":{"a":{"command":"/bin/echo","args":["hi there"],"env":{"K":"v"}}}}`)
	file := ReadWorkspaceFile(ws)
	if ok, _ := tr.Trusted(file); ok {
		t.Fatal("an untrusted file is trusted")
	}
	if c := file.Commands(); len(c) != 1 || c[0] != "a: /bin/echo 'hi there' (env K) — confined: writes the workspace (not its .jean2) and its own cache folder; no network; no jean2 home, credentials or keys" {
		t.Fatalf("commands %q", c)
	}
	if err := tr.Set(file); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(tr.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store: %v %v", fi, err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	if ok, _ := tr.Trusted(ReadWorkspaceFile(link)); !ok {
		t.Fatal("the workspace through a link is not trusted")
	}
	write(`{"mcpServers":{"a":{"command":"/bin/echo","args":["changed"]}}}`)
	if ok, _ := tr.Trusted(ReadWorkspaceFile(ws)); ok {
		t.Fatal("a changed file is trusted")
	}
	write(`not json`)
	bad := ReadWorkspaceFile(ws)
	if bad.Err == nil || !strings.Contains(bad.Err.Error(), "not valid JSON") || !bad.Present || bad.SHA256 == "" {
		t.Fatalf("a broken file: %+v", bad)
	}
	if err := os.Remove(WorkspaceConfigPath(ws)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(WorkspaceConfigPath(ws), 0o644); err != nil {
		t.Fatal(err)
	}
	if fifo := ReadWorkspaceFile(ws); fifo.Err == nil || !strings.Contains(fifo.Err.Error(), "not a regular file") {
		t.Fatalf("a FIFO: %+v", fifo)
	}
	_ = os.Remove(WorkspaceConfigPath(ws))
	if err := tr.Revoke(link); err != nil {
		t.Fatal(err)
	}
	write(`{"mcpServers":{"a":{"command":"/bin/echo","args":["hi there"],"env":{"K":"v"}}}}`)
	if ok, _ := tr.Trusted(ReadWorkspaceFile(ws)); ok {
		t.Fatal("trusted after the trust was taken back")
	}
}

// A workspace's file may not run a server unconfined, and what it declares of the network
// is checked and shown; $JEAN2_HOME's may opt out, and its servers show UNCONFINED.
func TestWorkspaceFileSandboxAndNetwork(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".jean2"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string) WorkspaceFile {
		t.Helper()
		if err := os.WriteFile(WorkspaceConfigPath(ws), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return ReadWorkspaceFile(ws)
	}
	if f := write(`{"mcpServers":{"a":{"command":"node","sandbox":false}}}`); f.Err == nil || !strings.Contains(f.Err.Error(), `"sandbox": false is allowed only in $JEAN2_HOME/mcp.json`) {
		t.Fatalf("a workspace's unconfined server: %v", f.Err)
	}
	if f := write(`{"mcpServers":{"a":{"command":"node","network":["http://x"]}}}`); f.Err == nil || !strings.Contains(f.Err.Error(), "network") {
		t.Fatalf("a bad network entry: %v", f.Err)
	}
	f := write(`{"mcpServers":{"a":{"command":"node","network":["api.github.com:443"]}}}`)
	if c := f.Commands(); f.Err != nil || len(c) != 1 || !strings.Contains(c[0], "confined: writes the workspace") || !strings.Contains(c[0], "network only to api.github.com:443;") {
		t.Fatalf("commands %q %v", c, f.Err)
	}
	user, err := Parse("mcp.json", []byte(`{"mcpServers":{"a":{"command":"node","sandbox":false}}}`))
	if err != nil || user[0].Confined() || !strings.Contains(user[0].Describe(), "UNCONFINED") {
		t.Fatalf("the user's opt-out: %+v %v", user, err)
	}
}
