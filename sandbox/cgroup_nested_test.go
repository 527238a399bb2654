//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forker is a program started by startForkers; exited is closed once it has been waited for.
type forker struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startForkers launches n programs, each in a group of its own capped at perWorker tasks
// beneath parent, each trying to start 40 sleeps, and waits until every one has tried (it
// wrote its mark, or it exited: the shell gives up at its first refused fork).
func startForkers(t *testing.T, parent string, n, perWorker int) []forker {
	t.Helper()
	sh, _ := exec.LookPath("sh")
	dir := t.TempDir()
	var out []forker
	for i := 0; i < n; i++ {
		mark := filepath.Join(dir, strconv.Itoa(i))
		path, argv, err := Command(os.Args[0], Spec{PidsCgroup: parent, PidsMax: perWorker}, sh,
			[]string{"-c", `for i in $(seq 1 40); do sleep 30 & done 2>/dev/null; echo done > ` + mark + `; sleep 30`})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path, argv...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		f := forker{cmd: cmd, exited: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(f.exited) }()
		out = append(out, f)
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := os.Stat(mark); err == nil || time.Now().After(deadline) {
				break
			}
			select {
			case <-f.exited:
			case <-time.After(20 * time.Millisecond):
				continue
			}
			break
		}
	}
	return out
}

// tasksBeneath counts the processes in dir's group and every group beneath it.
func tasksBeneath(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "cgroup.procs" {
			data, _ := os.ReadFile(p)
			n += len(strings.Fields(string(data)))
		}
		return err
	})
	return n
}

// A session's group caps the sum of the groups of the commands beneath it: 4 programs,
// each allowed 40 tasks of its own, together get no more than the session's 20. Before the
// session groups each had only its own cap, and the four together held 160 tasks.
func TestPidsGroupCapsItsWorkersTogether(t *testing.T) {
	pids, err := NewPids()
	if err != nil {
		t.Skipf("no pids cgroup here: %v", err)
	}
	defer func() {
		if err := pids.Close(); err != nil {
			t.Error(err)
		}
	}()
	// Each on its own (what each background command had): 4 × 41.
	alone := startForkers(t, pids.Dir(), 4, 45)
	if n := tasksBeneath(pids.Dir()); n < 4*40 {
		t.Fatalf("without a session group 4 programs held %d tasks; expected each to reach its own cap (else this test proves nothing)", n)
	}
	for _, f := range alone {
		_ = f.cmd.Process.Kill()
		<-f.exited
		pids.Release(f.cmd.Process.Pid)
	}
	session, err := pids.Group("ws-a/s-b", 20)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(session, "pids.max")); strings.TrimSpace(string(got)) != "20" {
		t.Fatalf("the session group's pids.max: %q", got)
	}
	cmds := startForkers(t, session, 4, 45)
	var procs []string
	_ = filepath.WalkDir(session, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			data, _ := os.ReadFile(p)
			procs = append(procs, strings.Fields(string(data))...)
		}
		return err
	})
	if len(procs) > 20 || len(procs) < 4 {
		t.Fatalf("%d tasks in a session group capped at 20", len(procs))
	}
	t.Logf("4 programs × a cap of 45 each: %d tasks beneath the session group capped at 20", len(procs))
	// Removing the workspace's group ends everything beneath it and removes the groups.
	pids.Remove("ws-a")
	for _, f := range cmds {
		<-f.exited
	}
	if _, err := os.Stat(filepath.Join(pids.Dir(), "ws-a")); !os.IsNotExist(err) {
		t.Fatalf("the workspace's group is still there: %v", err)
	}
	for _, p := range procs {
		if st, err := os.ReadFile("/proc/" + p + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Errorf("process %s outlived its session's group", p)
		}
	}
}

// A session's memory group caps the sum: two programs, each allowed 256 MiB of its own,
// each filling 100 MiB of shared memory, do not both fit in the session's 128 MiB.
func TestMemoryGroupCapsItsWorkersTogether(t *testing.T) {
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
	session, err := mem.Group("s-m", 128)
	if err != nil {
		t.Fatal(err)
	}
	script := "import mmap, time, sys\nm = mmap.mmap(-1, 100 << 20, mmap.MAP_SHARED)\nfor i in range(0, 100 << 20, 4096): m[i] = 1\nprint('filled', flush=True)\ntime.sleep(30)"
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 2; i++ {
		path, argv, err := Command(os.Args[0], Spec{MemoryCgroup: session, MemoryMaxMB: 256}, py, []string{"-c", script})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path, argv...)
		var o bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &o
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &o)
		time.Sleep(1500 * time.Millisecond)
	}
	killed := 0
	for i, c := range cmds {
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
			if ws, _ := c.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				killed++
			}
		case <-time.After(3 * time.Second):
			// Alive: the kernel chose the other one.
			_ = c.Process.Kill()
			<-done
			t.Logf("program %d: still alive after the other was killed", i)
			ReleaseWorker(session, c.Process.Pid)
			continue
		}
		ReleaseWorker(session, c.Process.Pid)
		t.Logf("program %d: %v %q", i, c.ProcessState, outs[i].String())
	}
	if killed == 0 {
		t.Fatal("two programs filled 2 × 100 MiB in a session group capped at 128 MiB")
	}
}
