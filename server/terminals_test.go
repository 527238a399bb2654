package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/store"
)

// terminalFixture is a server whose shell is confined by the launcher (this test binary).
func terminalFixture(t *testing.T, opts TerminalOptions) (*fixture, store.Workspace) {
	t.Helper()
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || !st.NetNS {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	f := newFixture(t)
	sb := host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0]}
	f.cfg.Host.Sandbox = sb
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: f.cfg.Host.Layout,
		Environ: []string{"PATH=/usr/bin:/bin", "SHELL=/bin/bash"}}})
	f.cfg.Terminals = opts
	f.start()
	ws, _ := f.session()
	return f, ws
}

// termSocket is a page attached to a terminal.
type termSocket struct {
	t    *testing.T
	c    *websocket.Conn
	mu   sync.Mutex
	out  bytes.Buffer
	exit bool
	// text are the text frames the page got, decoded.
	text []map[string]any
	done chan struct{}
}

func (f *fixture) attachTerminal(t *testing.T, id string) *termSocket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, f.wsURL("/api/terminals/"+id+"/ws"), &websocket.DialOptions{HTTPHeader: f.authHeader()})
	if err != nil {
		t.Fatalf("attach terminal %s: %v", id, err)
	}
	s := &termSocket{t: t, c: c, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			typ, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			s.mu.Lock()
			if typ == websocket.MessageBinary {
				s.out.Write(data)
			} else {
				var m map[string]any
				_ = json.Unmarshal(data, &m)
				s.text = append(s.text, m)
				s.exit = s.exit || m["type"] == "exit"
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { c.CloseNow(); <-s.done })
	return s
}

func (s *termSocket) typeLine(line string) {
	s.t.Helper()
	if err := s.c.Write(context.Background(), websocket.MessageBinary, []byte(line+"\n")); err != nil {
		s.t.Fatalf("type %q: %v", line, err)
	}
}

func (s *termSocket) resize(rows, cols int) {
	s.t.Helper()
	data, _ := json.Marshal(terminalFrame{Type: "resize", Rows: rows, Cols: cols})
	if err := s.c.Write(context.Background(), websocket.MessageText, data); err != nil {
		s.t.Fatal(err)
	}
}

func (s *termSocket) waitFor(re string) string {
	s.t.Helper()
	rx := regexp.MustCompile(re)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		m := rx.FindStringSubmatch(s.out.String())
		s.mu.Unlock()
		if m != nil {
			return m[len(m)-1]
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Fatalf("the terminal never printed %q; it printed:\n%q", re, s.out.String())
	return ""
}

// pidOf finds, on the host, the process that is pid in the pid namespace ns.
func pidOf(t *testing.T, f *fixture, file string) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		data, err := os.ReadFile(filepath.Join(f.ws, file))
		if fields := strings.Fields(string(data)); err == nil && len(fields) == 2 && strings.HasSuffix(string(data), "\n") {
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				if link, _ := os.Readlink("/proc/" + e.Name() + "/ns/pid"); link != fields[1] {
					continue
				}
				status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
				for _, line := range strings.Split(string(status), "\n") {
					if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" && f[len(f)-1] == fields[0] {
						var pid int
						fmt.Sscan(e.Name(), &pid)
						return pid
					}
				}
			}
			t.Fatalf("no process %s in %s", fields[0], fields[1])
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the shell did not write %s", file)
	return 0
}

func waitProcessGone(t *testing.T, pid int, what string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: process %d still runs", what, pid)
}

