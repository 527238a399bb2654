package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// openPipes counts the pipes this process holds open.
func openPipes(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "pipe:") {
			n++
		}
	}
	return n
}

// Found under load: the pipes of a worker that exited on its own stayed open until the tool
// was called again. They are closed when the worker exits.
func TestExitedWorkerPipesClosed(t *testing.T) {
	t.Run("unconfined", func(t *testing.T) { exitedWorkerPipes(t, false) })
	t.Run("landlock", func(t *testing.T) { exitedWorkerPipes(t, true) })
}

func exitedWorkerPipes(t *testing.T, confined bool) {
	f := newFixture(t)
	if confined {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		f.opts.Sandbox = host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: exe}
	}
	f.addTool("quitter", map[string]string{"tool.js": `export const definition = { name: 'quitter', description: 'exits after answering', inputSchema: { type: 'object', properties: {} } };
export async function execute() { setTimeout(() => process.exit(3), 100); return { success: true, result: process.pid }; }
`})
	f.start()
	// A first call starts and ends a worker, so what the host keeps for good (the runtime's
	// probe, loggers) is open before the count.
	if out := f.call("quitter", `{}`); !out.Result.Success {
		t.Fatalf("quitter: %s", out.Result.Error)
	}
	time.Sleep(time.Second)
	before := openPipes(t)
	for range 3 {
		if out := f.call("quitter", `{}`); !out.Result.Success {
			t.Fatalf("quitter: %s", out.Result.Error)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	after := openPipes(t)
	for after > before && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		after = openPipes(t)
	}
	if after > before {
		entries, _ := os.ReadDir("/proc/self/fd")
		for _, e := range entries {
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			t.Logf("fd %s → %s", e.Name(), target)
		}
		t.Fatalf("%d pipes open after three workers exited, %d before: the exited workers' pipes were not closed", after, before)
	}
}

// sessionTemp is the temporary folder of session id of the fixture's workspace (w1).
func (f *fixture) sessionTemp(id string) (string, error) {
	dir := filepath.Join(f.layout.WorkspaceTemp("w1"), id)
	return dir, os.MkdirAll(dir, 0o700)
}

// What sessionless calls leave in their workspace's shared folder (.runs) is removed once
// it is older than an hour, so runs nobody reads do not fill the workspace's quota; a new
// file stays for its caller to read.
func TestSessionlessRunsPruneOldFiles(t *testing.T) {
	f := newFixture(t)
	f.addTool("big", map[string]string{"tool.js": `export const definition = { name: 'big', description: 'a long result', inputSchema: { type: 'object', properties: {} } };
export async function execute() { return { success: true, result: 'x'.repeat(60000) }; }
`})
	f.start()
	sessionless := func(c *host.Call) { c.SessionID = "" }
	first := f.call("big", `{}`, sessionless)
	if first.Overflow == nil {
		t.Fatalf("no overflow file: %+v", first.Result.Error)
	}
	runs := filepath.Dir(first.Overflow.Path)
	if filepath.Base(runs) != ".runs" || filepath.Dir(runs) != f.layout.WorkspaceTemp("w1") {
		t.Fatalf("a sessionless call's overflow in %s, want the workspace's .runs", runs)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(first.Overflow.Path, old, old); err != nil {
		t.Fatal(err)
	}
	second := f.call("big", `{}`, sessionless)
	if _, err := os.Stat(first.Overflow.Path); !os.IsNotExist(err) {
		t.Errorf("the two-hour-old overflow file is still there: %v", err)
	}
	if _, err := os.Stat(second.Overflow.Path); err != nil {
		t.Errorf("the new overflow file went: %v", err)
	}
}
