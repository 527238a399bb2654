package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// Tool folders the tests use: real Node workers.
const (
	// writeNoteTool writes a file through ctx.fs, so the turn's ledger has a change.
	writeNoteTool = `export const definition = {
  name: 'write_note', description: 'Write text to a file in the workspace.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } }, required: ['path', 'text'] },
};
export async function execute(input, ctx) {
  await ctx.fs.writeFile(ctx.resolvePath(input.path), input.text);
  return { success: true, result: { wrote: input.path }, visualization: { type: 'markdown', content: '**wrote** ' + input.path } };
}
`
	// confirmTool asks a person to confirm and returns the answer.
	confirmTool = `export const definition = {
  name: 'confirm_it', description: 'Ask the user to confirm.',
  inputSchema: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
};
export async function execute(input, ctx) {
  const yes = await ctx.ask({ type: 'confirm', question: input.question });
  return { success: true, result: { confirmed: yes } };
}
`
	// permitTool asks for a permission, which a person may grant for the session.
	permitTool = `export const definition = {
  name: 'permit_it', description: 'Ask for a permission.',
  inputSchema: { type: 'object', properties: { risk: { type: 'string' } } },
};
export async function execute(input, ctx) {
  const ok = await ctx.ask({ type: 'permission', question: 'May I deploy?', risk: input.risk || 'medium', resource: 'deploy' });
  return { success: true, result: { granted: ok } };
}
`
)

// fixture is a server on a temporary jean2 home with a workspace folder, a fake OpenAI
// provider and tool folders, served over real loopback HTTP.
type fixture struct {
	t     testing.TB
	root  string
	home  string
	ws    string // the workspace folder
	fake  *providertest.Server
	cfg   Config
	srv   *Server
	ts    *httptest.Server
	tools map[string]string // folder → tool.js, written before start
	token string            // the API token requests carry
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws"),
		tools: map[string]string{"write-note": writeNoteTool, "confirm-it": confirmTool, "permit-it": permitTool}}
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	f.fake = providertest.NewOpenAI(t)
	f.fake.Key = "sk-test-secret-key-0123"
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return f.home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": f.fake.Key, "OPENAI_BASE_URL": f.fake.BaseURL(), "OPENAI_MODEL": "test-model"}
	f.cfg = Config{
		Host: host.Options{
			Layout: layout, RuntimePreference: "node", NodePath: "/usr/bin/node",
			ServerEnv:   []string{"PATH=/usr/bin:/bin", "OPENAI_API_KEY=" + f.fake.Key, "MY_KEY=shown"},
			IdleTimeout: time.Minute, KillGrace: 300 * time.Millisecond,
		},
		Getenv:          func(k string) string { return env[k] },
		ProviderOptions: &provider.Options{Retry: provider.Retry{MaxAttempts: 1}},
		MCPWorkspace:    f.ws,
		Version:         "test",
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if testing.Verbose() {
		f.cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return f
}

// start writes the tool folders and opens the server; both close when the test ends.
func (f *fixture) start() *fixture {
	f.t.Helper()
	for folder, src := range f.tools {
		dir := filepath.Join(f.cfg.Host.Layout.Tools, folder)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	srv, err := Open(context.Background(), f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.srv = srv
	f.ts = httptest.NewServer(srv.Handler())
	f.t.Cleanup(f.stop)
	f.token = srv.Token()
	return f
}

// authHeader is the header that carries the fixture's token.
func (f *fixture) authHeader() http.Header {
	return http.Header{"Authorization": {"Bearer " + f.token}}
}

// withToken is header with the fixture's token added, unless it carries a token or a
// cookie of its own.
func (f *fixture) withToken(header http.Header) http.Header {
	if header.Get("Authorization") != "" || header.Get("Cookie") != "" {
		return header
	}
	out := header.Clone()
	if out == nil {
		out = http.Header{}
	}
	out.Set("Authorization", "Bearer "+f.token)
	return out
}

func (f *fixture) stop() {
	if f.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The server first, so its sockets end and the test server's Close does not wait on them.
	if err := f.srv.Close(ctx); err != nil {
		f.t.Errorf("close server: %v", err)
	}
	f.ts.Close()
	f.srv = nil
}

// request sends a request and returns the status and the body.
func (f *fixture) request(method, path string, body any, header http.Header) (int, []byte) {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			data, err := json.Marshal(body)
			if err != nil {
				f.t.Fatal(err)
			}
			rd = bytes.NewReader(data)
		}
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range f.withToken(header) {
		req.Header[k] = v
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// call sends a request, fails the test unless the status is want, and decodes the body
// into out (when not nil).
func (f *fixture) call(method, path string, body any, want int, out any) []byte {
	f.t.Helper()
	status, data := f.request(method, path, body, nil)
	if status != want {
		f.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			f.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return data
}

// errorCode reads the code of an API error body.
func errorCode(t testing.TB, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not an API error body (code and message): %s", body)
	}
	return e.Error.Code
}

// workspace makes a workspace on the fixture's folder and a session in it.
func (f *fixture) session() (store.Workspace, sessionView) {
	f.t.Helper()
	var ws store.Workspace
	status, data := f.request("GET", "/api/workspaces", nil, nil)
	var list struct{ Workspaces []store.Workspace }
	if status == 200 && json.Unmarshal(data, &list) == nil {
		for _, w := range list.Workspaces {
			if w.Path == f.ws {
				ws = w
			}
		}
	}
	if ws.ID == "" {
		f.call("POST", "/api/workspaces", map[string]any{"path": f.ws}, 201, &ws)
	}
	var ses sessionView
	f.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": "test"}, 201, &ses)
	return ws, ses
}

// wsURL is the WebSocket URL of path.
func (f *fixture) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(f.ts.URL, "http") + path
}

// socket is a WebSocket client of an event log.
type socket struct {
	t      testing.TB
	c      *websocket.Conn
	hello  helloFrame
	frames chan json.RawMessage // every frame after hello, in order
	done   chan struct{}

	mu      sync.Mutex
	lastSeq int64
	closeBy error
}

func (f *fixture) dial(path string, header http.Header) *socket {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, f.wsURL(path), &websocket.DialOptions{HTTPHeader: f.withToken(header)})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		f.t.Fatalf("dial %s: %v (status %d)", path, err, status)
	}
	c.SetReadLimit(64 << 20)
	s := &socket{t: f.t, c: c, frames: make(chan json.RawMessage, 100000), done: make(chan struct{})}
	_, data, err := c.Read(ctx)
	if err != nil {
		f.t.Fatalf("read hello of %s: %v", path, err)
	}
	if err := json.Unmarshal(data, &s.hello); err != nil || s.hello.Type != "hello" {
		f.t.Fatalf("first frame of %s is not hello: %s", path, data)
	}
	go func() {
		defer close(s.done)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				s.mu.Lock()
				s.closeBy = err
				s.mu.Unlock()
				return
			}
			s.frames <- data
		}
	}()
	f.t.Cleanup(s.close)
	return s
}

