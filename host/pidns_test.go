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

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// writerTool leaves behind a process that made a session of its own and forked twice (its
// parent exits: no one holds it), which appends to a file ten times a second.
const writerTool = `import cp from 'node:child_process';
export const definition = {
  name: 'writer', description: 'leaves a writer behind',
  inputSchema: { type: 'object', properties: { file: { type: 'string' } }, required: ['file'] },
  timeout: 30000, permissions: { childProcess: true },
};
export async function execute(input) {
  const loop = 'while :; do echo x >> ' + input.file + '; sleep 0.1; done';
  cp.spawnSync('/bin/sh', ['-c', '(setsid /bin/sh -c "' + loop + '" >/dev/null 2>&1 &)'], { stdio: 'ignore' });
  return { success: true, result: { worker: process.pid } };
}
`

// writerLoop is the shell's version: a background command that leaves the same writer.
func writerLoop(file string) string {
	return `(setsid /bin/sh -c 'while :; do echo x >> ` + file + `; sleep 0.1; done' >/dev/null 2>&1 &); sleep 300`
}

// TestKilledHostProcess is the host that TestSandboxNothingOutlivesTheKilledHost kills:
// it runs only as that test's child.
func TestKilledHostProcess(t *testing.T) {
	root := os.Getenv("JEAN2_KILLED_ROOT")
	if root == "" {
		t.Skip("runs as the child of TestSandboxNothingOutlivesTheKilledHost")
	}
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
	write(t, filepath.Join(layout.Tools, "writer", "package.json"), pkgJSON)
	write(t, filepath.Join(layout.Tools, "writer", "tool.js"), writerTool)
	sb := host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: os.Args[0]}
	h, err := host.New(context.Background(), host.Options{
		Layout: layout, Logger: slog.New(&logSink{}), ServerEnv: []string{"PATH=/usr/bin:/bin"},
		IdleTimeout: time.Minute, Sandbox: sb,
		Builtins: []tool.Tool{builtin.Shell(builtin.ShellOptions{Sandbox: sb, Layout: layout})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ApprovePermissions("writer"); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	call := func(name string, args any) {
		raw, _ := json.Marshal(args)
		out := h.Invoke(context.Background(), host.Call{Tool: name, Args: raw, SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: ws}})
		if !out.Result.Success {
			t.Fatalf("%s: %s", name, out.Result.Error)
		}
	}
	call("writer", map[string]string{"file": filepath.Join(ws, "tool.txt")})
	call("shell", map[string]any{"command": writerLoop(filepath.Join(ws, "shell.txt")), "background": true})
	fmt.Println("READY")
	time.Sleep(time.Minute) // until killed
}

// After kill -9 of the host, nothing a confined process started writes any more within a
// second: not the writer a tool's worker left in a session of its own, forked twice, nor
// the one a background shell command left. Each launcher was its pid namespace's init, and
// died with the host (its parent-death signal), taking its namespace along.
//
// Before, both writers wrote on until a new host started (20 s later they still wrote).
func TestSandboxNothingOutlivesTheKilledHost(t *testing.T) {
	if abi, err := sandbox.LandlockABI(); abi < 1 {
		t.Skipf("Landlock is not available here: %v", err)
	}
	if err := sandbox.PidNSAvailable(); err != nil {
		t.Skipf("no pid namespace here (the next host ends what is left): %v", err)
	}
	root := t.TempDir()
	// A host started on the same home after the kill unmounts the temporary folder's tmpfs
	// the killed one left (its start-up sweep), so that the folder can be removed.
	t.Cleanup(func() { _ = orphanHost(t, root).Close(context.Background()) })
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHostProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JEAN2_KILLED_ROOT="+root)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "READY") {
	}
	files := []string{filepath.Join(ws, "tool.txt"), filepath.Join(ws, "shell.txt")}
	size := func(f string) int64 {
		fi, err := os.Stat(f)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	for _, f := range files {
		deadline := time.Now().Add(20 * time.Second)
		for size(f) < 2 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if size(f) < 2 {
			t.Fatalf("%s: the writer did not start (else this test proves nothing)", f)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	time.Sleep(time.Second)
	before := []int64{size(files[0]), size(files[1])}
	time.Sleep(3 * time.Second)
	for i, f := range files {
		if after := size(f); after != before[i] {
			t.Errorf("%s grew from %d to %d bytes between 1 s and 4 s after the host was killed", filepath.Base(f), before[i], after)
		}
	}
}