// The terminal's protocol end to end: output, input, resize (the shell's stty follows),
// the scrollback replayed to a page that attaches again while the shell runs on, and the
// explicit close ending its processes.
func TestTerminalSocketReplayAndClose(t *testing.T) {
	f, ws := terminalFixture(t, TerminalOptions{})
	var term liveTerminal
	f.call("POST", "/api/workspaces/"+ws.ID+"/terminals", map[string]any{"rows": 24, "cols": 80}, 201, &term)
	page := f.attachTerminal(t, term.ID)
	page.typeLine(`echo hi-$((40+2)); echo size=$(stty size)`)
	page.waitFor(`hi-42`)
	page.waitFor(`size=24 80`)
	page.resize(40, 120)
	page.typeLine(`sleep 0.2; echo size=$(stty size)`)
	page.waitFor(`size=40 120`)
	page.typeLine(`sleep 1000 & echo $! $(readlink /proc/self/ns/pid) > child.pid`)
	child := pidOf(t, f, "child.pid")
	page.c.Close(websocket.StatusNormalClosure, "reload")

	// The page reloads: the scrollback comes back, the same shell answers.
	again := f.attachTerminal(t, term.ID)
	again.waitFor(`hi-42`)
	again.typeLine(`echo still-$((2*21)) $$`)
	again.waitFor(`still-42`)
	var list struct{ Terminals []liveTerminal }
	f.call("GET", "/api/workspaces/"+ws.ID+"/terminals", nil, 200, &list)
	if len(list.Terminals) != 1 || list.Terminals[0].ID != term.ID {
		t.Fatalf("terminals: %+v", list.Terminals)
	}

	f.call("DELETE", "/api/terminals/"+term.ID, nil, 204, nil)
	waitProcessGone(t, child, "DELETE")
	select {
	case <-again.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the page's socket stays open after the terminal closed")
	}
	again.mu.Lock()
	exited := again.exit
	again.mu.Unlock()
	if !exited {
		t.Fatal("the page was not told the shell ended")
	}
	f.call("DELETE", "/api/terminals/"+term.ID, nil, 404, nil)
}

