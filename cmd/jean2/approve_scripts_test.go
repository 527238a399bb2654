package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A tool that declares its dependencies' install scripts is listed as needing approval
// and refused until a person approves; the approval installs its dependencies again with
// their scripts, and the tool runs.
func TestApproveInstallScripts(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm")
	}
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "scripted")
	pkg := filepath.Join(t.TempDir(), "marker")
	for name, content := range map[string]string{
		filepath.Join(dir, "package.json"): `{"name":"scripted","version":"1.0.0","type":"module","dependencies":{"marker":"file:./vendor/marker-1.0.0.tgz"},"jean2":{"installScripts":true}}`,
		filepath.Join(dir, "tool.js"): `import fs from 'node:fs';
export const definition = { name: 'scripted', description: 'says whether its dependency was built', inputSchema: { type: 'object', properties: {} } };
export async function execute() { return { success: true, result: { built: fs.existsSync(new URL('./node_modules/marker/built', import.meta.url)) } }; }
`,
		filepath.Join(pkg, "package.json"): `{"name":"marker","version":"1.0.0","scripts":{"postinstall":"node -e \"require('fs').writeFileSync('built','')\""}}`,
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pack := exec.Command("npm", "pack", "--silent", "--pack-destination", filepath.Join(dir, "vendor"))
	pack.Dir = pkg
	if err := os.MkdirAll(filepath.Join(dir, "vendor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("npm pack: %v %s", err, out)
	}

	out, stderr, code := c.run("", "tools", "list")
	if code != 0 || !strings.Contains(out, "needs approval") || !strings.Contains(out, "run install scripts") {
		t.Fatalf("list: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = c.run("", "tools", "run", "scripted")
	if code != 1 || !strings.Contains(out, "jean2 tools approve scripted") {
		t.Fatalf("run before approval: exit %d %s", code, out)
	}
	out, stderr, code = c.run("", "tools", "approve", "scripted", "--yes")
	if code != 0 || !strings.Contains(out, "run the install scripts of its dependencies when they are installed: marker") || !strings.Contains(out, "Approved scripted") {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "run", "scripted")
	if code != 0 || !strings.Contains(out, `"built": true`) && !strings.Contains(out, `"built":true`) {
		t.Fatalf("run after approval: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = c.run("", "tools", "approve", "scripted", "--revoke")
	if code != 0 || !strings.Contains(out, "taken back") {
		t.Fatalf("revoke: exit %d %s", code, out)
	}
	if out, _, code = c.run("", "tools", "run", "scripted"); code != 1 {
		t.Fatalf("ran after the approval was taken back: %s", out)
	}
}
