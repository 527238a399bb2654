package gotool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/tool"
)

// TestScaffoldBuildsAndRunsAsAWorker is the path of `jean2 tools new NAME --lang go`: the
// scaffold is built with the real toolchain and run by the host's worker pool.
func TestScaffoldBuildsAndRunsAsAWorker(t *testing.T) {
	folder := writeFolder(t, "head-lines", Scaffold("head-lines"))
	var lines []string
	opts := buildOpts(folder, t.TempDir())
	opts.Progress = func(s string) { lines = append(lines, s) }
	bin := mustBuild(t, opts)
	t.Logf("cold build of the scaffold (binary not cached, go build cache warm): %v", bin.Duration)
	if bin.Cached || len(lines) != 2 || !strings.HasPrefix(lines[0], "building head-lines with go") || !strings.HasPrefix(lines[1], "built head-lines in ") {
		t.Errorf("cached=%v progress=%q", bin.Cached, lines)
	}

	p := newPool(t, bin, folder, worker.PoolOptions{})
	info, err := p.Load(context.Background())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if info.Definition.Name != "head-lines" || info.Shape != "jean2" || info.Runtime.Name != "go" || !strings.HasPrefix(info.Runtime.Version, "go1.") {
		t.Errorf("load: %+v", info)
	}
	if info.Definition.Timeout != 10000 || !strings.Contains(string(info.Definition.InputSchema), `"required":["path"]`) {
		t.Errorf("definition: timeout %d, schema %s", info.Definition.Timeout, info.Definition.InputSchema)
	}

	h := &fakeHost{answer: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		var pp workerproto.FSPathParams
		_ = json.Unmarshal(params, &pp)
		if method == workerproto.MethodFSReadFile && pp.Path == "README.md" {
			return workerproto.FSData{Data: base64.StdEncoding.EncodeToString([]byte("one\ntwo\nthree\n")), Encoding: "base64"}, nil
		}
		return nil, jsonrpc.NewError(workerproto.CodeFailed, "ENOENT: no such file or directory, open '"+pp.Path+"'", workerproto.ErrorData{Code: "ENOENT", Path: pp.Path})
	}}
	r := mustExecute(t, p, worker.Call{ID: "call-1", Input: json.RawMessage(`{"path":"README.md","lines":2}`), Context: workerproto.CallContext{WorkspacePath: folder}}, h)
	if !r.Success || string(r.Result) != `{"path":"README.md","head":"one\ntwo"}` {
		t.Errorf("result: %+v (%s)", r, r.Result)
	}
	reads := h.find(workerproto.MethodFSReadFile)
	if len(reads) != 1 || string(reads[0].Params) != `{"callId":"call-1","path":"README.md","encoding":"base64"}` {
		t.Errorf("fs.readFile requests: %+v", reads)
	}
	logs := h.find(workerproto.MethodLog)
	if len(logs) != 1 || string(logs[0].Params) != `{"callId":"call-1","level":"info","message":"read file","data":{"bytes":14,"path":"README.md"}}` {
		t.Errorf("log: %+v", logs)
	}

	r = mustExecute(t, p, worker.Call{ID: "call-2", Input: json.RawMessage(`{"path":"nope.md"}`)}, h)
	if r.Success || r.Error != "ENOENT: no such file or directory, open 'nope.md'" {
		t.Errorf("missing file: %+v", r)
	}
	r = mustExecute(t, p, worker.Call{ID: "call-3", Input: json.RawMessage(`{"lines":2}`)}, h)
	if r.Success || !strings.HasPrefix(r.Error, "invalid arguments for head-lines:") {
		t.Errorf("missing path: %+v", r)
	}

	// The worker answers shutdown and exits by itself: Close does not have to wait out
	// StopTimeout and signal it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d >= 2*time.Second {
		t.Errorf("Close took %v: the worker did not exit after answering shutdown (StopTimeout is 2s)", d)
	}
}

