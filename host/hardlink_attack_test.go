package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

// TestSandboxAttackHardLinkOut: ctx.fs reads a path inside the workspace on its fast path
// (one openat2 refusing symlinks, judged as written) and cannot tell a hard link from a
// file: a hard link in the workspace to $JEAN2_HOME/.env would be read, and one to a file
// the worker may only read (its own tool folder) would be written by the host, which runs
// unconfined. The hostile tool tries to make both with its own fs, then reads and writes
// them through ctx.fs. Landlock refuses each link (EXDEV: a link may not give its file more
// rights than it had where it was), so nothing exists to read or write: the attack failed
// before any fix, and this test keeps it so.
func TestSandboxAttackHardLinkOut(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	toolFile := filepath.Join(sf.layout.Tools, "hostile", "tool.js")
	before, err := os.ReadFile(toolFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, from, to string }{
		{"$JEAN2_HOME/.env", sf.secretFile, "env-link"},
		{"the database", sf.db, "db-link"},
		{"its own tool folder's file (read-only to it)", toolFile, "tool-link"},
	} {
		r, out := sf.try(t, map[string]any{"op": "link", "path": c.from, "to": filepath.Join(sf.ws, c.to)})
		denied(t, "hard link of "+c.what+" into the workspace", r, out, "EXDEV", "EACCES", "EPERM", "ENOENT") // ENOENT: hidden by the view
		r, out = sf.try(t, map[string]any{"op": "ctxRead", "path": c.to})
		if !out.Result.Success || r.OK || strings.Contains(string(r.Value), secretValue) {
			t.Fatalf("ctx.fs read of the link to %s: %+v %s", c.what, r, out.Result.Error)
		}
	}
	r, out := sf.try(t, map[string]any{"op": "ctxWrite", "path": "tool-link"})
	if !out.Result.Success || !r.OK {
		t.Fatalf("ctx.fs write of tool-link: %+v %s", r, out.Result.Error)
	}
	if after, _ := os.ReadFile(toolFile); string(after) != string(before) {
		t.Fatalf("the host wrote the tool's own folder through a hard link: %q", after)
	}
	sf.unaffected(t)
}
