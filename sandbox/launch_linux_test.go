//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// capLines reads the capability sets and no_new_privs from a /proc/PID/status.
func capLines(status string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && (strings.HasPrefix(k, "Cap") || k == "NoNewPrivs") {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// The launcher leaves the program no capability, whoever runs it; and a root launcher
// leaves no way to get one back (bounding set empty, securebits locked).
func TestLauncherDropsCapabilities(t *testing.T) {
	cat, _ := exec.LookPath("cat")
	specs := []Spec{{}, {DataMB: 256}}
	if abi, _ := LandlockABI(); abi >= 1 {
		specs = append(specs, Spec{Landlock: true, Rules: Plan{Program: cat}.Rules(), NoFork: CanDenyProcesses()})
	}
	for i, spec := range specs {
		out, stderr, code := launch(t, spec, cat, "/proc/self/status")
		if code != 0 {
			t.Fatalf("spec %d: exit %d %s", i, code, stderr)
		}
		got := capLines(out)
		want := map[string]string{"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1"}
		if os.Getuid() == 0 {
			want["CapBnd"] = "0000000000000000"
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("spec %d (landlock %v): %s is %q, want %s", i, spec.Landlock, k, got[k], v)
			}
		}
	}
	if os.Getuid() != 0 {
		return
	}
	// The securebits are locked: uid 0 gains nothing at exec, and the bits cannot be unset.
	sh, _ := exec.LookPath("sh")
	out, stderr, code := launch(t, Spec{}, sh, "-c", "grep -E '^(CapEff|CapPrm)' /proc/self/status; cat /proc/self/status | grep CapBnd")
	if code != 0 || strings.Count(out, "0000000000000000") != 3 {
		t.Fatalf("a program the worker executes: exit %d %q %s", code, out, stderr)
	}
}

// Only the standard streams and the descriptors the host passes on purpose reach the
// program; before, every descriptor the host held without close-on-exec did.
func TestLauncherClosesInheritedDescriptors(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "SECRET")
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	sh, _ := exec.LookPath("sh")
	// ls runs in a process of its own: what it lists is the shell's descriptors alone.
	list := `ls -l /proc/$$/fd`
	run := func(extra int) string {
		path, argv, err := Command(os.Args[0], Spec{ExtraFDs: extra}, sh, []string{"-c", list})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path, argv...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		// fd 3 and 4 as the worker protocol's pipes, fd 5 a descriptor the host holds.
		cmd.ExtraFiles = []*os.File{r, w, f}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %s", err, errb.String())
		}
		return out.String()
	}
	out := run(2)
	fds := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[len(f)-2] == "->" {
			fds[f[len(f)-3]] = f[len(f)-1]
		}
	}
	if _, ok := fds["5"]; ok || strings.Contains(out, secret) {
		t.Fatalf("the host's descriptor of %s reached the program:\n%s", secret, out)
	}
	for _, n := range []string{"0", "1", "2", "3", "4"} {
		if _, ok := fds[n]; !ok {
			t.Fatalf("descriptor %s did not reach the program:\n%s", n, out)
		}
	}
	if len(fds) != 5 {
		t.Fatalf("descriptors beyond 0-4:\n%s", out)
	}
	// Without extra descriptors (the install's launch) the pipes are closed too.
	if out := run(0); strings.Contains(out, " 3 -> ") || strings.Contains(out, secret) {
		t.Fatalf("ExtraFDs 0 passed descriptors on:\n%s", out)
	}
}

// A file cannot grow past FileMB: the write fails (EFBIG), the program is not killed.
func TestLauncherFileSizeLimit(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	file := filepath.Join(t.TempDir(), "big")
	script := "head -c 3145728 /dev/zero > " + file + "; echo exit=$?"
	out, stderr, code := launch(t, Spec{FileMB: 1}, sh, "-c", script)
	fi, err := os.Stat(file)
	if code != 0 || err != nil || fi.Size() != 1<<20 || strings.Contains(out, "exit=0") || !strings.Contains(stderr, "too large") {
		t.Fatalf("a 3 MiB file under a 1 MiB cap: exit %d, %q %s, size %v %v", code, out, stderr, fi, err)
	}
	if out, stderr, code = launch(t, Spec{}, sh, "-c", script); code != 0 || !strings.Contains(out, "exit=0") {
		t.Fatalf("without a cap: exit %d %q %s", code, out, stderr)
	}
}

// realPython finds the python3 binary itself (not a wrapper script).
func realPython(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3: %v", err)
	}
	p := strings.TrimSpace(string(out))
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p
}

