package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
	"github.com/jean2/jean2/tool"
)

// The test binary doubles as a worker written in Go (the protocol from the other side),
// which lets these tests provoke what a JavaScript tool cannot: protocol violations, a
// worker that ignores shutdown, requests for calls that do not exist.
func TestMain(m *testing.M) {
	if mode := os.Getenv("HELPER_MODE"); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

func runHelper(mode string) int {
	started := time.Now()
	if f := os.Getenv("HELPER_STARTED_FILE"); f != "" {
		_ = os.WriteFile(f, nil, 0o644)
	}
	in := os.NewFile(3, "from-host")
	out := os.NewFile(4, "to-host")
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	var conn *jsonrpc.Conn
	// lingers makes the helper outlive the end of its input, as a worker that ignores its
	// host would: the stubborn one always, any once it has closed its protocol output.
	var lingers atomic.Bool
	lingers.Store(mode == "stubborn")
	h := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case workerproto.MethodInitialize:
			if mode == "load-error" {
				return nil, jsonrpc.NewError(workerproto.CodeLoadError, "Error: bad module", workerproto.LoadErrorData{File: "/t/tool.ts", Line: 7, Column: 3, Stack: "Error: bad module\n    at /t/tool.ts:7:3"})
			}
			return workerproto.InitializeResult{
				Definition: tool.Definition{Name: "helper", Description: strings.Join(os.Environ(), ","), InputSchema: json.RawMessage(`{"type":"object"}`)},
				Shape:      "jean2", Runtime: workerproto.RuntimeInfo{Name: "go", Version: "test"},
			}, nil
		case workerproto.MethodShutdown:
			if mode == "stubborn" {
				<-make(chan struct{})
			}
			go func() { time.Sleep(10 * time.Millisecond); os.Exit(0) }()
			return nil, nil
		case workerproto.MethodExecute:
			var p workerproto.ExecuteParams
			if err := json.Unmarshal(req.Params, &p); err != nil {
				return nil, err
			}
			var in struct {
				Action string `json:"action"`
				MS     int    `json:"ms"`
			}
			json.Unmarshal(p.Input, &in)
			switch in.Action {
			case "unknown-call":
				err := conn.Call(ctx, workerproto.MethodFSExists, workerproto.FSPathParams{CallID: "no-such-call", Path: "x"}, nil)
				return map[string]any{"success": false, "error": err.Error()}, nil
			case "notify":
				for i := range 20 {
					conn.Notify(ctx, workerproto.MethodProgress, workerproto.ProgressParams{CallID: p.CallID, Progress: tool.Progress{Current: float64(i)}})
				}
				return map[string]any{"success": true}, nil
			case "huge-line":
				out.Write([]byte(`{"jsonrpc":"2.0","method":"log","params":{"message":"` + strings.Repeat("x", 4096) + "\"}}\n"))
				<-make(chan struct{})
			case "close-out":
				lingers.Store(true)
				out.Close()
				<-make(chan struct{})
			case "ask":
				var answer json.RawMessage
				if err := conn.Call(ctx, workerproto.MethodAsk, workerproto.AskParams{CallID: p.CallID, Ask: tool.Ask{Type: "confirm", Question: "ok?"}}, &answer); err != nil {
					return nil, err
				}
				time.Sleep(time.Duration(in.MS) * time.Millisecond)
				return map[string]any{"success": true, "result": answer}, nil
			case "sleep":
				time.Sleep(time.Duration(in.MS) * time.Millisecond)
			case "stderr-exit":
				fmt.Fprintln(os.Stderr, "first words")
				fmt.Fprintln(os.Stderr, "last words")
				os.Exit(9)
			}
			return map[string]any{"success": true, "result": map[string]any{"callId": p.CallID, "pid": os.Getpid(), "startedNs": started.UnixNano()}}, nil
		}
		return nil, nil
	})
	conn = jsonrpc.NewConn(in, out, h, nil)
	<-conn.Done()
	for lingers.Load() {
		time.Sleep(time.Hour)
	}
	return 0
}

