package toolfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jean2/jean2/policy"
)

// TestAttackTempDirSwappedForALink: the workers of a workspace may write the folder that
// holds its sessions' temporary folders, so a hostile tool can put a link to "/" where a
// session's folder was. Before, the scope root of the temporary folder was resolved through
// the link: "/" became a root, and ctx.fs read and wrote every file outside the workspace
// that is neither protected nor blocked, with the host's rights. Now a temporary folder
// that is a link is no root (and, lying in jean2's home, protected like the rest of it).
func TestAttackTempDirSwappedForALink(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	mustDo(t, err)
	jean2Home := filepath.Join(base, "home", ".jean2")
	ws := filepath.Join(base, "ws")
	temp := filepath.Join(jean2Home, "tmp", "workspaces", "w1", "s1")
	outside := filepath.Join(base, "user-files")
	mustDo(t, os.MkdirAll(ws, 0o755))
	mustDo(t, os.MkdirAll(filepath.Dir(temp), 0o700))
	writeTestFile(t, filepath.Join(outside, "notes.txt"), secretContent, 0o644)
	mustDo(t, os.Symlink("/", temp))
	f := New(Options{
		Scope:     policy.Scope{Workspace: ws, Home: filepath.Join(base, "home"), TempDir: temp},
		Protected: []string{jean2Home},
		Tool:      "attacker", CallID: "swap",
	})
	ctx := context.Background()
	if data, err := f.ReadFile(ctx, filepath.Join(outside, "notes.txt")); err == nil {
		t.Errorf("read outside through the swapped temporary folder: %q", data)
	} else if !errors.Is(err, ErrOutsideScope) {
		t.Errorf("read outside: want outside the scope, got %v", err)
	}
	if err := f.WriteFile(ctx, filepath.Join(outside, "planted.txt"), []byte("pwned")); err == nil {
		t.Errorf("wrote outside through the swapped temporary folder")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
		t.Errorf("planted.txt exists outside")
	}
	// Through the link by name, too: refused, as jean2's home is.
	if data, err := f.ReadFile(ctx, filepath.Join(temp, outside[1:], "notes.txt")); err == nil {
		t.Errorf("read through the link's name: %q", data)
	}
	// The workspace is untouched by all this.
	mustDo(t, f.WriteFile(ctx, filepath.Join(ws, "ok.txt"), []byte("ok")))
}
