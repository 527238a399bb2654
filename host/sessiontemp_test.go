//go:build linux

package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// A confined worker of session s1 writes its own temporary folder (its TMPDIR) and no other
// session's of the same workspace, nor the workspace's folder that holds them. Before, the
// workers of every session of a workspace could write the workspace's temporary folder, and
// so each other's session folders (and swap them for links).
func TestSessionTempWorkerCannotWriteAnotherSessions(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	if out := sf.call("canary", `{}`, inSession("s2")); !out.Result.Success {
		t.Fatal(out.Result)
	}
	wsTemp := sf.layout.WorkspaceTemp("w1")
	own := filepath.Join(wsTemp, "s1", "mine.txt")
	if r, out := sf.try(t, map[string]any{"op": "write", "path": own}); !r.OK {
		t.Fatalf("write its own session's folder %s: %+v %s", own, r, out.Result.Error)
	}
	for _, p := range []string{filepath.Join(wsTemp, "s2", "from-s1.txt"), filepath.Join(wsTemp, "from-s1.txt"), filepath.Join(wsTemp, ".runs", "from-s1.txt")} {
		r, out := sf.try(t, map[string]any{"op": "write", "path": p})
		denied(t, "write "+p+" from session s1", r, out, "EACCES")
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is there: %v", p, err)
		}
	}
	// Nor can it put a link in another session's place (the folder that holds them is not
	// its to change).
	r, out := sf.try(t, map[string]any{"op": "swapTemp", "session": "s2", "path": "/"})
	denied(t, "swap session s2's folder for a link", r, out, "EACCES", "EBUSY", "EPERM")
	if fi, err := os.Lstat(filepath.Join(wsTemp, "s2")); err != nil || !fi.IsDir() {
		t.Fatalf("session s2's folder after s1's attempt: %v %v", fi, err)
	}
}

// Each session's temporary folder has a quota of its own: session s1 filling its 8 MiB
// leaves session s2 of the same workspace its own 8 MiB. Before, the sessions of a
// workspace shared one tmpfs (or one measured folder): s2's first write failed with
// ENOSPC too.
func TestSessionTempQuotaIsPerSession(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.Limits.SessionTempMB = 8 })
	sf.addTool("fill", map[string]string{"package.json": pkgJSON, "tool.js": fillTool})
	if err := sf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	wrote, refused := 0, host.Outcome{}
	for range 6 {
		out := sf.call("fill", `{"mb":3}`)
		if !out.Result.Success {
			refused = out
			break
		}
		wrote += 3
	}
	t.Logf("session s1 wrote %d MiB, then: %s (%s)", wrote, refused.Result.Error, sf.h.TempQuota())
	if refused.Result.Success || refused.Result.Error == "" {
		t.Fatalf("session s1 wrote %d MiB into an 8 MiB quota", wrote)
	}
	for i := range 2 {
		if out := sf.call("fill", `{"mb":3}`, inSession("s2")); !out.Result.Success {
			t.Fatalf("session s2's write %d of 3 MiB after s1 filled its quota: %s", i+1, out.Result.Error)
		}
	}
}

// A session's tmpfs is its own mount, unmounted when the session ends (EndSession) or its
// folder is removed (RemoveSessionTemp): an idle session's mount goes with its folder. The
// workspace's sessionless calls have theirs (.runs), which goes with the workspace.
func TestSessionTempUnmountedWhenTheSessionEnds(t *testing.T) {
	if os.Geteuid() != 0 && tempMounter == nil {
		t.Skip("this host cannot mount the temporary folders")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.Limits.SessionTempMB = 8 })
	wsTemp := sf.layout.WorkspaceTemp("w1")
	for _, id := range []string{"s1", "s2", "s3", ""} {
		if out := sf.call("canary", `{}`, inSession(id)); !out.Result.Success {
			t.Fatal(out.Result)
		}
	}
	s1, s2, s3, runs := filepath.Join(wsTemp, "s1"), filepath.Join(wsTemp, "s2"), filepath.Join(wsTemp, "s3"), filepath.Join(wsTemp, ".runs")
	if m := mountsBeneath(sf.layout.Temp); len(m) != 4 || !contains(m, s1) || !contains(m, s2) || !contains(m, s3) || !contains(m, runs) {
		t.Fatalf("mounts beneath the temporary folders: %v (want one per session and .runs)", m)
	}
	if q := sf.h.TempQuota(); !strings.HasPrefix(q, "tmpfs of 8 MiB per session") {
		t.Fatalf("TempQuota: %q", q)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sf.h.EndSession(ctx, "w1", "s1"); err != nil {
		t.Fatal(err)
	}
	if err := sf.h.RemoveSessionTemp("w1", "s2"); err != nil {
		t.Fatal(err)
	}
	if m := mountsBeneath(sf.layout.Temp); len(m) != 2 || !contains(m, s3) || !contains(m, runs) {
		t.Fatalf("mounts after s1 ended and s2's folder was removed: %v", m)
	}
	for _, d := range []string{s1, s2} {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", d, err)
		}
	}
	// A session that comes back gets a new tmpfs.
	if out := sf.call("canary", `{}`); !out.Result.Success {
		t.Fatal(out.Result)
	}
	if m := mountsBeneath(sf.layout.Temp); !contains(m, s1) {
		t.Fatalf("session s1 called again has no tmpfs: %v", m)
	}
	if err := sf.h.RemoveWorkspaceTemp("w1"); err != nil {
		t.Fatal(err)
	}
	if m := mountsBeneath(sf.layout.Temp); len(m) != 0 {
		t.Fatalf("mounts after the workspace's folder was removed: %v", m)
	}
}