func helperPool(t *testing.T, mode string, opts PoolOptions) *Pool {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Name == "" {
		opts.Name = "helper"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := NewPool(Launcher{Kind: "go", Path: exe, Env: []string{"HELPER_MODE=" + mode, "ONLY_THIS=1"}}, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

func run(t *testing.T, p *Pool, id, input string, timeout time.Duration, h CallHandler) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.Execute(ctx, Call{ID: id, Input: json.RawMessage(input), Timeout: timeout}, h)
}

func TestEnvIsExactlyTheLaunchers(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{})
	info, err := p.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Definition.Description != "HELPER_MODE=ok,ONLY_THIS=1" {
		t.Fatalf("worker environment: %q", info.Definition.Description)
	}
}

func TestLoadErrorFromInitialize(t *testing.T) {
	p := helperPool(t, "load-error", PoolOptions{Name: "broken"})
	_, err := p.Load(context.Background())
	var le *LoadError
	if !errors.As(err, &le) || le.File != "/t/tool.ts" || le.Line != 7 || le.Column != 3 || !strings.Contains(le.Stack, "at /t/tool.ts:7:3") {
		t.Fatalf("got %v", err)
	}
	if err.Error() != "tool broken failed to load at /t/tool.ts:7:3: Error: bad module" {
		t.Fatalf("Error() = %q", err.Error())
	}
	waitUntil(t, func() bool { s := p.Stats(); return s.Workers == 0 && s.Starting == 0 })
}

func TestUnknownCallID(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{})
	raw, err := run(t, p, "real", `{"action":"unknown-call"}`, 0, CallHandlerFunc(func(context.Context, string, json.RawMessage) (any, error) {
		t.Error("a request for an unknown call reached a handler")
		return nil, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `fs.exists: call \"no-such-call\" is not running on this worker`) {
		t.Fatalf("got %s", raw)
	}
}

// notifier records notifications apart from requests.
type notifier struct {
	mu       sync.Mutex
	notified []string
}

func (n *notifier) Handle(context.Context, string, json.RawMessage) (any, error) { return nil, nil }
func (n *notifier) Notify(method string, params json.RawMessage) {
	n.mu.Lock()
	n.notified = append(n.notified, string(params))
	n.mu.Unlock()
}

// Notifications of a call are delivered before its result, in order.
func TestNotificationsBeforeResult(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{})
	n := &notifier{}
	if _, err := run(t, p, "n1", `{"action":"notify"}`, 0, n); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.notified) != 20 {
		t.Fatalf("%d notifications had arrived when the result did", len(n.notified))
	}
	for i, s := range n.notified {
		if !strings.Contains(s, fmt.Sprintf(`"current":%d`, i)) && !(i == 0 && !strings.Contains(s, "current")) {
			t.Fatalf("notification %d is %s", i, s)
		}
	}
}

func TestProtocolViolationKillsWorker(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{MaxLineSize: 1024})
	_, err := run(t, p, "huge", `{"action":"huge-line"}`, 0, nil)
	var ee *ExitError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "broke the protocol") || !strings.Contains(err.Error(), "1024-byte limit") {
		t.Fatalf("got %v", err)
	}
	if _, err := run(t, p, "after", `{}`, 0, nil); err != nil {
		t.Fatalf("next call: %v", err)
	}
}

func TestClosedProtocolPipeKillsWorker(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{KillGrace: 200 * time.Millisecond})
	_, err := run(t, p, "closer", `{"action":"close-out"}`, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "closed its protocol pipe without exiting") {
		t.Fatalf("got %v", err)
	}
}

func TestExitErrorQuotesStderr(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{})
	_, err := run(t, p, "dies", `{"action":"stderr-exit"}`, 0, nil)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 9 || strings.Join(ee.Stderr, "|") != "first words|last words" {
		t.Fatalf("got %#v", err)
	}
}

// The launcher's ExitNote joins the exit error's noted lines, asked with the worker's pid
// before Exited.
func TestExitNoteJoinsTheExitError(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{})
	var asked, exited atomic.Int64
	p.launcher.ExitNote = func(pid int) string {
		asked.Store(int64(pid))
		if exited.Load() != 0 {
			return "asked after Exited"
		}
		return "the host's note"
	}
	p.launcher.Exited = func(pid int) { exited.Store(int64(pid)) }
	_, err := run(t, p, "dies", `{"action":"stderr-exit"}`, 0, nil)
	var ee *ExitError
	if !errors.As(err, &ee) || len(ee.Noted) == 0 || ee.Noted[len(ee.Noted)-1] != "the host's note" || asked.Load() != int64(ee.PID) {
		t.Fatalf("got %#v (asked for %d)", err, asked.Load())
	}
}

func TestDuplicateCallID(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{})
	done := make(chan error, 1)
	go func() {
		_, err := run(t, p, "same", `{"action":"sleep","ms":500}`, 0, nil)
		done <- err
	}()
	waitUntil(t, func() bool { return p.Stats().InFlight == 1 })
	_, err := run(t, p, "same", `{}`, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "call same is already running") {
		t.Fatalf("got %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// An empty id gets a generated one.
	raw, err := run(t, p, "", `{}`, 0, nil)
	if err != nil || !strings.Contains(string(raw), `"callId":"call-`) {
		t.Fatalf("%s %v", raw, err)
	}
}

// The clock pauses during asks: a 300ms budget survives a 600ms answer.
func TestClockPausesForAsk(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{KillGrace: 100 * time.Millisecond})
	slowPerson := CallHandlerFunc(func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
		time.Sleep(600 * time.Millisecond)
		return true, nil
	})
	if _, err := run(t, p, "asks", `{"action":"ask","ms":100}`, 300*time.Millisecond, slowPerson); err != nil {
		t.Fatalf("got %v", err)
	}
	// After the answer the clock runs again: 100ms spent before + 400ms after > 300ms.
	_, err := run(t, p, "asks-long", `{"action":"ask","ms":400}`, 300*time.Millisecond, slowPerson)
	var te *TimeoutError
	if !errors.As(err, &te) || err.Error() != "Tool execution timed out after 300ms" {
		t.Fatalf("got %v", err)
	}
}

