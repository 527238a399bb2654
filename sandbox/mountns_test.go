//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A sealed .jean2 is read-only to the worker and to everything it starts, and cannot be
// removed, renamed, replaced or unmounted, while the rest of the workspace, new top-level
// entries included, stays the worker's; the host sees no mount.
func TestLauncherSealsFolders(t *testing.T) {
	if err := MountSealAvailable(os.Args[0], os.Geteuid() != 0); err != nil {
		t.Skipf("the launcher cannot seal by a mount here: %v", err)
	}
	sh, _ := exec.LookPath("sh")
	ws := filepath.Join(t.TempDir(), "ws")
	writeFile(t, filepath.Join(ws, ".jean2", "mcp.json"), `{"mcpServers":{}}`)
	writeFile(t, filepath.Join(ws, "sub", "f.txt"), "x")
	real, _ := filepath.EvalSymlinks(ws)
	dir := filepath.Join(real, ".jean2")
	script := `cd "$WS"
t() { if r=$("$@" 2>&1); then echo "$1 ok"; else echo "$1 $r" | tr '\n' ' '; echo; fi; }
t touch .jean2/new.json
t sh -c 'echo x >> .jean2/mcp.json'
t rm -rf .jean2
t rmdir .jean2
t mv .jean2 moved
t mkdir fake
t mv -T fake .jean2
t ln .jean2/mcp.json hard
t umount .jean2
t touch top.txt
t mkdir topdir
t mv sub sub2
echo done`
	specs := map[string]Spec{"launcher": {SealedDirs: []string{dir}}}
	if abi, _ := LandlockABI(); abi >= 1 {
		rules := Plan{Program: sh, ReadWrite: []string{real}, MountSealed: []string{dir}, ChildProcess: true}.Rules()
		specs["landlock"] = Spec{Landlock: true, Rules: rules, SealedDirs: []string{dir}}
	}
	for name, spec := range specs {
		os.RemoveAll(filepath.Join(real, "sub2"))
		writeFile(t, filepath.Join(ws, "sub", "f.txt"), "x")
		path, argv, err := Command(os.Args[0], spec, sh, []string{"-c", script})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path, argv...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "WS=" + real}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "done") {
			t.Fatalf("%s: %v %s", name, err, out)
		}
		got := map[string]string{}
		for _, l := range strings.Split(string(out), "\n") {
			k, v, _ := strings.Cut(l, " ")
			if _, seen := got[k]; !seen {
				got[k] = v
			}
		}
		for op, want := range map[string]string{"touch": "Read-only file system", "sh": "Read-only file system", "rm": "Read-only file system", "rmdir": "busy",
			"mv": "busy", "ln": "cross-device", "umount": "umount"} {
			if !strings.Contains(got[op], want) || strings.HasPrefix(got[op], "ok") {
				t.Errorf("%s: %s: %q, want %q\n%s", name, op, got[op], want, out)
			}
		}
		for _, p := range []string{"top.txt", "topdir", "sub2/f.txt"} {
			if _, err := os.Stat(filepath.Join(real, p)); err != nil {
				t.Errorf("%s: %s was not made: %v\n%s", name, p, err, out)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "mcp.json")); string(b) != `{"mcpServers":{}}` {
			t.Errorf("%s: mcp.json changed: %q", name, b)
		}
		if e, _ := os.ReadDir(dir); len(e) != 1 {
			t.Errorf("%s: .jean2 holds %v", name, e)
		}
		if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), dir) {
			t.Errorf("%s: the host sees the mount", name)
		}
		os.Remove(filepath.Join(real, "top.txt"))
		os.Remove(filepath.Join(real, "topdir"))
		os.Remove(filepath.Join(real, "fake"))
	}
}

// The launcher refuses to seal what is not a real folder: a symbolic link to another
// folder would otherwise turn the mount there.
func TestLauncherRefusesToSealLinks(t *testing.T) {
	if err := MountSealAvailable(os.Args[0], os.Geteuid() != 0); err != nil {
		t.Skipf("the launcher cannot seal by a mount here: %v", err)
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.Mkdir(filepath.Join(root, "elsewhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, ".jean2")); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareSealDir(root); err == nil {
		t.Fatal("PrepareSealDir accepted a symbolic link")
	}
	_, stderr, code := launch(t, Spec{SealedDirs: []string{filepath.Join(root, ".jean2")}}, "/bin/true")
	if code != ExitLaunchFailed || !strings.Contains(stderr, "symbolic link") {
		t.Fatalf("exit %d %s", code, stderr)
	}
	// A missing .jean2 is made, empty.
	other := filepath.Join(root, "elsewhere")
	if d, err := PrepareSealDir(other); err != nil || d != filepath.Join(other, ".jean2") {
		t.Fatalf("%q %v", d, err)
	}
	if fi, err := os.Lstat(filepath.Join(other, ".jean2")); err != nil || !fi.IsDir() {
		t.Fatalf("%v %v", fi, err)
	}
}
