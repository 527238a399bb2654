//go:build linux

package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/asuser"
	"github.com/jean2/jean2/sandbox"
)

// mountsBeneath lists the mount points beneath dir in this process's mount namespace.
func mountsBeneath(dir string) []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// A confined tool worker is in its session's cgroup, a workspace's session's beneath the
// workspace's (sessioncg_test.go says more), a workspace-less session's at the top; the worker's writes
// into its temporary folder past the quota fail with ENOSPC (a tmpfs of SessionTempMB);
// after Close nothing is left mounted, nor in cgroups.
func TestSessionLimitsWorkersGroupsAndTempFS(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the temporary folders are mounted by a root host only")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.Limits.SessionTempMB = 8 })
	if !strings.HasPrefix(sf.h.Sandbox().Pids, "cgroup ") {
		t.Skipf("no pids cgroup here: %s", sf.h.Sandbox().Pids)
	}
	read := func(mods ...func(*host.Call)) string {
		r, out := sf.try(t, map[string]any{"op": "read", "path": "/proc/self/cgroup"}, mods...)
		if !r.OK {
			t.Fatalf("read /proc/self/cgroup: %+v %s", r, out.Result.Error)
		}
		var s string
		_ = json.Unmarshal(r.Value, &s)
		return s
	}
	if groups := read(); !strings.Contains(groups, "/ws-w1/s-s1/w-") {
		t.Fatalf("a worker of workspace w1: %q", groups)
	}
	if groups := read(func(c *host.Call) { c.Workspace.ID, c.SessionID = "", "solo" }); !strings.Contains(groups, "/s-solo/w-") {
		t.Fatalf("a worker of a session without workspace: %q", groups)
	}
	sf.addTool("fill", map[string]string{"package.json": pkgJSON, "tool.js": fillTool})
	if err := sf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	var refused host.Outcome
	wrote := 0
	for i := 0; i < 6; i++ {
		out := sf.call("fill", `{"mb":3}`)
		if !out.Result.Success {
			refused = out
			break
		}
		wrote += 3
	}
	t.Logf("wrote %d MiB into an 8 MiB temporary folder, then: %s", wrote, refused.Result.Error)
	if wrote > 8 || !strings.Contains(refused.Result.Error, "ENOSPC") {
		t.Fatalf("after %d MiB in an 8 MiB tmpfs: %+v", wrote, refused.Result)
	}
	s1Temp := filepath.Join(sf.layout.WorkspaceTemp("w1"), "s1")
	if m := mountsBeneath(sf.layout.Temp); len(m) != 2 || !contains(m, s1Temp) || !contains(m, filepath.Join(sf.layout.Temp, "sessions", "solo")) {
		t.Fatalf("mounts beneath the temporary folders: %v", m)
	}
	if q := sf.h.TempQuota(); !strings.HasPrefix(q, "tmpfs of 8 MiB") {
		t.Fatalf("TempQuota: %q", q)
	}
	cg := strings.TrimPrefix(sf.h.Sandbox().Pids, "cgroup ")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sf.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if m := mountsBeneath(sf.layout.Temp); len(m) != 0 {
		t.Fatalf("still mounted after Close: %v", m)
	}
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Fatalf("the host's cgroup folder %s is still there after Close: %v", cg, err)
	}
}

// A session's tmpfs cannot be replaced, not even by an unconfined process of the host's
// user (the test stands for one): rename and rmdir of a mount point fail with EBUSY. That
// is why the host no longer checks, at every call, that a folder it mounted is still a
// folder (sessionTemp); the checks of an unmounted one are TestSandboxAttack…SwappedForALink.
func TestSessionTempMountCannotBeSwapped(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the temporary folders are mounted by a root host only")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.Limits.SessionTempMB = 8 })
	s1 := filepath.Join(sf.layout.WorkspaceTemp("w1"), "s1")
	writeIn := func(name string) {
		r, out := sf.try(t, map[string]any{"op": "writeText", "path": filepath.Join(s1, name), "text": name})
		if !out.Result.Success || !r.OK {
			t.Fatalf("a call that writes %s in its session's folder: %+v %s", name, r, out.Result.Error)
		}
		if b, err := os.ReadFile(filepath.Join(s1, name)); err != nil || string(b) != name {
			t.Fatalf("%s in the session's folder: %q %v", name, b, err)
		}
	}
	writeIn("first.txt")
	if !contains(mountsBeneath(sf.layout.Temp), s1) {
		t.Skipf("the session's folder %s is not mounted: %q", s1, sf.h.TempQuota())
	}
	if err := os.Rename(s1, s1+"-aside"); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("rename the session's mounted folder: %v, want EBUSY", err)
	}
	if err := os.Remove(s1); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("remove the session's mounted folder: %v, want EBUSY", err)
	}
	if err := os.Symlink("/", s1); !errors.Is(err, os.ErrExist) {
		t.Errorf("a link in the session's folder's place: %v, want EEXIST", err)
	}
	writeIn("after.txt")
	if !contains(mountsBeneath(sf.layout.Temp), s1) {
		t.Errorf("the session's folder %s is no longer mounted", s1)
	}
}

