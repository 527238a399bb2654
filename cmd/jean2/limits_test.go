package main

import (
	"github.com/jean2/jean2/host"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool that raises its own memory cap above the host's is listed as needing approval, is
// refused until approved, shows the raised cap when approved, then runs.
func TestToolsApproveRaisedMemory(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "greedy")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"greedy","version":"1.0.0","type":"module","jean2":{"memoryMB":65536}}`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(`export const definition = { name: 'greedy', description: 'x', inputSchema: { type: 'object', properties: {} } };
export async function execute() { return { success: true, result: 'ran' }; }
`), 0o644)
	out, stderr, code := c.run("", "tools", "list")
	if code != 0 || !strings.Contains(out, "needs approval") || !strings.Contains(out, "memory up to 65536 MB") {
		t.Fatalf("list: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = c.run("", "tools", "run", "greedy")
	if code != 1 || !strings.Contains(out, "have not been approved") || !strings.Contains(out, "memory up to 65536 MB") {
		t.Fatalf("run before approval: exit %d %s", code, out)
	}
	out, stderr, code = c.run("", "tools", "approve", "greedy", "--yes")
	if code != 0 || !strings.Contains(out, "use up to 65536 MB of memory per worker") {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "run", "greedy")
	if code != 0 || !strings.Contains(out, `"ran"`) {
		t.Fatalf("run after approval: exit %d\n%s\n%s", code, out, stderr)
	}
}

// config.json's "limits" reach the host's limits; without the file, the defaults hold (zero
// fields).
func TestConfigLimits(t *testing.T) {
	layout := host.Layout{Home: t.TempDir()}
	h, err := configLimits(layout)
	if err != nil || h != (host.Limits{}) {
		t.Fatalf("no config.json: %+v %v", h, err)
	}
	cfg := `{"disabledBuiltins": [], "limits": {"sessionMemoryMB": 3000, "sessionMaxTasks": 500, "sessionTempMB": 256, "memoryMB": 384, "maxTasks": 64, "maxFileMB": 100}}`
	if err := os.WriteFile(filepath.Join(layout.Home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err = configLimits(layout)
	want := host.Limits{MemoryMB: 384, MaxTasks: 64, MaxFileMB: 100, SessionTempMB: 256, SessionMemoryMB: 3000, SessionMaxTasks: 500}
	if err != nil || h != want {
		t.Fatalf("%+v %v", h, err)
	}
	if err := os.WriteFile(filepath.Join(layout.Home, "config.json"), []byte(`{"limits": {"sessionMemoryMB": "lots"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := configLimits(layout); err == nil || !strings.Contains(err.Error(), `"limits"`) {
		t.Fatalf("a limit that is not a number: %v", err)
	}
}
