package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/internal/pgtest"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/store"
)

// blobTool returns args.kb KB of text that differs from call to call (a real result does
// not compress to nothing).
const blobTool = `export const definition = { name: 'blob', description: 'returns text', inputSchema: { type: 'object', properties: { kb: { type: 'integer' }, n: { type: 'integer' } } } };
export async function execute(args) {
  const lines = [];
  let size = 0;
  for (let i = 0; size < args.kb * 1024; i++) {
    const line = 'call ' + args.n + ' line ' + i + ': the quick brown fox jumps over the lazy dog ' + (args.n * 7919 + i * 104729).toString(36);
    lines.push(line);
    size += line.length + 1;
  }
  return { success: true, result: lines.join('\n') };
}
`

var (
	listening = regexp.MustCompile(`listening on (http://\S+)`)
	profiling = regexp.MustCompile(`profiling on (http://\S+?)/debug/pprof/`)
)

type serverSpec struct {
	bin         string
	kb          int
	window      int
	refuseAbove int // the fake model's own window, unknown to jean2 (0: none)
	postgres    bool
}

// served is a running `jean2 serve` and its fake model.
type served struct {
	bin   string
	cmd   *exec.Cmd
	base  string
	debug string // the profiling listener, "" when the binary has none
	token string
	model *fakeModel
	logs  *bytes.Buffer
	mu    sync.Mutex
}

// binary is -soak.bin, or jean2 built from this tree.
func binary(t *testing.T) string {
	if *flagBin != "" {
		return *flagBin
	}
	out := filepath.Join(t.TempDir(), "jean2")
	build := exec.Command("go", "build", "-o", out, "../../cmd/jean2")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build jean2: %v\n%s", err, b)
	}
	return out
}

func startServer(t *testing.T, spec serverSpec) *served {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	tool := filepath.Join(home, "tools", "blob")
	must(t, os.MkdirAll(tool, 0o755))
	must(t, os.WriteFile(filepath.Join(tool, "tool.js"), []byte(blobTool), 0o644))
	model := newFakeModel(t, spec.kb, spec.refuseAbove)
	providers, _ := json.Marshal(map[string]any{"default": "fake", "providers": []map[string]any{{
		"name": "fake", "kind": "openai", "baseUrl": model.url, "apiKey": "sk-soak", "model": "soak-model", "contextWindow": spec.window,
	}}})
	must(t, os.WriteFile(filepath.Join(home, "providers.json"), providers, 0o600))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "JEAN2_HOME=" + home,
		"JEAN2_LOG=warn", "JEAN2_DEBUG_ADDR=127.0.0.1:0"}
	for _, k := range []string{"JEAN2_BUN", "JEAN2_NODE", "JEAN2_SANDBOX"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if spec.postgres {
		env = append(env, "JEAN2_DATABASE_URL="+pgtest.URL(t))
	}
	s := &served{bin: spec.bin, model: model, logs: &bytes.Buffer{}}
	s.cmd = exec.Command(spec.bin, "serve", "--port", "0")
	s.cmd.Env, s.cmd.Dir = env, root
	stderr, err := s.cmd.StderrPipe()
	must(t, err)
	must(t, s.cmd.Start())
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
		}
	})
	found := make(chan string, 1)
	go s.readLog(stderr, found)
	select {
	case s.base = <-found:
	case <-time.After(2 * time.Minute):
		t.Fatalf("jean2 serve did not listen within two minutes:\n%s", s.logText())
	}
	s.token, err = server.ReadTokenFile(home)
	must(t, err)
	return s
}

// readLog keeps the server's log and finds its addresses in it.
func (s *served) readLog(r io.Reader, found chan<- string) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.logs.WriteString(line + "\n")
		if m := profiling.FindStringSubmatch(line); m != nil {
			s.debug = m[1]
		}
		s.mu.Unlock()
		if m := listening.FindStringSubmatch(line); m != nil && !sent {
			found <- m[1]
			sent = true
		}
	}
}

func (s *served) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

func (s *served) call(t *testing.T, method, path string, body, out any) {
	t.Helper()
	var rd io.Reader // a GET has no body (nil, not "null")
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s\n%s", method, path, resp.StatusCode, b, s.logText())
	}
	if out != nil {
		must(t, json.Unmarshal(b, out))
	}
}

func (s *served) workspace(t *testing.T) string {
	dir := t.TempDir()
	var ws struct{ ID string }
	s.call(t, "POST", "/api/workspaces", map[string]any{"path": dir}, &ws)
	return ws.ID
}

func (s *served) session(t *testing.T, wsID, title string) string {
	var ses struct{ ID string }
	s.call(t, "POST", "/api/workspaces/"+wsID+"/sessions", map[string]any{"title": title}, &ses)
	return ses.ID
}

// turn sends a message and waits until every follower has the turn's turn.finished; it
// returns the time from the request to the last of them.
func (s *served) turn(t *testing.T, sessionID string, n int, followers []*follower) time.Duration {
	t.Helper()
	began := time.Now()
	s.call(t, "POST", "/api/sessions/"+sessionID+"/turns", map[string]any{"text": turnText(n)}, nil)
	for i, f := range followers {
		select {
		case reason := <-f.finished:
			if reason != "done" {
				t.Fatalf("turn %d ended %q on subscriber %d\n%s", n, reason, i, s.logText())
			}
		case err := <-f.failed:
			t.Fatalf("subscriber %d, turn %d: %v", i, n, err)
		case <-time.After(2 * time.Minute):
			t.Fatalf("turn %d: no turn.finished on subscriber %d within two minutes\n%s", n, i, s.logText())
		}
	}
	return time.Since(began)
}

