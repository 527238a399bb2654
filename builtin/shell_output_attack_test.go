//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"testing"
)

// TestShellAttackOutputFileThroughSwappedFolder: a background command's output goes to a new
// file in the session's folder, which a tool worker of the workspace can swap for a link
// (to /etc/cron.d, say) while the call runs. Before, the folder was opened following that
// link and the file, holding what the command printed, was made where it led. Now the
// folder is opened from the workspace's temporary folder with no link allowed: refused.
func TestShellAttackOutputFileThroughSwappedFolder(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(base, "etc-cron.d")
	session := filepath.Join(base, "workspaces", "w1", "s1")
	for _, d := range []string{target, filepath.Dir(session)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, session); err != nil {
		t.Fatal(err)
	}
	if f, err := shellCreateOutput(session, "shell-bg-"); err == nil {
		f.Close()
		t.Errorf("made the output file %s through the link", f.Name())
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("files made where the link leads: %v", entries)
	}
	// A real folder works.
	if err := os.Remove(session); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(session, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := shellCreateOutput(session, "shell-bg-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if filepath.Dir(f.Name()) != session {
		t.Fatalf("made %s", f.Name())
	}
}