// Another host on the same home (alive) reuses the tmpfs the first mounted, files and
// all, rather than hiding it under another, and leaves it mounted when it closes: it is
// the first one's.
func TestSessionLimitsTempFSOfAnotherHostIsReused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the temporary folders are mounted by a root host only")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.Limits.SessionTempMB = 8 })
	if out := sf.call("canary", `{}`); !out.Result.Success {
		t.Fatal(out.Result)
	}
	kept := filepath.Join(sf.layout.WorkspaceTemp("w1"), "s1", "kept.txt")
	write(t, kept, "from the first host")
	h2, err := host.New(context.Background(), sf.opts)
	if err != nil {
		t.Fatal(err)
	}
	out := h2.Invoke(context.Background(), host.Call{Tool: "canary", Args: json.RawMessage(`{}`), SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: sf.ws}})
	if !out.Result.Success {
		t.Fatal(out.Result)
	}
	if data, err := os.ReadFile(kept); err != nil || string(data) != "from the first host" {
		t.Fatalf("the first host's file: %q %v", data, err)
	}
	if m := mountsBeneath(sf.layout.Temp); len(m) != 1 {
		t.Fatalf("mounts beneath the temporary folders: %v (a tmpfs stacked on the first?)", m)
	}
	if err := h2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(kept); err != nil || string(data) != "from the first host" {
		t.Fatalf("the second host's Close took the first one's tmpfs: %q %v", data, err)
	}
}

// A tmpfs a host that is gone (kill -9) left on a temporary folder is unmounted by the
// next host when it starts; a tmpfs that is not jean2's is left alone.
func TestSessionLimitsTempFSOfADeadHostIsSwept(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the temporary folders are mounted by a root host only")
	}
	f := newFixture(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(f.layout.Temp, "workspaces", "w-dead", "s1") // a session's, as hosts mount them
	other := filepath.Join(f.layout.Temp, "workspaces", "w-other")
	for dir, source := range map[string]string{dead: fmt.Sprintf("jean2-%d-t1-0badc0ffee00", gone.Process.Pid), other: "not-jean2"} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", source, dir).CombinedOutput(); err != nil {
			t.Skipf("mount: %v %s", err, out)
		}
	}
	defer exec.Command("umount", "-l", other).Run()
	f.opts.Sandbox = host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: os.Args[0]}
	f.start()
	if m := mountsBeneath(f.layout.Temp); len(m) != 1 || m[0] != other {
		t.Fatalf("mounts beneath the temporary folders after the start: %v (want only %s)", m, other)
	}
}

// A confined worker's write past its session's temporary folder quota fails with ENOSPC,
// as root and (TestWorkerTempQuotaAsOrdinaryUser) as an ordinary user, whose jean2 runs in
// namespaces of its own and mounts the tmpfs through its mounter; the host itself, which
// reads what the worker wrote, holds no capability there.
func TestWorkerWritePastTempQuotaFails(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.Limits.SessionTempMB = 8 })
	sf.addTool("fill", map[string]string{"package.json": pkgJSON, "tool.js": fillTool})
	if err := sf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	var refused host.Outcome
	wrote := 0
	for i := 0; i < 6; i++ {
		out := sf.call("fill", `{"mb":3}`)
		if !out.Result.Success {
			refused = out
			break
		}
		wrote += 3
	}
	t.Logf("wrote %d MiB into an 8 MiB temporary folder, then: %s (%s)", wrote, refused.Result.Error, sf.h.TempQuota())
	if wrote > 8 || !strings.Contains(refused.Result.Error, "ENOSPC") {
		t.Fatalf("after %d MiB in an 8 MiB temporary folder: %+v", wrote, refused.Result)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		for _, set := range []string{"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"} {
			if strings.HasPrefix(line, set) && os.Geteuid() != 0 && strings.Trim(strings.TrimPrefix(line, set), "\t 0") != "" {
				t.Errorf("the host holds capabilities: %s", line)
			}
		}
	}
}

// The quota and /tmp of workers hold for an ordinary user's host too: this test binary runs
// them again as nobody. Before, there the quota was measured: the worker wrote 18 MiB
// into the 8 MiB folder and only the next call was refused.
func TestWorkerTempQuotaAsOrdinaryUser(t *testing.T) {
	tests := []string{"TestWorkerWritePastTempQuotaFails", "TestViewWorkerTmpIsItsTempFolder",
		"TestSessionTempWorkerCannotWriteAnotherSessions", "TestSessionTempQuotaIsPerSession", "TestSessionTempUnmountedWhenTheSessionEnds"}
	out, err := asuser.Rerun(t, "^("+strings.Join(tests, "|")+")$")
	if strings.Contains(out, "Landlock is not available") {
		t.Skipf("no Landlock for an ordinary user here:\n%s", out)
	}
	for _, name := range tests {
		if !strings.Contains(out, "--- PASS: "+name) {
			t.Fatalf("as nobody, %s did not pass (%v):\n%s", name, err, out)
		}
	}
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
}
