//go:build linux

package host_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/asuser"
	"github.com/jean2/jean2/sandbox"
)

// TestSandboxAttackOwnCgroup: a confined worker, uid 0 like its root host, finds its
// session's groups in /proc/self/cgroup and tries to lift their limits, to move itself into
// the host's group, the hierarchy's root or another session's group, to make a group of its
// own beneath its session's, and to set a hierarchy's release_agent (the classic cgroup v1
// way out of a container). The cgroup files are root's and writable by their owner, so
// only the view (read-only) and Landlock (no write rule there) stand in the way: every
// attempt must fail, and the host must see its limits and the worker's place unchanged.
func TestSandboxAttackOwnCgroup(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("cgroups are made by a root host only")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	pidsHost, ok := strings.CutPrefix(sf.h.Sandbox().Pids, "cgroup ")
	if !ok {
		t.Skipf("no pids cgroup here: %s", sf.h.Sandbox().Pids)
	}
	memHost, _ := strings.CutPrefix(sf.h.Sandbox().Memory, "cgroup ")
	pid, group := sf.workerOf(t, "s1")
	sf.workerOf(t, "s2") // another session's group, to move into
	pidsRoot := strings.TrimSuffix(pidsHost, group[:strings.Index(group, "/ws-w1/")])
	if pidsRoot == pidsHost {
		t.Fatalf("cannot tell the hierarchy's root from %s and the worker's group %s", pidsHost, group)
	}
	own := filepath.Join(pidsRoot, group)
	session := filepath.Join(pidsHost, "ws-w1", "s-s1")
	self := strconv.Itoa(pid)
	attempts := []struct{ what, op, path, text string }{
		{"lift its own pids.max", "writeText", filepath.Join(own, "pids.max"), "max"},
		{"lift its session's pids.max", "writeText", filepath.Join(session, "pids.max"), "max"},
		{"move into the host's group", "writeText", filepath.Join(pidsHost, "cgroup.procs"), self},
		{"move into the hierarchy's root", "writeText", filepath.Join(pidsRoot, "cgroup.procs"), self},
		{"move into another session's group", "writeText", filepath.Join(pidsHost, "ws-w1", "s-s2", "cgroup.procs"), self},
		{"make a group of its own", "mkdir", filepath.Join(session, "escape"), ""},
		{"set the release agent", "writeText", filepath.Join(pidsRoot, "release_agent"), "/tmp/pwn.sh"},
		{"ask for a release", "writeText", filepath.Join(own, "notify_on_release"), "1"},
	}
	if memHost != "" && memHost != sf.h.Sandbox().Memory {
		memSession := filepath.Join(memHost, "ws-w1", "s-s1")
		attempts = append(attempts,
			struct{ what, op, path, text string }{"lift its session's memory limit", "writeText", filepath.Join(memSession, "memory.limit_in_bytes"), "-1"},
			struct{ what, op, path, text string }{"lift its session's memory.max", "writeText", filepath.Join(memSession, "memory.max"), "max"},
			struct{ what, op, path, text string }{"move into the host's memory group", "writeText", filepath.Join(memHost, "cgroup.procs"), self},
		)
	}
	for _, a := range attempts {
		r, out := sf.try(t, map[string]any{"op": a.op, "path": a.path, "text": a.text}, inSession("s1"))
		// ENOENT: a file this kernel's hierarchy does not have (memory.max on v1).
		denied(t, a.what+" ("+a.path+")", r, out, "EACCES", "EPERM", "ENOENT")
		t.Logf("%s: %s", a.what, *r.Code)
	}
	data, err := os.ReadFile(filepath.Join(session, "pids.max"))
	if got := strings.TrimSpace(string(data)); err != nil || got != strconv.Itoa(host.DefaultSessionMaxTasks) {
		t.Fatalf("the session's pids.max after the attempts: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(session, "escape")); err == nil {
		t.Fatal("the worker made a group beneath its session's")
	}
	if again, g := sf.workerOf(t, "s1"); again != pid || g != group {
		t.Fatalf("the worker moved: pid %d in %s, was %d in %s", again, g, pid, group)
	}
	if data, err := os.ReadFile(filepath.Join(pidsRoot, "release_agent")); err == nil && strings.Contains(string(data), "pwn") {
		t.Fatalf("release_agent is now %q", data)
	}
	sf.unaffected(t)
}

// TestSandboxAttackTempMounterOutOfReach: an ordinary user's jean2 runs under its mounter
// (sandbox.EnterTempNamespace), a process holding CAP_SYS_ADMIN over jean2's mount
// namespace that mounts and unmounts whatever jean2 asks on a socket. A confined worker
// must not hold that socket (inherited, or named in its environment), must not hold a
// capability, and must not reach the mounter's descriptors or status through /proc; jean2
// itself must hold no capability either. Run as nobody by
// TestSandboxAttackTempMounterAsOrdinaryUser; as root there is no mounter.
func TestSandboxAttackTempMounterOutOfReach(t *testing.T) {
	if tempMounter == nil {
		t.Skip("no temp mounter: root, or no user namespace for this user")
	}
	mounterSock, err := os.Readlink("/proc/self/fd/3")
	if err != nil || !strings.HasPrefix(mounterSock, "socket:[") {
		t.Fatalf("the mounter's socket is not this process's descriptor 3: %q %v", mounterSock, err)
	}
	for _, line := range capabilityLines(t, os.Getpid()) {
		t.Errorf("jean2 under its mounter holds a capability: %s", line)
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	pid, _ := sf.workerOf(t, "s1")
	// The worker and every process between it and the host (the launcher as a pid
	// namespace's init).
	var line []int
	for p := pid; p > 1 && p != os.Getpid(); p = parentOf(t, p) {
		line = append(line, p)
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p))
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p, fd.Name())); l == mounterSock {
				t.Errorf("process %d (the worker's line) holds the mounter's socket as descriptor %s", p, fd.Name())
			}
		}
		for _, line := range capabilityLines(t, p) {
			t.Errorf("process %d (the worker's line) holds a capability: %s", p, line)
		}
		if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p)); strings.Contains(string(env), "JEAN2_TEMP_MOUNTER") {
			t.Errorf("process %d (the worker's line) is told of the mounter in its environment", p)
		}
	}
	t.Logf("the worker's line up to the host %d: %v", os.Getpid(), line)
	mounter := os.Getppid()
	// The check sees a capability where one is: the mounter's.
	if held := capabilityLines(t, mounter); len(held) == 0 {
		t.Fatalf("the mounter %d shows no capability: is it this process's parent?", mounter)
	}
	for _, path := range []string{fmt.Sprintf("/proc/%d/fd", mounter), fmt.Sprintf("/proc/%d/status", mounter)} {
		op := "read"
		if strings.HasSuffix(path, "/fd") {
			op = "readdir"
		}
		r, out := sf.try(t, map[string]any{"op": op, "path": path}, inSession("s1"))
		denied(t, "the worker reads its mounter's "+path, r, out, "EACCES", "ENOENT")
	}
	sf.unaffected(t)
}

// TestSandboxAttackTempMounterAsOrdinaryUser runs TestSandboxAttackTempMounterOutOfReach
// as nobody, whose jean2 runs under a mounter.
func TestSandboxAttackTempMounterAsOrdinaryUser(t *testing.T) {
	out, err := asuser.Rerun(t, "^TestSandboxAttackTempMounterOutOfReach$")
	if strings.Contains(out, "--- SKIP: TestSandboxAttackTempMounterOutOfReach") {
		t.Skipf("as nobody:\n%s", out)
	}
	if err != nil || !strings.Contains(out, "--- PASS: TestSandboxAttackTempMounterOutOfReach") {
		t.Fatalf("as nobody (%v):\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
}

// capabilityLines are the lines of /proc/PID/status that show a capability held.
func capabilityLines(t *testing.T, pid int) []string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the status of %d: %v", pid, err)
	}
	var held []string
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "CapInh", "CapPrm", "CapEff", "CapAmb":
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err != nil || n != 0 {
				held = append(held, line)
			}
		}
	}
	return held
}

// parentOf is pid's parent.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read the stat of %d: %v", pid, err)
	}
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