func powersHost(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p struct {
		Path string `json:"path"`
		Key  string `json:"key"`
	}
	_ = json.Unmarshal(params, &p)
	switch method {
	case workerproto.MethodFSReadFile:
		if p.Path == "notes.txt" {
			return workerproto.FSData{Data: "from the host", Encoding: "utf-8"}, nil
		}
		return nil, jsonrpc.NewError(workerproto.CodeFailed, "ENOENT: no such file or directory, open '/ws/"+p.Path+"'", workerproto.ErrorData{Code: "ENOENT", Path: "/ws/" + p.Path})
	case workerproto.MethodFSReadDir:
		return []map[string]any{{"name": "notes.txt", "isFile": true, "isDirectory": false}}, nil
	case workerproto.MethodFSExists:
		return true, nil
	case workerproto.MethodFSStat:
		return workerproto.FSStat{Size: 9, IsFile: true}, nil
	case workerproto.MethodAsk:
		return true, nil
	case workerproto.MethodLLMText:
		return "model says hi", nil
	case workerproto.MethodLLMStructured:
		return map[string]any{"ok": true}, nil
	case workerproto.MethodSessionGet:
		if p.Key == "color" {
			return "blue", nil
		}
		return nil, nil
	case workerproto.MethodWorkspaceAddPath:
		return workerproto.WorkspaceResult{AllowedPaths: []string{"/data"}}, nil
	}
	return nil, nil
}

// TestEveryContextPowerThroughARealWorker runs a compiled Go tool that uses every power of
// its context, each answered by the test's CallHandler as the host would.
func TestEveryContextPowerThroughARealWorker(t *testing.T) {
	bin := powersBinary(t)
	folder, _ := filepath.Abs("testdata/powers")
	p := newPool(t, bin, folder, worker.PoolOptions{})
	h := &fakeHost{answer: powersHost}
	r := mustExecute(t, p, worker.Call{
		ID: "call-powers", Input: json.RawMessage(`{"mode":"powers"}`),
		Context: workerproto.CallContext{SessionID: "s1", WorkspacePath: "/ws", WorkspaceID: "w1", TempDir: "/tmp/s1", Env: map[string]string{"API_KEY": "k-1"}},
	}, h)
	if !r.Success {
		t.Fatalf("call failed: %s", r.Error)
	}
	var seen map[string]any
	if err := json.Unmarshal(r.Result, &seen); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"read": "from the host", "entries": 1.0, "size": 9.0,
		"missingCode": "ENOENT", "missing": "ENOENT: no such file or directory, open '/ws/missing.txt'",
		"ask": true, "text": "model says hi", "structured": map[string]any{"ok": true},
		"color": "blue", "colorFound": true,
		"env": "k-1", "envHasHome": false, "processEnv": "",
		"allowed": []any{"/data"},
		"ids":     []any{"call-powers", "s1", "w1", "/ws", "/tmp/s1", "/home/tester", "powers"},
	}
	for k, v := range want {
		if !reflect.DeepEqual(seen[k], v) {
			t.Errorf("%s = %#v, want %#v", k, seen[k], v)
		}
	}

	var methods []string
	for _, m := range h.messages() {
		methods = append(methods, m.Method)
		var cp struct {
			CallID string `json:"callId"`
		}
		if err := json.Unmarshal(m.Params, &cp); err != nil || cp.CallID != "call-powers" {
			t.Errorf("%s arrived with callId %q", m.Method, cp.CallID)
		}
	}
	wantMethods := []string{
		"fs.readFile", "fs.writeFile", "fs.appendFile", "fs.readDir", "fs.exists", "fs.stat", "fs.mkdir", "fs.rename", "fs.rm", "fs.readFile",
		"ask", "llm.generateText", "llm.generateStructured",
		"session.set", "session.get", // the local fact goes first
		"session.set", "ledger.record", "progress", "log", "workspace.addPath",
	}
	if !reflect.DeepEqual(methods, wantMethods) {
		t.Errorf("the host got\n %v\nwant\n %v", methods, wantMethods)
	}
	appended := h.find(workerproto.MethodFSAppendFile)
	if len(appended) == 1 && string(appended[0].Params) != `{"callId":"call-powers","path":"out.txt","data":"/wE=","encoding":"base64"}` {
		t.Errorf("binary append: %s", appended[0].Params)
	}
	ledger := h.find(workerproto.MethodLedgerRecord)
	if len(ledger) == 1 && string(ledger[0].Params) != `{"callId":"call-powers","path":"external.db","tool":"powers","disk":true,"ok":true}` {
		t.Errorf("ledger: %s", ledger[0].Params)
	}
	logs := h.find(workerproto.MethodLog)
	if len(logs) == 1 && string(logs[0].Params) != `{"callId":"call-powers","level":"info","message":"working","data":{"g":{"ok":true},"step":3}}` {
		t.Errorf("log: %s", logs[0].Params)
	}
}

