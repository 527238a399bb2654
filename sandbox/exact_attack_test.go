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
