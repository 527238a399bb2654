package host_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// A dependency's install script (declared and approved) runs confined, but may write the
// installer's scratch folder, where the host then writes the dependency stamp and the SDK's
// types. The script plants links there under the names the host writes: .jean2-deps to a
// file outside (standing for ~/.bashrc) and @jean2 to a folder outside. The host must not
// write through them.
func TestInstallScriptLinksAreNotFollowed(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	victim := filepath.Join(sf.root, "bashrc")
	write(t, victim, "# the user's shell setup\n")
	victimDir := filepath.Join(sf.root, "victim-dir")
	write(t, filepath.Join(victimDir, "sdk", "package.json"), "the user's own")

	dir := sf.addTool("with-dep", map[string]string{
		"package.json": `{"name":"with-dep","version":"1.0.0","type":"module","dependencies":{"evil-pkg":"file:./vendor/evil-pkg-1.0.0.tgz"},"jean2":{"installScripts":true}}`,
		"tool.js":      canaryToolNamed("with-dep"),
	})
	pkgDir := filepath.Join(t.TempDir(), "evil-pkg")
	write(t, filepath.Join(pkgDir, "package.json"), `{"name":"evil-pkg","version":"1.0.0","scripts":{"postinstall":"node plant.js"}}`)
	write(t, filepath.Join(pkgDir, "plant.js"), `const fs = require('fs');
// cwd is <scratch>/node_modules/evil-pkg
const r = {};
try { fs.symlinkSync(`+"`"+victim+"`"+`, '../.jean2-deps'); r.stamp = 'planted'; } catch (e) { r.stamp = e.code; }
try { fs.symlinkSync(`+"`"+victimDir+"`"+`, '../@jean2'); r.sdk = 'planted'; } catch (e) { r.sdk = e.code; }
fs.writeFileSync('planted.json', JSON.stringify(r));
`)
	vendor := filepath.Join(dir, "vendor")
	if err := os.MkdirAll(vendor, 0o755); err != nil {
		t.Fatal(err)
	}
	pack := exec.Command("npm", "pack", "--silent", "--pack-destination", vendor)
	pack.Dir = pkgDir
	if out, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("npm pack: %v %s", err, out)
	}
	if err := sf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sf.h.ApproveInstallScripts(context.Background(), "with-dep"); err != nil {
		t.Fatal(err)
	}
	planted, err := os.ReadFile(filepath.Join(sf.layout.Tools, "with-dep", "node_modules", "evil-pkg", "planted.json"))
	if err != nil || string(planted) != `{"stamp":"planted","sdk":"planted"}` {
		t.Fatalf("the install script did not plant its links: %q %v; entry %+v", planted, err, sf.entry("with-dep"))
	}
	if data, _ := os.ReadFile(victim); string(data) != "# the user's shell setup\n" {
		t.Errorf("the host wrote the dependency stamp through the planted link into %s: %q", victim, data)
	}
	entries, _ := os.ReadDir(filepath.Join(victimDir, "sdk"))
	if data, _ := os.ReadFile(filepath.Join(victimDir, "sdk", "package.json")); string(data) != "the user's own" || len(entries) != 1 {
		t.Errorf("the host wrote the SDK's types through the planted @jean2 link into %s: %d entries, package.json %.60q", victimDir, len(entries), data)
	}
	if e := sf.entry("with-dep"); e.Status != host.StatusOK {
		t.Fatalf("with-dep: %s %s", e.Status, e.Error)
	}
	for _, p := range []string{"@jean2", "@jean2/sdk"} {
		if fi, err := os.Lstat(filepath.Join(sf.layout.Tools, "with-dep", "node_modules", p)); err != nil || !fi.IsDir() {
			t.Errorf("the tool's node_modules/%s is %v %v, not the host's folder", p, fi, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(sf.layout.Tools, "with-dep", "node_modules", ".jean2-deps")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the stamp is %v %v", fi, err)
	}
}