// sample is what the server's process uses at one moment.
type sample struct {
	rssMB, peakMB float64
	fds           int
	goroutines    string // "-" when the binary has no profiling listener
	// From runtime.MemStats (the heap profile's trailer); zero without the listener.
	heapInuseMB         float64
	totalAlloc, mallocs uint64 // since the server started
}

func (s *served) sample(t *testing.T) sample {
	pid := s.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	out := sample{rssMB: statusMB(status, "VmRSS:"), peakMB: statusMB(status, "VmHWM:"), goroutines: "-"}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	must(t, err)
	out.fds = len(fds)
	s.mu.Lock()
	debug := s.debug
	s.mu.Unlock()
	if debug != "" {
		if resp, err := http.Get(debug + "/debug/pprof/goroutine?debug=1"); err == nil {
			line, _ := bufio.NewReader(resp.Body).ReadString('\n')
			resp.Body.Close()
			out.goroutines = strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total "))
		}
		readMemStats(debug, &out)
	}
	return out
}

// readMemStats fills the heap figures from the "# Name = N" lines that close the text
// form of the heap profile (runtime.MemStats, read without a collection).
func readMemStats(debug string, out *sample) {
	resp, err := http.Get(debug + "/debug/pprof/heap?debug=1")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "#" || f[2] != "=" {
			continue
		}
		n, _ := strconv.ParseUint(f[3], 10, 64)
		switch f[1] {
		case "HeapInuse":
			out.heapInuseMB = float64(n) / (1 << 20)
		case "TotalAlloc":
			out.totalAlloc = n
		case "Mallocs":
			out.mallocs = n
		}
	}
}

// statusMB reads a "Key: N kB" line of /proc/PID/status, in MB.
func statusMB(status []byte, key string) float64 {
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// follower is a WebSocket subscriber that checks every event comes once and in order.
type follower struct {
	mu       sync.Mutex
	events   int
	finished chan string // the reason of each turn.finished
	failed   chan error
}

func (s *served) follow(ctx context.Context, t *testing.T, sessionID string) *follower {
	url := "ws" + strings.TrimPrefix(s.base, "http") + "/api/sessions/" + sessionID + "/ws"
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + s.token}}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	f := &follower{finished: make(chan string, 16), failed: make(chan error, 1)}
	go f.read(ctx, c)
	return f
}

func (f *follower) read(ctx context.Context, c *websocket.Conn) {
	var last int64
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				f.failed <- fmt.Errorf("the socket ended: %w", err)
			}
			return
		}
		var ev struct {
			Seq     int64
			Type    string
			Payload json.RawMessage
		}
		if json.Unmarshal(data, &ev) != nil || ev.Seq == 0 {
			continue // hello, acks
		}
		if ev.Seq != last+1 { // the log is read from its start: the first is 1
			f.failed <- fmt.Errorf("event %d after %d: missed or doubled", ev.Seq, last)
			return
		}
		last = ev.Seq
		f.mu.Lock()
		f.events++
		f.mu.Unlock()
		if ev.Type == "turn.finished" {
			var fin struct{ Reason string }
			_ = json.Unmarshal(ev.Payload, &fin)
			f.finished <- fin.Reason
		}
	}
}

func (f *follower) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// saveHeap writes the server's heap profile, taken after a collection, to path.
func (s *served) saveHeap(t *testing.T, path string) {
	s.mu.Lock()
	debug := s.debug
	s.mu.Unlock()
	if debug == "" {
		t.Errorf("-soak.heap: %s has no profiling listener (JEAN2_DEBUG_ADDR)", s.bin)
		return
	}
	resp, err := http.Get(debug + "/debug/pprof/heap?gc=1")
	must(t, err)
	defer resp.Body.Close()
	f, err := os.Create(path)
	must(t, err)
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	must(t, err)
}

// transcriptCheck is what the session's stored messages say of the soak's turns.
type transcriptCheck struct {
	users, answers, compactions int
	problems                    []string // a turn's message missing or stored twice, an answer not complete
}

// checkTranscript reads the session's messages from the API, a page at a time, and checks
// that each of the turns' messages is stored once and every answer is complete (a turn
// whose request was refused and compacted must lose nothing and double nothing).
func (s *served) checkTranscript(t *testing.T, sessionID string, turns int) transcriptCheck {
	var out transcriptCheck
	seen := map[string]int{}
	for after := int64(0); ; {
		var page struct{ Messages []store.Message }
		s.call(t, "GET", fmt.Sprintf("/api/sessions/%s/messages?after=%d&limit=1000", sessionID, after), nil, &page)
		if len(page.Messages) == 0 {
			break
		}
		for _, m := range page.Messages {
			after = m.Seq
			switch {
			case m.Role == store.RoleUser:
				out.users++
				seen[m.Content]++
			case m.Role == store.RoleAssistant:
				out.answers++
				if m.Status != store.StatusComplete {
					out.problems = append(out.problems, fmt.Sprintf("answer %d is %s: %s", m.Seq, m.Status, m.Error))
				}
			case len(m.Parts) > 0 && m.Parts[0].Kind == store.PartCompaction:
				out.compactions++
			}
		}
	}
	for n := 1; n <= turns; n++ {
		if c := seen[turnText(n)]; c != 1 {
			out.problems = append(out.problems, fmt.Sprintf("turn %d's message is stored %d times", n, c))
		}
	}
	return out
}

func turnText(n int) string { return fmt.Sprintf("turn %d: call blob", n) }
