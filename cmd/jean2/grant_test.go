package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A catalogue-style tool that declares nothing is refused a process; the refusal names the
// grant, a person grants it from the command line, the tool runs, tools list shows the
// grant, and --revoke takes it back.
func TestToolsApproveGrant(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "lister")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"lister","version":"1.0.0","type":"module"}`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(`import { execFileSync } from 'node:child_process';
export const definition = { name: 'lister', description: 'x', inputSchema: { type: 'object', properties: {} } };
export async function execute() { return { success: true, result: execFileSync('/bin/echo', ['listed']).toString().trim() }; }
`), 0o644)
	out, stderr, code := c.run("", "tools", "run", "lister")
	if code != 1 || !strings.Contains(out+stderr, "jean2 tools approve lister --grant childProcess") {
		t.Skipf("no refusal to grant from here (sandbox off?): exit %d\n%s\n%s", code, out, stderr)
	}
	if _, stderr, code := c.run("", "tools", "approve", "lister", "--grant", "childProcess"); code != 2 || !strings.Contains(stderr, "--yes") {
		t.Fatalf("grant without a terminal or --yes: exit %d %s", code, stderr)
	}
	if _, stderr, code := c.run("", "tools", "approve", "lister", "--grant", "everything", "--yes"); code != 2 || !strings.Contains(stderr, "childProcess, network=HOST") {
		t.Fatalf("a grant that is no power: exit %d %s", code, stderr)
	}
	out, stderr, code = c.run("", "tools", "approve", "lister", "--grant", "childProcess", "--yes")
	if code != 0 || !strings.Contains(out, "start processes") || !strings.Contains(out, "Granted.") {
		t.Fatalf("grant: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "run", "lister")
	if code != 0 || !strings.Contains(out, `"listed"`) {
		t.Fatalf("run after the grant: exit %d\n%s\n%s", code, out, stderr)
	}
	if out, _, _ := c.run("", "tools", "list"); !strings.Contains(out, "granted: start processes") {
		t.Fatalf("tools list does not show the grant:\n%s", out)
	}
	if out, _, code := c.run("", "tools", "approve", "lister", "--revoke"); code != 0 || !strings.Contains(out, "taken back") {
		t.Fatalf("revoke: exit %d %s", code, out)
	}
	if _, _, code := c.run("", "tools", "run", "lister"); code != 1 {
		t.Fatalf("run after the revocation: exit %d, want 1", code)
	}
}