// RLIMIT_DATA does not count shared memory: a program under a 128 MiB cap fills 512 MiB of
// it. The memory cgroup counts it, and the kernel kills the program.
func TestMemoryCgroupCapsSharedMemory(t *testing.T) {
	py := realPython(t)
	mem, err := NewMemory(nil)
	if err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	}
	defer func() {
		if err := mem.Close(); err != nil {
			t.Error(err)
		}
	}()
	script := "import mmap\nm = mmap.mmap(-1, 512 << 20, mmap.MAP_SHARED)\nfor i in range(0, 512 << 20, 4096): m[i] = 1\nprint('filled 512 MiB')"
	out, stderr, code := launch(t, Spec{DataMB: 128}, py, "-c", script)
	if code != 0 && raceBuild && (strings.Contains(stderr, "ThreadSanitizer: out of memory") || strings.Contains(stderr, "pthread_create failed")) {
		// A race build's launcher (this test binary) allocates its detector's memory, and
		// its threads' stacks, under the RLIMIT_DATA it sets for the program just before
		// exec; the jean2 binary has no detector.
		t.Skipf("the race detector in the launcher ran out of memory under RLIMIT_DATA: %s", stderr)
	}
	if code != 0 || !strings.Contains(out, "filled 512 MiB") {
		t.Fatalf("without the cgroup RLIMIT_DATA was expected not to count shared memory (else this test proves nothing): exit %d %q %s", code, out, stderr)
	}
	path, argv, err := Command(os.Args[0], Spec{DataMB: 128, MemoryCgroup: mem.Dir(), MemoryMaxMB: 128}, py, []string{"-c", script})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, argv...)
	var o bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &o
	err = cmd.Run()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL || strings.Contains(o.String(), "filled") {
		t.Fatalf("512 MiB of shared memory in a 128 MiB group: %v %q", err, o.String())
	}
	if !mem.OutOfMemory(cmd.Process.Pid) {
		t.Errorf("the group does not report the kill as out of memory")
	}
	mem.Release(cmd.Process.Pid)
	if _, err := os.Stat(filepath.Join(mem.Dir(), "w-"+strconv.Itoa(cmd.Process.Pid))); !os.IsNotExist(err) {
		t.Fatalf("the worker's group is still there: %v", err)
	}
}

// A host that died (kill -9) leaves its folder and what its workers started; the next host
// ends those processes and removes the folder, and leaves a live host's folder alone.
func TestSweepStaleEndsWhatDeadHostsLeft(t *testing.T) {
	pids, err := NewPids()
	if err != nil {
		t.Skipf("no pids cgroup here: %v", err)
	}
	defer pids.Close()
	base := filepath.Dir(pids.Dir())
	// A pid no process has: one that just exited.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(base, fmt.Sprintf("jean2-%d-t1-0badc0ffee00", gone.Process.Pid))
	// This process's pid with another start time: the pid was reused by a live process.
	reused := filepath.Join(base, fmt.Sprintf("jean2-%d-t1-n%d-0badc0ffee01", os.Getpid(), pidNamespace()))
	// A dead pid of another pid namespace means nothing here: that host may well run.
	elsewhere := filepath.Join(base, fmt.Sprintf("jean2-%d-t1-n%d-0badc0ffee02", gone.Process.Pid, pidNamespace()+1))
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(elsewhere)
	var orphans []*exec.Cmd
	for _, dir := range []string{dead, reused} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(dir)
		orphan := exec.Command("sleep", "30")
		orphan.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := orphan.Start(); err != nil {
			t.Fatal(err)
		}
		defer orphan.Process.Kill()
		group := filepath.Join(dir, "w-"+strconv.Itoa(orphan.Process.Pid))
		if err := os.Mkdir(group, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(group)
		if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(orphan.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
		orphans = append(orphans, orphan)
	}
	SweepStale()
	for i, orphan := range orphans {
		done := make(chan error, 1)
		go func() { done <- orphan.Wait() }()
		select {
		case <-done:
			if ws, _ := orphan.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("orphan %d ended otherwise: %v", i, orphan.ProcessState)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("orphan %d of a dead host still runs after the sweep", i)
		}
	}
	for _, dir := range []string{dead, reused} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the dead host's folder %s is still there: %v", dir, err)
		}
	}
	for _, dir := range []string{pids.Dir(), elsewhere} {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("the sweep removed a live host's folder: %v", err)
		}
	}
}

// A spec that asks for a Seatbelt profile (macOS) is refused on Linux rather than run
// without the confinement it asks for.
func TestLaunchRefusesSeatbeltOnLinux(t *testing.T) {
	prof, err := Plan{Program: "/bin/true"}.Seatbelt(0)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := launch(t, Spec{Seatbelt: &prof}, "/bin/true")
	if code != ExitLaunchFailed || !strings.Contains(stderr, "only on macOS") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
