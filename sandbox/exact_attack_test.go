//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLauncherAttackFolderSwappedAfterThePlan: the plan resolves each path it grants, and the
// launcher opened the rule's path following links, so a folder a worker may write around
// (a session's temporary folder, in the workspace's temporary folder its workers write)
// swapped for a link between the plan and the launch granted wherever the link led — "/"
// read-write to a shell command. Now a rule the planner resolved is refused when its path
// leads elsewhere at the launch, and the program does not start.
func TestLauncherAttackFolderSwappedAfterThePlan(t *testing.T) {
	if abi, _ := LandlockABI(); abi < 1 {
		t.Skip("no Landlock here")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	session := filepath.Join(root, "tmp", "w1", "s1")
	outside := filepath.Join(root, "user-files")
	for _, d := range []string{session, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("private notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, _ := exec.LookPath("cat")
	spec := Spec{Landlock: true, Rules: Plan{Program: cat, ReadWrite: []string{session}}.Rules(), NoFork: CanDenyProcesses()}
	// The plan was made while the folder was real; the worker swaps it now.
	if err := os.Remove(session); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, session); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := launch(t, spec, cat, filepath.Join(outside, "notes.txt"))
	if code != ExitLaunchFailed || strings.Contains(out, "private notes") || !strings.Contains(stderr, "now leads to") {
		t.Fatalf("a rule whose folder became a link: exit %d, read %q, %s", code, out, stderr)
	}
	// The same spec with the folder real again starts, and reads only what it grants.
	if err := os.Remove(session); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(session, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := launch(t, spec, cat, filepath.Join(outside, "notes.txt")); code == 0 || strings.Contains(out, "private notes") {
		t.Fatalf("the real folder: exit %d %q %s", code, out, stderr)
	}
}

// TestPlanAttackWritableFolderLeadsToTheSystem: a folder the plan grants read-write (a
// workspace, an allowed path, a session folder, a declared write) that a hostile tool
// replaced by a link before the plan was made — to "/", /etc or /usr/bin — was granted
// where the link led: a worker (uid 0 without capabilities still owns the system's files)
// could write /etc/cron.d. Now such a grant is dropped, as ctx.fs never touches those
// places either; a folder below /root (root's home, a workspace there) is still granted.
func TestPlanAttackWritableFolderLeadsToTheSystem(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	system := map[string]bool{}
	for _, r := range (Plan{}).Rules() {
		system[r.Path] = true
	}
	for _, target := range []string{"/", "/etc", "/usr/bin", "/etc/cron.d"} {
		link := filepath.Join(root, "ws-"+strings.ReplaceAll(target, "/", "_"))
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		for _, p := range []Plan{{ReadWrite: []string{link}}, {DeclaredWrite: []string{link}}} {
			for _, r := range p.Rules() {
				if system[r.Path] {
					continue
				}
				if r.Access&Write != 0 {
					t.Errorf("a writable folder that leads to %s: rule %s", target, r)
				}
				if r.Path == "/" || r.Path == "/etc" || r.Path == "/usr/bin" {
					t.Errorf("a writable folder that leads to %s: rule %s", target, r)
				}
			}
		}
	}
	// A workspace below /root stays writable (root's projects), and an ordinary folder too.
	for _, ws := range []string{"/root/project", root} {
		found := false
		for _, r := range (Plan{ReadWrite: []string{ws}}).Rules() {
			if r.Path == ws && r.Access&Write != 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is no longer granted", ws)
		}
	}
}
