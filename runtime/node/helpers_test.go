package node

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/workerproto"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/tool"
)

// bunPath is the Bun that scripts/setup installs for the tests.
func bunPath(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".deps", "node_modules", ".bin", "bun")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("Bun is missing at %s: run scripts/setup", p)
	}
	return p
}

// runtimes returns real Node and real Bun; both must be there.
func runtimes(t testing.TB) []Runtime {
	t.Helper()
	n, err := Detect(DetectOptions{Preference: KindNode})
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	b, err := Detect(DetectOptions{Preference: KindBun, BunPath: bunPath(t)})
	if err != nil {
		t.Fatalf("bun: %v", err)
	}
	return []Runtime{n, b}
}

func forEachRuntime(t *testing.T, f func(t *testing.T, rt Runtime)) {
	for _, rt := range runtimes(t) {
		t.Run(rt.Kind, func(t *testing.T) { f(t, rt) })
	}
}

// logSink collects log records.
type logSink struct {
	mu      sync.Mutex
	records []slog.Record
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	s.records = append(s.records, r.Clone())
	s.mu.Unlock()
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

func (s *logSink) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.records {
		out = append(out, r.Message)
	}
	return out
}

type testPool struct {
	*worker.Pool
	dir    string // the tool's folder (and workspace)
	bundle string
	logs   *logSink
}

// newPool writes src as the tool module and makes a pool for it.
func newPool(t *testing.T, rt Runtime, src string, opts worker.PoolOptions) *testPool {
	t.Helper()
	dir := t.TempDir()
	bundle := filepath.Join(dir, "tool.mjs")
	if err := os.WriteFile(bundle, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return newPoolFor(t, rt, dir, bundle, opts)
}

func newPoolFor(t *testing.T, rt Runtime, dir, bundle string, opts worker.PoolOptions) *testPool {
	t.Helper()
	logs := &logSink{}
	if opts.Name == "" {
		opts.Name = "test-tool"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(logs)
	}
	opts.Init = workerproto.InitializeParams{
		ProtocolVersion: workerproto.Version, Bundle: bundle, ToolDir: dir,
		Rules: workerproto.Rules{Blocked: policy.BlockedRoots(), Sensitive: policy.SensitivePatterns(), Home: "/home/tester", Languages: tool.Languages()},
	}
	l := NewLauncher(rt, LauncherOptions{CacheDir: t.TempDir(), Dir: dir})
	p := worker.NewPool(l, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("close pool: %v", err)
		}
	})
	return &testPool{Pool: p, dir: dir, bundle: bundle, logs: logs}
}

// record is one message a call sent to the host.
type record struct {
	Method string
	Params json.RawMessage
	Notify bool
}

// fakeHost is a CallHandler that records what arrives and answers with answer.
type fakeHost struct {
	mu     sync.Mutex
	got    []record
	answer func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

func (h *fakeHost) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	h.mu.Lock()
	h.got = append(h.got, record{Method: method, Params: append(json.RawMessage(nil), params...)})
	answer := h.answer
	h.mu.Unlock()
	if answer == nil {
		return nil, nil
	}
	return answer(ctx, method, params)
}

func (h *fakeHost) Notify(method string, params json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, record{Method: method, Params: append(json.RawMessage(nil), params...), Notify: true})
}

func (h *fakeHost) records(method string) []record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []record
	for _, r := range h.got {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// result decodes a tool result.
func result(t *testing.T, raw json.RawMessage) tool.Result {
	t.Helper()
	var r tool.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

func execute(t *testing.T, p *testPool, c worker.Call, h worker.CallHandler) (tool.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c.ID == "" {
		c.ID = "call-" + strings.ReplaceAll(t.Name(), "/", "-")
	}
	if c.Context.WorkspacePath == "" {
		c.Context.WorkspacePath = p.dir
	}
	raw, err := p.Execute(ctx, c, h)
	if err != nil {
		return tool.Result{}, err
	}
	return result(t, raw), nil
}

func mustExecute(t *testing.T, p *testPool, c worker.Call, h worker.CallHandler) tool.Result {
	t.Helper()
	r, err := execute(t, p, c, h)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	return r
}

// A trivial jean2 tool; input {pid:true} makes it answer with its process id.
const echoTool = `
export const definition = {
  name: 'echo',
  description: 'Echoes its input.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  timeout: 5000,
};
export async function execute(input, ctx) {
  return { success: true, result: { echo: input, pid: process.pid, callId: ctx.callId } };
}
`

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
