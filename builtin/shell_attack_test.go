package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellAttackSessionFolderSwappedForALink: a tool worker of the workspace may write the
// workspace's temporary folder, so it can put a link to "/" in place of a session's folder
// (host/TestSandboxAttackSessionFolderSwappedForALink shows a confined tool doing it; here
// the test does it for the tool). The shell grants its commands that folder, resolved: the
// command got "/" read-write, protected places carved out — every file of the machine
// jean2's uid may touch. Now the host puts a real folder back before the command, and the
// launcher refuses a rule whose path became a link after it was planned.
func TestShellAttackSessionFolderSwappedForALink(t *testing.T) {
	f := newShellFixture(t, nil)
	outside := filepath.Join(t.TempDir(), "user-files")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("the user's private notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, res := f.sh(`echo "$TMPDIR"`)
	if !out.Result.Success {
		t.Fatalf("first command: %+v", out.Result)
	}
	session := strings.TrimSpace(res.Stdout)
	if !strings.HasPrefix(session, f.layout.Temp) {
		t.Fatalf("the command's TMPDIR %q is not a session folder", session)
	}
	if err := os.RemoveAll(session); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", session); err != nil {
		t.Fatal(err)
	}
	out, res = f.sh(`cat ` + filepath.Join(outside, "notes.txt") + `; echo planted > ` + filepath.Join(outside, "planted.txt") + `; echo "$TMPDIR"`)
	if strings.Contains(res.Stdout, "private notes") {
		t.Errorf("the command read a file outside the workspace through the swapped session folder: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
		t.Errorf("the command wrote outside the workspace through the swapped session folder")
	}
	if fi, err := os.Lstat(session); err != nil || !fi.IsDir() {
		t.Errorf("the session's folder after the command: %v %v", fi, err)
	}
}