func TestCallClock(t *testing.T) {
	c := &call{}
	c.startClock(100 * time.Millisecond)
	c.pauseClock()
	c.pauseClock() // two asks at once
	time.Sleep(200 * time.Millisecond)
	c.resumeClock()
	select {
	case <-c.halt:
		t.Fatal("expired while one ask still waited")
	case <-time.After(150 * time.Millisecond):
	}
	c.resumeClock()
	select {
	case <-c.halt:
	case <-time.After(2 * time.Second):
		t.Fatal("did not expire after both asks were answered")
	}
	c.stopClock()
}

// A worker that ignores shutdown and SIGTERM is killed, and Close still returns.
func TestCloseStopsStubbornWorker(t *testing.T) {
	p := helperPool(t, "stubborn", PoolOptions{StopTimeout: 200 * time.Millisecond})
	raw, err := run(t, p, "x", `{}`, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result struct{ PID int } `json:"result"`
	}
	json.Unmarshal(raw, &r)
	start := time.Now()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 400*time.Millisecond || took > 10*time.Second {
		t.Fatalf("Close took %v; it should take the shutdown and SIGTERM steps, then kill", took)
	}
	if syscall.Kill(r.Result.PID, 0) == nil {
		t.Fatalf("worker %d survived Close", r.Result.PID)
	}
}

func TestOutputLogCutsAndCaps(t *testing.T) {
	sink := &recordSink{}
	o := newOutputLog(slog.New(sink), slog.LevelInfo, 10, 3)
	pr, pw, _ := os.Pipe()
	done := make(chan struct{})
	go func() { o.run(pr); close(done) }()
	fmt.Fprintf(pw, "%s\n", strings.Repeat("y", 3*maxOutputLine))
	for i := range 1000 {
		fmt.Fprintf(pw, "line %d\n", i)
	}
	fmt.Fprint(pw, "no newline at the end")
	pw.Close()
	<-done
	msgs := sink.messages()
	if len(msgs) > 30 || len(msgs) < 5 {
		t.Fatalf("%d messages logged for 1002 lines at 10/s (burst 20)", len(msgs))
	}
	if !strings.HasSuffix(msgs[0], " …(line cut)") || len(msgs[0]) > maxOutputLine+20 {
		t.Fatalf("long line logged as %d bytes", len(msgs[0]))
	}
	if last := msgs[len(msgs)-1]; last != "worker output dropped: too many lines" {
		t.Fatalf("last message %q", last)
	}
	if got := strings.Join(o.lastLines(), "|"); got != "line 998|line 999|no newline at the end" {
		t.Fatalf("tail %q", got)
	}
}

type recordSink struct {
	mu   sync.Mutex
	msgs []string
}

func (s *recordSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *recordSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, r.Message)
	s.mu.Unlock()
	return nil
}
func (s *recordSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *recordSink) WithGroup(string) slog.Handler      { return s }
func (s *recordSink) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stoppingHandler stops its own call from inside one of the call's requests, as the host
// does when a call goes past a limit.
type stoppingHandler struct {
	stop   Stopper
	cause  error
	gotCtx chan error
}

func (h *stoppingHandler) BindStop(s Stopper) { h.stop = s }

func (h *stoppingHandler) Handle(ctx context.Context, method string, _ json.RawMessage) (any, error) {
	h.stop.Stop(h.cause)
	<-ctx.Done() // the request being served ends with the call
	h.gotCtx <- context.Cause(ctx)
	return nil, context.Cause(ctx)
}

func TestStopBinderStopsTheCall(t *testing.T) {
	p := helperPool(t, "ok", PoolOptions{KillGrace: 200 * time.Millisecond})
	h := &stoppingHandler{cause: errors.New("the call went past a limit"), gotCtx: make(chan error, 1)}
	_, err := run(t, p, "limited", `{"action":"ask","ms":0}`, 10*time.Second, h)
	var se *StoppedError
	if !errors.As(err, &se) || !errors.Is(err, h.cause) {
		t.Fatalf("got %v, want a StoppedError with the handler's cause", err)
	}
	if got := <-h.gotCtx; !errors.Is(got, h.cause) {
		t.Fatalf("the request's context ended with %v", got)
	}
	if _, err := run(t, p, "after", `{}`, 0, nil); err != nil {
		t.Fatalf("next call: %v", err)
	}
}
