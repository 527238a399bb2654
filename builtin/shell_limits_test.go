//go:build linux

package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/asuser"
)

// processesWith lists the pids of the processes whose command line is exactly args.
func processesWith(args ...string) []int {
	want := strings.Join(args, "\x00") + "\x00"
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(data) == want {
			out = append(out, pid)
		}
	}
	return out
}

// cgroupOf is the group of a process in the v1 hierarchy of controller (or the unified
// one), as /proc/PID/cgroup names it.
func cgroupOf(pid int, controller string) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	unified := ""
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return parts[2]
			}
		}
		if parts[0] == "0" {
			unified = parts[2]
		}
	}
	return unified
}

// The 8 background commands a session may run share its cgroup: each is allowed 1024
// tasks of its own, and each tries to start 40 sleeps, but together they hold no more than
// the session's 64. Before, each had a group of its own beside the others (8 × 1024 tasks,
// 2 GB each, for one session) and the 8 held 320 sleeps. A foreground command is in the
// same session's group.
func TestShellSessionCgroupCapsBackgroundCommandsTogether(t *testing.T) {
	const sessionTasks = 64
	f := newShellFixtureHost(t, nil, func(o *host.Options) {
		o.Limits.SessionMaxTasks = sessionTasks
		o.Limits.SessionMemoryMB = 1536
	})
	if st := f.h.Sandbox(); !strings.HasPrefix(st.Pids, "cgroup ") {
		t.Skipf("no pids cgroup here: %s", st.Pids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// A foreground command of the session is in the same session's group (asked before the
	// background commands fill it: then no new command of the session can start).
	_, res := f.sh(`cat /proc/self/cgroup`)
	if !strings.Contains(res.Stdout, "/ws-w1/s-s1/w-") {
		t.Fatalf("a foreground command's groups: %q", res.Stdout)
	}
	for i := 0; i < 8; i++ {
		out, res := f.run(ctx, map[string]any{"command": `for i in $(seq 1 40); do sleep 61.5 & done 2>/dev/null; wait`, "background": true})
		if !out.Result.Success || res.Background == nil {
			t.Fatalf("background %d: %+v", i, out.Result)
		}
	}
	// Wait until the count stops growing.
	n, still := 0, 0
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && still < 20; {
		time.Sleep(100 * time.Millisecond)
		if m := len(processesWith("sleep", "61.5")); m != n {
			n, still = m, 0
		} else {
			still++
		}
	}
	sleeps := processesWith("sleep", "61.5")
	t.Logf("8 background commands of one session, 40 sleeps tried by each: %d running (session pids max %d)", len(sleeps), sessionTasks)
	if len(sleeps) == 0 || len(sleeps) > sessionTasks {
		t.Fatalf("%d sleeps of one session's background commands, whose session group is capped at %d tasks", len(sleeps), sessionTasks)
	}
	group := cgroupOf(sleeps[0], "pids")
	if !strings.Contains(group, "/ws-w1/s-s1/w-") {
		t.Fatalf("a background command's process is in %q, not in its session's group", group)
	}
	memGroup := cgroupOf(sleeps[0], "memory")
	if !strings.Contains(memGroup, "/ws-w1/s-s1/w-") {
		t.Fatalf("a background command's process is in memory group %q, not in its session's", memGroup)
	}
	// The session's memory limit is on the session's group.
	mount := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(mount, "memory.limit_in_bytes")); err != nil {
		mount = "/sys/fs/cgroup"
	}
	session := filepath.Join(mount, filepath.Dir(memGroup))
	limit, err := os.ReadFile(filepath.Join(session, "memory.limit_in_bytes"))
	if err != nil {
		limit, err = os.ReadFile(filepath.Join(session, "memory.max"))
	}
	if err != nil || strings.TrimSpace(string(limit)) != strconv.Itoa(1536<<20) {
		t.Fatalf("the session group %s's memory limit: %q %v", session, limit, err)
	}
	// Ending the session ends its commands and removes its groups.
	if err := f.h.EndSession(ctx, "w1", "s1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range sleeps {
		waitGone(t, p, "session end")
	}
	if _, err := os.Stat(session); !os.IsNotExist(err) {
		t.Fatalf("the session's memory group is still there after the session ended: %v", err)
	}
}

// mountedBeneath lists the mount points beneath dir (this process's mount namespace).
func mountedBeneath(dir string) []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// A command, in the foreground or the background, that writes past the session's temporary
// folder quota gets ENOSPC: the session's temporary folder is a tmpfs of SessionTempMB
// (mounted by a root host in its own namespace, by an ordinary user's in the mount namespace
// jean2 runs in: TestShellTempQuotaAsOrdinaryUser). Before, the quota was measured while a
// call ran, and a background command, whose call had returned, wrote 64 MiB into a 16 MiB
// quota and went on. After Close nothing is left mounted, nor in cgroups.
func TestShellBackgroundWritePastTempQuotaFails(t *testing.T) {
	f := newShellFixtureHost(t, nil, func(o *host.Options) { o.Limits.SessionTempMB = 16 })
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	_, fg := f.run(ctx, map[string]any{"command": `dd if=/dev/zero of="$TMPDIR/fg" bs=1M count=32; echo "dd exit $?"; rm -f "$TMPDIR/fg"`})
	t.Logf("a foreground command wrote into a 16 MiB temporary folder: %q", fg.Stdout+fg.Stderr)
	if !strings.Contains(fg.Stderr, "No space left on device") || strings.Contains(fg.Stdout, "dd exit 0") {
		t.Fatalf("a foreground command wrote 32 MiB past a 16 MiB quota: %+v", fg)
	}
	// What the command says goes to the workspace: its output file is in the temporary
	// folder, full once the quota is reached.
	out, res := f.run(ctx, map[string]any{"command": `dd if=/dev/zero of="$TMPDIR/big" bs=1M count=64 2>dd.txt; echo "dd exit $?" >> dd.txt`, "background": true})
	if !out.Result.Success || res.Background == nil {
		t.Fatalf("%+v", out.Result)
	}
	var text string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(f.ws, "dd.txt"))
		if text = string(data); strings.Contains(text, "dd exit") {
			break
		}
	}
	big := filepath.Join(filepath.Dir(res.Background.Output), "big")
	fi, err := os.Stat(big)
	if err != nil {
		t.Fatalf("the written file: %v (output %q)", err, text)
	}
	t.Logf("a background command wrote %d MiB into a 16 MiB temporary folder: %q", fi.Size()>>20, text)
	if fi.Size() > 16<<20 || !strings.Contains(text, "No space left on device") || strings.Contains(text, "dd exit 0") {
		t.Fatalf("wrote %d bytes past a 16 MiB quota: %q", fi.Size(), text)
	}
	s1Temp := filepath.Join(f.layout.WorkspaceTemp("w1"), "s1")
	if m := mountedBeneath(f.layout.Temp); len(m) != 1 || m[0] != s1Temp {
		t.Fatalf("mounts beneath the temporary folders: %v", m)
	}
	cg := strings.TrimPrefix(f.h.Sandbox().Pids, "cgroup ")
	if err := f.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if m := mountedBeneath(f.layout.Temp); len(m) != 0 {
		t.Fatalf("still mounted after Close: %v", m)
	}
	if filepath.IsAbs(cg) {
		if _, err := os.Stat(cg); !os.IsNotExist(err) {
			t.Fatalf("the host's cgroup folder %s is still there after Close: %v", cg, err)
		}
	}
}

// The same quota holds, by the kernel, for an ordinary user's jean2, and /tmp is the
// session's folder there too: this test binary runs those tests again as nobody. Before,
// there the quota was only measured: the foreground dd wrote its 32 MiB into the 16 MiB
// folder.
func TestShellTempQuotaAsOrdinaryUser(t *testing.T) {
	tests := []string{"TestShellBackgroundWritePastTempQuotaFails", "TestShellTmpIsTheSessionFolder", "TestShellSessionTempIsItsOwn"}
	out, err := asuser.Rerun(t, "^("+strings.Join(tests, "|")+")$")
	if strings.Contains(out, "needs Landlock") {
		t.Skipf("no confined shell for an ordinary user here:\n%s", out)
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