// Terminals close with their workspace and with the server, and are bounded per
// workspace and in all.
func TestTerminalLimitsAndLifetime(t *testing.T) {
	f, ws := terminalFixture(t, TerminalOptions{PerWorkspace: 2, Total: 3})
	var a, b liveTerminal
	f.call("POST", "/api/workspaces/"+ws.ID+"/terminals", nil, 201, &a)
	f.call("POST", "/api/workspaces/"+ws.ID+"/terminals", nil, 201, &b)
	if status, body := f.request("POST", "/api/workspaces/"+ws.ID+"/terminals", nil, nil); status != http.StatusTooManyRequests {
		t.Fatalf("a third terminal in the workspace: %d %s", status, body)
	}
	other := filepath.Join(f.root, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	var ws2 store.Workspace
	f.call("POST", "/api/workspaces", map[string]any{"path": other}, 201, &ws2)
	var c liveTerminal
	f.call("POST", "/api/workspaces/"+ws2.ID+"/terminals", nil, 201, &c)
	if status, body := f.request("POST", "/api/workspaces/"+ws2.ID+"/terminals", nil, nil); status != http.StatusTooManyRequests {
		t.Fatalf("a fourth terminal on the server: %d %s", status, body)
	}

	pa := f.attachTerminal(t, a.ID)
	pa.typeLine(`sleep 1000 & echo $! $(readlink /proc/self/ns/pid) > a.pid`)
	pidA := pidOf(t, f, "a.pid")
	// Deleting the workspace needs it idle: its session is.
	f.call("DELETE", "/api/workspaces/"+ws.ID, nil, 204, nil)
	waitProcessGone(t, pidA, "workspace deleted")
	f.call("DELETE", "/api/terminals/"+b.ID, nil, 404, nil)

	pc := f.attachTerminal(t, c.ID)
	pc.typeLine(`cd ` + other + ` && sleep 1000 & echo $! $(readlink /proc/self/ns/pid) > ` + filepath.Join(other, "c.pid"))
	f.ws = other
	pidC := pidOf(t, f, "c.pid")
	f.stop()
	waitProcessGone(t, pidC, "server closed")
}

// The page's socket is authenticated as the API's: no token, or a page of another origin,
// is refused before any terminal is reached.
func TestTerminalSocketIsGuarded(t *testing.T) {
	f, ws := terminalFixture(t, TerminalOptions{})
	var term liveTerminal
	f.call("POST", "/api/workspaces/"+ws.ID+"/terminals", nil, 201, &term)
	for name, header := range map[string]http.Header{
		"no token":     {"Authorization": {"Bearer wrong"}},
		"other origin": {"Authorization": {"Bearer " + f.token}, "Origin": {"http://evil.example"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, resp, err := websocket.Dial(ctx, f.wsURL("/api/terminals/"+term.ID+"/ws"), &websocket.DialOptions{HTTPHeader: header})
		cancel()
		if err == nil {
			c.CloseNow()
			t.Fatalf("%s: the socket opened", name)
		}
		if resp == nil || (resp.StatusCode != 401 && resp.StatusCode != 403) {
			t.Fatalf("%s: %v %+v", name, err, resp)
		}
	}
}

// fakeTerminal prints without end, as `yes` does, and counts what was read of it.
type fakeTerminal struct {
	read atomic.Int64
	done chan struct{}
	once sync.Once
}

func (f *fakeTerminal) Read(p []byte) (int, error) {
	select {
	case <-f.done:
		return 0, io.EOF
	default:
	}
	for i := range p {
		p[i] = 'y'
	}
	f.read.Add(int64(len(p)))
	return len(p), nil
}
func (f *fakeTerminal) Write(p []byte) (int, error)    { return len(p), nil }
func (f *fakeTerminal) Resize(host.TerminalSize) error { return nil }
func (f *fakeTerminal) Done() <-chan struct{}          { return f.done }
func (f *fakeTerminal) Close() error                   { f.once.Do(func() { close(f.done) }); return nil }

// A page that takes no output holds the shell back (the pump stops reading) rather than
// growing the server's memory; once it goes, the pump reads on.
func TestTerminalOutputBackpressure(t *testing.T) {
	const scrollback = 256 << 10
	o := newTermOutput(scrollback)
	term := &fakeTerminal{done: make(chan struct{})}
	page := o.attach()
	go o.pump(term)
	time.Sleep(300 * time.Millisecond)
	stalled := term.read.Load()
	time.Sleep(300 * time.Millisecond)
	if now := term.read.Load(); now != stalled || now > scrollback+termReadChunk {
		t.Fatalf("the pump read %d then %d bytes for a page that took none (scrollback %d)", stalled, now, scrollback)
	}
	// The page takes one chunk: the pump reads about one more.
	buf := make([]byte, termReadChunk)
	n, _ := o.next(page, buf)
	o.sent(page, n)
	for deadline := time.Now().Add(10 * time.Second); term.read.Load() == stalled && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // and reads no further
	if now := term.read.Load(); now <= stalled || now > stalled+2*termReadChunk {
		t.Fatalf("after the page took %d bytes the pump read %d → %d", n, stalled, now)
	}
	o.detach(page)
	// The pump reads on, well past the scrollback; how fast depends on the machine's load
	// (the race detector's, under the full suite: 1.9 MB in 100 ms once), so wait for it.
	for deadline := time.Now().Add(10 * time.Second); term.read.Load() < 10*scrollback; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("with no page the pump read only %d bytes in 10 s", term.read.Load())
		}
	}
	term.Close()
	for ended := false; !ended; time.Sleep(10 * time.Millisecond) {
		o.mu.Lock()
		ended = o.exited
		o.mu.Unlock()
	}
	// A page attaching now gets the scrollback, no more.
	late := o.attach()
	got := 0
	for {
		n, exited := o.next(late, buf)
		if exited {
			break
		}
		o.sent(late, n)
		got += n
	}
	if got != scrollback {
		t.Fatalf("replay of %d bytes, want the scrollback's %d", got, scrollback)
	}
}
