package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// daemonTool leaves a process behind: a shell in a session of its own that writes into the
// workspace once its host is gone.
const daemonTool = `import cp from 'node:child_process';
export const definition = {
  name: 'daemon', description: 'leaves a process behind',
  inputSchema: { type: 'object', properties: { file: { type: 'string' } }, required: ['file'] },
  timeout: 30000, permissions: { childProcess: true },
};
export async function execute(input) {
  const child = cp.spawn('/bin/sh', ['-c', 'sleep 5; echo x > ' + input.file], { detached: true, stdio: 'ignore' });
  child.unref();
  return { success: true, result: { worker: process.pid, orphan: child.pid } };
}
`

// orphanHost is a sandboxed host whose home and workspace lie in root.
func orphanHost(t *testing.T, root string) *host.Host {
	t.Helper()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(layout.Tools, "daemon")
	write(t, filepath.Join(dir, "package.json"), pkgJSON)
	write(t, filepath.Join(dir, "tool.js"), daemonTool)
	h, err := host.New(context.Background(), host.Options{
		Layout: layout, Logger: slog.New(&logSink{}), ServerEnv: []string{"PATH=/usr/bin:/bin"},
		IdleTimeout: time.Minute, KillGrace: 300 * time.Millisecond,
		Sandbox: host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: os.Args[0]},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestOrphanHostProcess is the host that TestSandboxNothingOutlivesTheHost kills: it runs
// only as that test's child.
func TestOrphanHostProcess(t *testing.T) {
	root := os.Getenv("JEAN2_ORPHAN_ROOT")
	if root == "" {
		t.Skip("runs as the child of TestSandboxNothingOutlivesTheHost")
	}
	h := orphanHost(t, root)
	if _, err := h.ApprovePermissions("daemon"); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	args, _ := json.Marshal(map[string]string{"file": filepath.Join(ws, "late.txt")})
	out := h.Invoke(context.Background(), host.Call{Tool: "daemon", Args: args, SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: ws}})
	if !out.Result.Success {
		t.Fatal(out.Result.Error)
	}
	fmt.Printf("READY %s\n", out.Result.Result)
	time.Sleep(time.Minute) // until killed
}

// After kill -9 of the host, the worker dies with it (its parent-death signal) and what
// the tool started in a session of its own is ended by the next host that starts: it never
// writes into the workspace. (Where the host makes a pid namespace per launcher, the
// orphan dies with the host instead.)
//
// Before, the detached shell lived on under PID 1 and wrote late.txt five seconds later,
// while the new host ran.
func TestSandboxNothingOutlivesTheHost(t *testing.T) {
	if abi, err := sandbox.LandlockABI(); abi < 1 {
		t.Skipf("Landlock is not available here: %v", err)
	}
	root := t.TempDir()
	// A host started on the same home after the kill unmounts the temporary folder's tmpfs
	// the killed one left (its start-up sweep), so that the folder can be removed.
	t.Cleanup(func() { _ = orphanHost(t, root).Close(context.Background()) })
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	late := filepath.Join(ws, "late.txt")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanHostProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JEAN2_ORPHAN_ROOT="+root)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pids struct{ Worker, Orphan int }
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
			if err := json.Unmarshal([]byte(rest), &pids); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if pids.Orphan == 0 {
		t.Fatalf("the host process did not start its tool (%v)", sc.Err())
	}
	started := time.Now()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if sandbox.PidNSAvailable() == nil {
		// The worker was its launcher's child in a pid namespace of the launcher's own (the
		// pids it reported are that namespace's), and the orphan died with the launcher
		// (TestSandboxNothingOutlivesTheKilledHost): it never writes.
		time.Sleep(time.Until(started.Add(6 * time.Second)))
		if _, err := os.Stat(late); !os.IsNotExist(err) {
			t.Fatalf("the orphan wrote into the workspace after its host died: %v", err)
		}
		return
	}
	if !alive(pids.Orphan) {
		t.Fatalf("the detached process %d did not outlive the killed host (else this test proves nothing)", pids.Orphan)
	}
	if !gone(pids.Worker) {
		t.Errorf("worker %d outlived its host (no parent-death signal)", pids.Worker)
	}

	h := orphanHost(t, root)
	defer h.Close(context.Background())
	if !gone(pids.Orphan) {
		t.Fatalf("process %d that a tool of the killed host left still runs after a new host started", pids.Orphan)
	}
	// The shell would have written after five seconds.
	time.Sleep(time.Until(started.Add(6 * time.Second)))
	if _, err := os.Stat(late); !os.IsNotExist(err) {
		t.Fatalf("the orphan wrote into the workspace after its host died: %v", err)
	}
}

// alive reports whether a process runs (a zombie does not).
func alive(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(st), ')')
	return i > 0 && i+2 < len(st) && st[i+2] != 'Z' && st[i+2] != 'X'
}

// gone waits, a bounded number of times, for a process to end.
func gone(pid int) bool {
	for range 200 {
		if !alive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
