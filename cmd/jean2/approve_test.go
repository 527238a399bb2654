package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const spawner = `import { execFileSync } from 'node:child_process';
export const definition = {
  name: 'spawner', description: 'starts echo',
  inputSchema: { type: 'object', properties: {} },
  permissions: { childProcess: true },
};
export async function execute() {
  return { success: true, result: { out: execFileSync('/bin/echo', ['from a child'], { encoding: 'utf8' }).trim() } };
}
`

// A tool that declares permissions lists them, is refused until a person approves them,
// then runs with them; revoking refuses it again.
func TestApproveDeclaredPermissions(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "spawner")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"spawner","version":"1.2.0","type":"module"}`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(spawner), 0o644)

	out, stderr, code := c.run("", "tools", "list")
	if code != 0 || !strings.Contains(out, "PERMISSIONS") || !strings.Contains(out, "needs approval") || !strings.Contains(out, "start processes") || !strings.Contains(out, "jean2 tools approve spawner") {
		t.Fatalf("list: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = c.run("", "tools", "run", "spawner")
	if code != 1 || !strings.Contains(out, "have not been approved") {
		t.Fatalf("run before approval: exit %d %s", code, out)
	}
	// No terminal and no --yes: nothing is approved.
	_, stderr, code = c.run("", "tools", "approve", "spawner")
	if code != 2 || !strings.Contains(stderr, "--yes") {
		t.Fatalf("approve without a terminal: exit %d %s", code, stderr)
	}
	out, stderr, code = c.run("", "tools", "approve", "spawner", "--yes")
	if code != 0 || !strings.Contains(out, "start processes") || !strings.Contains(out, "Approved spawner 1.2.0") {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "run", "spawner")
	if code != 0 || !strings.Contains(out, "from a child") {
		t.Fatalf("run after approval: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, _ = c.run("", "tools", "list", "--json")
	var listed []struct {
		Name        string
		Permissions struct {
			Declared struct{ ChildProcess bool }
			Approved bool
			Sandbox  string
		}
	}
	err := json.Unmarshal([]byte(out), &listed)
	listed = withoutBuiltins(t, listed)
	if err != nil || len(listed) != 1 || !listed[0].Permissions.Approved || !listed[0].Permissions.Declared.ChildProcess || listed[0].Permissions.Sandbox == "" {
		t.Fatalf("list --json: %v %s", err, out)
	}
	// A changed tool is a new version and asks again.
	_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(strings.Replace(spawner, "from a child", "changed", 1)), 0o644)
	out, _, code = c.run("", "tools", "run", "spawner")
	if code != 1 || !strings.Contains(out, "have not been approved") {
		t.Fatalf("a changed version ran without approval: exit %d %s", code, out)
	}
	if _, _, code = c.run("", "tools", "approve", "spawner", "--yes"); code != 0 {
		t.Fatal("approve the new version")
	}
	out, _, code = c.run("", "tools", "approve", "spawner", "--revoke")
	if code != 0 || !strings.Contains(out, "taken back") {
		t.Fatalf("revoke: exit %d %s", code, out)
	}
	if out, _, code = c.run("", "tools", "run", "spawner"); code != 1 {
		t.Fatalf("ran after the approval was taken back: %s", out)
	}
	// A tool that declares nothing has nothing to approve.
	copyDir(t, "../../host/testdata/word-count", filepath.Join(c.home, "tools", "word-count"))
	if out, _, code = c.run("", "tools", "approve", "word-count"); code != 0 || !strings.Contains(out, "nothing to approve") {
		t.Fatalf("approve a tool that declares nothing: exit %d %s", code, out)
	}
	if _, stderr, code = c.run("", "tools", "approve", "nope", "--yes"); code != 1 || !strings.Contains(stderr, `unknown tool "nope"`) {
		t.Fatalf("approve an unknown tool: exit %d %s", code, stderr)
	}
}
