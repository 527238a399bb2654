//go:build linux

package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// inSession makes a call one of session id in workspace w1.
func inSession(id string) func(*host.Call) {
	return func(c *host.Call) { c.SessionID = id }
}

// workerOf returns the pid and the pids cgroup of the hostile tool's worker that serves
// a call of session id.
func (sf *sandboxFixture) workerOf(t *testing.T, id string) (int, string) {
	t.Helper()
	r, out := sf.try(t, map[string]any{"op": "read", "path": "/proc/self/cgroup"}, inSession(id))
	if !r.OK {
		t.Fatalf("session %s: read /proc/self/cgroup: %+v %s", id, r, out.Result.Error)
	}
	var groups string
	_ = json.Unmarshal(r.Value, &groups)
	var pidsGroup string
	for _, line := range strings.Split(groups, "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 && (f[1] == "pids" || f[1] == "") && strings.Contains(f[2], "/w-") {
			pidsGroup = f[2]
		}
	}
	r, out = sf.try(t, map[string]any{"op": "pid"}, inSession(id))
	if !r.OK {
		t.Fatalf("session %s: pid: %+v %s", id, r, out.Result.Error)
	}
	var pid int
	_ = json.Unmarshal(r.Value, &pid)
	return pid, pidsGroup
}

// A session's tool workers are in its session's cgroup, beside its shell commands, so the
// kernel holds the session's workers and commands together to SessionMaxTasks and
// SessionMemoryMB; two sessions of one workspace never share a worker; when the session
// ends its workers end with its group and the other session's go on.
func TestSessionCgroupHoldsTheSessionsWorkers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("cgroups are made by a root host only")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	if !strings.HasPrefix(sf.h.Sandbox().Pids, "cgroup ") {
		t.Skipf("no pids cgroup here: %s", sf.h.Sandbox().Pids)
	}
	hostPids := strings.TrimPrefix(sf.h.Sandbox().Pids, "cgroup ")
	pid1, group1 := sf.workerOf(t, "s1")
	pid2, group2 := sf.workerOf(t, "s2")
	t.Logf("session s1: worker %d in %s; session s2: worker %d in %s", pid1, group1, pid2, group2)
	if !strings.Contains(group1, "/ws-w1/s-s1/w-") || !strings.Contains(group2, "/ws-w1/s-s2/w-") {
		t.Fatalf("the workers are not in their sessions' groups: s1 %q, s2 %q", group1, group2)
	}
	if pid1 == pid2 {
		t.Fatalf("sessions s1 and s2 share the worker %d", pid1)
	}
	// The session's group counts the worker's tasks: its cap is the session's.
	dir := filepath.Join(hostPids, "ws-w1", "s-s1")
	for file, want := range map[string]int{"pids.current": 1, "pids.max": host.DefaultSessionMaxTasks} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || n < want || (file == "pids.max" && n != want) {
			t.Fatalf("%s of session s1's group: %q %v (want %d)", file, data, err, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sf.h.EndSession(ctx, "w1", "s1"); err != nil {
		t.Fatal(err)
	}
	if err := processGone(pid1, 5*time.Second); err != nil {
		t.Fatalf("session s1's worker after the session ended: %v", err)
	}
	if again, _ := sf.workerOf(t, "s2"); again != pid2 {
		t.Fatalf("session s2's worker changed when s1 ended: %d → %d", pid2, again)
	}
}

// processGone waits until pid has exited (or is a zombie).
func processGone(pid int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(data), ") Z ") {
			return nil
		}
		if time.Now().After(deadline) {
			return &os.PathError{Op: "wait for exit", Path: "/proc/" + strconv.Itoa(pid), Err: os.ErrExist}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// socketsHeld counts the sockets this process (the host) holds open: a pool's egress proxy
// listens on one in the pool's network namespace.
func socketsHeld() int {
	entries, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			n++
		}
	}
	return n
}

// Each session has pools of its own, so a session nobody uses any more must not keep them:
// once idle for the idle timeout its workers stop and its pools close (their network
// namespaces and egress proxies with them) though no call of the tool comes to reap them.
func TestSessionCgroupIdleSessionsHoldNoWorkers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("cgroups are made by a root host only")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.IdleTimeout = 500 * time.Millisecond })
	if !sf.h.Sandbox().NetNS {
		t.Skip("no network namespaces here: nothing of an idle pool to observe but its workers")
	}
	time.Sleep(time.Second) // the load's probe is gone
	before := socketsHeld()
	pid1, _ := sf.workerOf(t, "s1")
	pid2, _ := sf.workerOf(t, "s2")
	held := socketsHeld()
	for _, pid := range []int{pid1, pid2} {
		if err := processGone(pid, 5*time.Second); err != nil {
			t.Fatalf("an idle session's worker: %v", err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for socketsHeld() > before {
		if time.Now().After(deadline) {
			t.Fatalf("sockets held: %d before the sessions' calls, %d with their pools, %d once they were idle for 5 s", before, held, socketsHeld())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if again, _ := sf.workerOf(t, "s1"); again == pid1 {
		t.Fatalf("session s1's next call ran in the stopped worker %d", pid1)
	}
}

// The session's task cap holds its tool workers: a worker's processes count toward it,
// whatever the worker's own cap (MaxTasks, 256 by default). Before, a workspace's workers
// were outside every session's group and started all 100.
func TestSessionCgroupCapsAWorkersTasks(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("cgroups are made by a root host only")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "{ childProcess: true }", func(o *host.Options) { o.Limits.SessionMaxTasks = 60 })
	if !strings.HasPrefix(sf.h.Sandbox().Pids, "cgroup ") {
		t.Skipf("no pids cgroup here: %s", sf.h.Sandbox().Pids)
	}
	if _, err := sf.h.ApprovePermissions("hostile"); err != nil {
		t.Fatal(err)
	}
	r, out := sf.try(t, map[string]any{"op": "fork", "n": 100})
	if !out.Result.Success {
		t.Fatalf("fork: %s", out.Result.Error)
	}
	var v struct {
		Started int            `json:"started"`
		Errors  map[string]int `json:"errors"`
	}
	_ = json.Unmarshal(r.Value, &v)
	t.Logf("a worker of session s1 started %d of 100 processes under a session cap of 60 tasks (its own cap: %d); refused: %v", v.Started, host.DefaultMaxTasks, v.Errors)
	if v.Started >= 60 || v.Started == 0 || v.Errors["EAGAIN"] == 0 {
		t.Fatalf("a worker started %d processes in a session capped at 60 tasks: %s", v.Started, r.Value)
	}
}