func (s *socket) close() {
	s.c.Close(websocket.StatusNormalClosure, "")
	<-s.done
}

// send writes a client frame.
func (s *socket) send(v any) {
	s.t.Helper()
	data, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.c.Write(ctx, websocket.MessageText, data); err != nil {
		s.t.Fatal(err)
	}
}

// next returns the next frame, failing the test after a wait.
func (s *socket) next(within time.Duration) json.RawMessage {
	s.t.Helper()
	select {
	case data := <-s.frames:
		var seq struct{ Seq int64 }
		if json.Unmarshal(data, &seq) == nil && seq.Seq > 0 {
			s.mu.Lock()
			if seq.Seq != s.lastSeq+1 && s.lastSeq != 0 {
				s.t.Errorf("event seq %d follows %d: a gap or a duplicate", seq.Seq, s.lastSeq)
			}
			s.lastSeq = seq.Seq
			s.mu.Unlock()
		}
		return data
	case <-s.done:
		s.t.Fatalf("the socket closed: %v", s.closeBy)
	case <-time.After(within):
		s.t.Fatalf("no frame within %v", within)
	}
	return nil
}

// event is a received event.
type event struct {
	SessionID string          `json:"sessionId"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	Ref       string          `json:"ref"`
	Error     *apiError       `json:"error"`
}

// until reads frames until one of type typ comes and returns it with everything before.
func (s *socket) until(typ string, within time.Duration) (event, []event) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	var seen []event
	for {
		var ev event
		data := s.next(time.Until(deadline))
		if err := json.Unmarshal(data, &ev); err != nil {
			s.t.Fatalf("frame %s: %v", data, err)
		}
		if ev.Type == typ {
			return ev, seen
		}
		seen = append(seen, ev)
	}
}

// collect reads frames until one of each of the types has come, in any order.
func (s *socket) collect(within time.Duration, want ...string) map[string]event {
	s.t.Helper()
	deadline := time.Now().Add(within)
	got := map[string]event{}
	for len(got) < len(want) {
		var ev event
		data := s.next(time.Until(deadline))
		mustJSON(s.t, data, &ev)
		for _, w := range want {
			if ev.Type == w {
				if _, dup := got[w]; !dup {
					got[w] = ev
				}
			}
		}
	}
	return got
}

func types(evs []event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}

func mustJSON(t testing.TB, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}
