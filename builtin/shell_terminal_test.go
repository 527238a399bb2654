//go:build linux

package builtin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/rawio"
)

// termReader keeps what a terminal printed, for a test to wait on.
type termReader struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func readTerminal(t io.Reader) *termReader {
	r := &termReader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		b := make([]byte, 4096)
		for {
			n, err := t.Read(b)
			r.mu.Lock()
			r.buf.Write(b[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

// waitFor waits until the output matches re and returns the match's first group.
func (r *termReader) waitFor(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		m := rx.FindStringSubmatch(r.buf.String())
		r.mu.Unlock()
		if m != nil {
			return m[len(m)-1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("the terminal never printed %q; it printed:\n%q", re, r.buf.String())
	return ""
}

func openTestTerminal(t *testing.T, f *shellFixture, size host.TerminalSize) (host.Terminal, *termReader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	term, err := f.h.OpenTerminal(ctx, host.Workspace{ID: "w1", Path: f.ws}, "term-1", size, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	return term, readTerminal(term)
}

func typeLine(t *testing.T, term host.Terminal, line string) {
	t.Helper()
	if _, err := io.WriteString(term, line+"\n"); err != nil {
		t.Fatalf("type %q: %v", line, err)
	}
}

// A terminal is the person's shell on a pseudo-terminal, in the shell's view: it echoes,
// follows a resize, writes in the workspace and nowhere else, and its close ends every
// process it started.
func TestTerminalRunsInTheShellsView(t *testing.T) {
	f := newShellFixture(t, nil)
	t.Setenv("SHELL", "/bin/bash")
	term, out := openTestTerminal(t, f, host.TerminalSize{Rows: 24, Cols: 80})

	// The sum is printed, not the typed line: the match is the shell's output.
	typeLine(t, term, `echo hi-$((40+2))`)
	out.waitFor(t, `hi-42`)
	typeLine(t, term, `echo size=$(stty size)`)
	out.waitFor(t, `size=24 80`)
	if err := term.Resize(host.TerminalSize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	typeLine(t, term, `echo size=$(stty size)`)
	out.waitFor(t, `size=40 120`)
	typeLine(t, term, `[ -t 0 ] && echo tty-$((1+1)) pgid-$(($(ps -o pgid= $$) == $$))`)
	out.waitFor(t, `tty-2 pgid-1`)

	// In the workspace a write goes through; outside it fails as a shell command's does.
	outside := filepath.Join(f.root, "outside.txt")
	typeLine(t, term, fmt.Sprintf(`echo in > inside.txt && echo wrote-$((3+4)); echo out > %q || echo refused-$((5+6))`, outside))
	out.waitFor(t, `wrote-7`)
	out.waitFor(t, `refused-11`)
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the terminal wrote %s outside the workspace: %v", outside, err)
	}
	if data, err := os.ReadFile(filepath.Join(f.ws, "inside.txt")); err != nil || string(data) != "in\n" {
		t.Fatalf("inside.txt: %q %v", data, err)
	}
	typeLine(t, term, `cat $JEAN2_HOME/.env ~/.env `+f.layout.DotEnv+` 2>&1; echo catted-$((1+2))`)
	out.waitFor(t, `catted-3`)
	if bytes.Contains(out.buf.Bytes(), []byte("sk-secret-in-jean2-home")) {
		t.Fatal("the terminal read jean2's .env")
	}

	// Closing ends what the shell started, in its group and out of it (setsid).
	typeLine(t, term, `sleep 1000 & echo $! $(readlink /proc/self/ns/pid) > child.pid; setsid sleep 1000 & echo $! $(readlink /proc/self/ns/pid) > setsid.pid`)
	child := readPid(t, filepath.Join(f.ws, "child.pid"))
	if f.h.Sandbox().PidNS {
		// In a pid namespace of its own, led by the launcher: its end (jean2's death
		// included, by the parent-death signal) ends every process of the terminal.
		data, _ := os.ReadFile(filepath.Join(f.ws, "child.pid"))
		own, _ := os.Readlink("/proc/self/ns/pid")
		if bytes.Contains(data, []byte(own)) {
			t.Fatalf("the terminal's shell runs in jean2's pid namespace: %s", data)
		}
	}
	detached := readPid(t, filepath.Join(f.ws, "setsid.pid"))
	if err := term.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-term.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the shell still runs after Close")
	}
	waitGone(t, child, "terminal close")
	waitGone(t, detached, "terminal close, setsid")
	select {
	case <-out.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal still reads after Close")
	}
}

// A shell that exits (the person types exit) reports it through Done.
func TestTerminalExitIsDone(t *testing.T) {
	f := newShellFixture(t, nil)
	term, _ := openTestTerminal(t, f, host.TerminalSize{Rows: 24, Cols: 80})
	typeLine(t, term, `exit 3`)
	select {
	case <-term.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the shell did not end after exit")
	}
}

// Nothing a terminal started outlives jean2: killed with SIGKILL (no Close, no clean-up),
// the process that opened it takes the terminal's processes with it (the launcher's
// parent-death signal; as its pid namespace's init, its end ends the rest).
func TestTerminalDiesWithJean2(t *testing.T) {
	if os.Getenv("JEAN2_TERMINAL_HELPER") != "" {
		terminalHelper(t, os.Getenv("JEAN2_TERMINAL_HELPER"))
		return
	}
	f := newShellFixture(t, nil) // skips where the launcher cannot confine
	if !f.h.Sandbox().PidNS {
		t.Skipf("no pid namespaces here: %s", f.h.Sandbox().PidNSError)
	}
	dir := t.TempDir()
	// The helper's own temporary folders go in one of this test's, whose tmpfs mounts the
	// killed helper could not unmount: they are unmounted here, not left on the machine.
	helperTemp := t.TempDir()
	t.Cleanup(func() { unmountBeneath(t, helperTemp) })
	helper := exec.Command(os.Args[0], "-test.run=^TestTerminalDiesWithJean2$", "-test.timeout=120s")
	helper.Env = append(os.Environ(), "JEAN2_TERMINAL_HELPER="+dir, "TMPDIR="+helperTemp)
	helper.Stdout, helper.Stderr = os.Stderr, os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	child := readPid(t, filepath.Join(dir, "child.pid"))
	if processGone(child) {
		t.Fatal("the terminal's child is not running")
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	waitGone(t, child, "jean2 killed")
}

// unmountBeneath unmounts what is mounted beneath dir (what a killed jean2 left there).
func unmountBeneath(t *testing.T, dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Errorf("read mountinfo: %v", err)
		return
	}
	for _, m := range rawio.ParseMountinfo(data) {
		if strings.HasPrefix(m.Point, dir+"/") {
			if err := syscall.Unmount(m.Point, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s, left by the killed helper: %v", m.Point, err)
			}
		}
	}
}

// terminalHelper is the jean2 of TestTerminalDiesWithJean2: it opens a terminal whose
// shell starts a child, writes where the test finds it, and waits to be killed.
func terminalHelper(t *testing.T, dir string) {
	f := newShellFixture(t, nil)
	f.ws = dir
	term, _ := openTestTerminal(t, f, host.TerminalSize{Rows: 24, Cols: 80})
	typeLine(t, term, `sleep 1000 & echo $! $(readlink /proc/self/ns/pid) > child.pid`)
	time.Sleep(2 * time.Minute)
}