// TestToolOutputIsNotTheProtocol: what a Go tool prints, even a JSON-RPC message, is log
// output and never reaches the protocol.
func TestToolOutputIsNotTheProtocol(t *testing.T) {
	bin := powersBinary(t)
	folder, _ := filepath.Abs("testdata/powers")
	logs := &logSink{}
	p := newPool(t, bin, folder, worker.PoolOptions{Logger: slog.New(logs)})
	r := mustExecute(t, p, worker.Call{ID: "c1", Input: json.RawMessage(`{"mode":"stdout"}`)}, nil)
	if !r.Success || string(r.Result) != `"printed"` {
		t.Errorf("result: %+v", r)
	}
	want := map[string]bool{`{"jsonrpc":"2.0","id":1,"result":"not the protocol"}`: false, "a line on stderr": false}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range logs.messages() {
			if _, ok := want[m]; ok {
				want[m] = true
			}
		}
		if want[`{"jsonrpc":"2.0","id":1,"result":"not the protocol"}`] && want["a line on stderr"] {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the tool's output did not become log lines: %v (logged: %q)", want, logs.messages())
}

// logSink collects the messages a pool logs.
type logSink struct {
	mu   sync.Mutex
	msgs []string
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, r.Message)
	s.mu.Unlock()
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

func (s *logSink) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

func pid(t *testing.T, p *worker.Pool, id string) float64 {
	t.Helper()
	r := mustExecute(t, p, worker.Call{ID: id, Input: json.RawMessage(`{"mode":"pid"}`)}, nil)
	var n float64
	if err := json.Unmarshal(r.Result, &n); err != nil || n <= 0 {
		t.Fatalf("pid: %+v", r)
	}
	return n
}

func TestPanicFailsOnlyThatCall(t *testing.T) {
	bin := powersBinary(t)
	folder, _ := filepath.Abs("testdata/powers")
	p := newPool(t, bin, folder, worker.PoolOptions{MaxWorkers: 1})
	before := pid(t, p, "pid-1")

	var wg sync.WaitGroup
	var slow struct {
		r   tool.Result
		err error
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		slow.r, slow.err = execute(t, p, worker.Call{ID: "slow", Input: json.RawMessage(`{"mode":"sleep","sleep":300}`)}, nil)
	}()
	time.Sleep(50 * time.Millisecond) // the slow call is running when the other panics
	r := mustExecute(t, p, worker.Call{ID: "boom", Input: json.RawMessage(`{"mode":"panic"}`)}, nil)
	if r.Success || !strings.HasPrefix(r.Error, "tool powers panicked: boom") {
		t.Errorf("panicking call: %+v", r)
	}
	wg.Wait()
	if slow.err != nil || !slow.r.Success || string(slow.r.Result) != `"slept"` {
		t.Errorf("the call beside it: %+v %v", slow.r, slow.err)
	}
	if after := pid(t, p, "pid-2"); after != before {
		t.Errorf("the worker was replaced (%v → %v); a panic in a call must not take it down", before, after)
	}
	if s := p.Stats(); s.Started != 1 {
		t.Errorf("workers started: %d", s.Started)
	}
}

func TestCancelReachesTheGoToolsContext(t *testing.T) {
	bin := powersBinary(t)
	folder, _ := filepath.Abs("testdata/powers")
	p := newPool(t, bin, folder, worker.PoolOptions{MaxWorkers: 1, KillGrace: 5 * time.Second})
	before := pid(t, p, "pid-1")

	h := &fakeHost{}
	start := time.Now()
	_, err := execute(t, p, worker.Call{ID: "waits", Input: json.RawMessage(`{"mode":"wait"}`), Timeout: 200 * time.Millisecond}, h)
	var te *worker.TimeoutError
	if !errors.As(err, &te) || err.Error() != "Tool execution timed out after 200ms" {
		t.Fatalf("error %v, want the timeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the call settled after %v; the tool honours cancel, so well within the grace", d)
	}
	logs := h.find(workerproto.MethodLog)
	if len(logs) != 1 || !strings.Contains(string(logs[0].Params), `"message":"saw cancel: The call timed out"`) {
		t.Errorf("the tool's ctx did not see the cancel: %+v", logs)
	}

	// Stop (the caller's context) reaches the tool too.
	h = &fakeHost{}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	_, err = p.Execute(ctx, worker.Call{ID: "stopped", Input: json.RawMessage(`{"mode":"wait"}`)}, h)
	var se *worker.StoppedError
	if !errors.As(err, &se) {
		t.Fatalf("error %v, want StoppedError", err)
	}
	logs = h.find(workerproto.MethodLog)
	if len(logs) != 1 || !strings.Contains(string(logs[0].Params), `"message":"saw cancel: The call was stopped"`) {
		t.Errorf("the tool's ctx did not see the stop: %+v", logs)
	}
	if after := pid(t, p, "pid-2"); after != before {
		t.Errorf("the worker was replaced (%v → %v) although its calls settled", before, after)
	}
}

func TestAToolThatIgnoresCancelIsKilledAfterTheGrace(t *testing.T) {
	bin := powersBinary(t)
	folder, _ := filepath.Abs("testdata/powers")
	p := newPool(t, bin, folder, worker.PoolOptions{MaxWorkers: 1, KillGrace: 300 * time.Millisecond})
	before := pid(t, p, "pid-1")

	start := time.Now()
	_, err := execute(t, p, worker.Call{ID: "stubborn", Input: json.RawMessage(`{"mode":"ignore"}`), Timeout: 200 * time.Millisecond}, nil)
	if err == nil || err.Error() != "Tool execution timed out after 200ms" {
		t.Fatalf("error %v, want exactly the timeout text", err)
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 5*time.Second {
		t.Errorf("settled after %v; want the timeout plus the grace", d)
	}
	after := pid(t, p, "pid-2")
	if after == before {
		t.Error("the worker that ignored cancel is still serving calls")
	}
	if s := p.Stats(); s.Started != 2 {
		t.Errorf("workers started: %d, want 2 (the killed one and its replacement)", s.Started)
	}
}

// BenchmarkGoWorkerCall is one trivial call through the pool to a running Go worker.
func BenchmarkGoWorkerCall(b *testing.B) {
	bin := powersBinary(b)
	folder, _ := filepath.Abs("testdata/powers")
	p := worker.NewPool(NewLauncher(bin, nil, folder), worker.PoolOptions{Name: "powers", MaxWorkers: 1})
	defer p.Close(context.Background())
	ctx := context.Background()
	if _, err := p.Load(ctx); err != nil {
		b.Fatal(err)
	}
	call := worker.Call{Input: json.RawMessage(`{"mode":"pid"}`)}
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Execute(ctx, call, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoWorkerStart starts a Go worker and loads the tool (initialize answered).
func BenchmarkGoWorkerStart(b *testing.B) {
	bin := powersBinary(b)
	folder, _ := filepath.Abs("testdata/powers")
	ctx := context.Background()
	for b.Loop() {
		p := worker.NewPool(NewLauncher(bin, nil, folder), worker.PoolOptions{Name: "powers", MaxWorkers: 1})
		if _, err := p.Load(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		p.Close(ctx)
		b.StartTimer()
	}
}
