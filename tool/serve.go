package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
)

// ServeOptions tune ServeContext. The zero value (or nil) serves the host that started the
// process.
type ServeOptions struct {
	// In carries the host's messages and Out this worker's; nil means fd 3 and fd 4, where
	// the host puts the protocol. The process's stdout and stderr are never the protocol:
	// whatever a tool prints there becomes log lines on the host.
	In  io.Reader
	Out io.Writer
	// Logger receives what the worker cannot tell the host (a malformed message, a fact the
	// host refused to store). Default: text on stderr, which the host logs.
	Logger *slog.Logger
	// ShutdownGrace bounds how long ServeContext waits, once it is done, for calls that
	// ignore their cancelled context (default 1s). A process exits anyway when main returns.
	ShutdownGrace time.Duration
}

// Serve runs t as a jean2 worker: call it from the main function of a Go tool folder (a
// folder with tool.go, package main, and go.mod), which the jean2 host builds and starts.
//
//	func main() {
//		t, err := tool.NewTyped(tool.Definition{Name: "word-count", Description: "…"}, run)
//		if err != nil {
//			log.Fatal(err)
//		}
//		if err := tool.Serve(t); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// Each call runs on its own goroutine with a Context whose powers (files, asks, the model,
// session facts, the ledger, progress, logs, workspace paths) are requests to the host,
// which enforces its policy on every one of them exactly as it does for JavaScript tools.
// Serve returns nil once the host has asked the worker to shut down or has gone away, and
// an error when the process was not started by a jean2 host.
func Serve(t Tool) error {
	return ServeContext(context.Background(), t, nil)
}

// ServeContext is Serve with a context, which ends the worker (cancelling its calls) when
// it is done, and options.
func ServeContext(ctx context.Context, t Tool, opts *ServeOptions) error {
	if t == nil {
		return errors.New("tool.Serve: no tool given")
	}
	var o ServeOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = time.Second
	}
	in, out := o.In, o.Out
	if in == nil || out == nil {
		fin, fout, err := protocolFiles()
		if err != nil {
			return err
		}
		if in == nil {
			in = fin
		} else {
			fin.Close()
		}
		if out == nil {
			out = fout
		} else {
			fout.Close()
		}
	}

	s := newServer(t, o.Logger)
	// The connection starts reading at once; handlers wait until s.conn is set.
	ready := make(chan struct{})
	handler := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		<-ready
		return s.Handle(ctx, req)
	})
	s.out = &watchWriter{w: out, seen: make(chan struct{})}
	s.conn = jsonrpc.NewConn(in, s.out, handler, &jsonrpc.Options{Logger: o.Logger})
	close(ready)

	var err error
	select {
	case <-s.conn.Done():
		// The host closed its end: nobody is left to answer to.
		s.cancelAll(&cancelError{reason: "the host went away"})
	case <-s.shutdown:
		// Exit only once the answer is out, or the host would see the pipe close first.
		timer := time.NewTimer(2 * time.Second)
		select {
		case <-s.out.seen:
		case <-s.conn.Done():
		case <-timer.C:
			o.Logger.Warn("jean2 worker: the answer to shutdown was not written within 2s")
		}
		timer.Stop()
	case <-ctx.Done():
		err = context.Cause(ctx)
		s.cancelAll(&cancelError{reason: "the worker is stopping: " + err.Error()})
	}
	s.close(o.ShutdownGrace)
	return err
}

// cancelError is the cause a call's context ends with: the host's reason, and
// errors.Is(err, context.Canceled) holds.
type cancelError struct{ reason string }

func (e *cancelError) Error() string { return e.reason }
func (e *cancelError) Unwrap() error { return context.Canceled }

// server is one worker: the tool, its calls in flight, the connection to the host.
type server struct {
	log      *slog.Logger
	registry *Registry
	def      Definition
	loadErr  error
	conn     *jsonrpc.Conn
	out      *watchWriter
	shutdown chan struct{} // closed when the host asked to shut down

	mu          sync.Mutex
	initialized bool
	stopping    bool
	rules       wireRules
	toolDir     string
	calls       map[string]*hostCall
}

func newServer(t Tool, log *slog.Logger) *server {
	s := &server{log: log, registry: NewRegistry(), calls: map[string]*hostCall{}, shutdown: make(chan struct{})}
	s.def, s.loadErr = register(s.registry, t)
	return s
}

// register adds t to the registry, which checks its definition and compiles its schema; a
// panicking Definition method is a load error like any other.
func register(r *Registry, t Tool) (def Definition, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the tool's Definition method panicked: %v", p)
		}
	}()
	if err := r.Register(t); err != nil {
		return Definition{}, err
	}
	defs := r.List()
	return defs[0], nil
}

// Handle serves the host's requests and notifications.
func (s *server) Handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.IsNotification() {
		if req.Method == methodCancel {
			s.cancel(req.Params)
		}
		return nil, nil
	}
	switch req.Method {
	case methodInitialize:
		return s.initialize(req.Params)
	case methodExecute:
		return s.execute(ctx, req.Params)
	case methodShutdown:
		s.mu.Lock()
		first := !s.stopping
		s.stopping = true
		s.mu.Unlock()
		s.cancelAll(&cancelError{reason: "The worker is shutting down"})
		if first {
			s.out.watch([]byte(`"id":` + string(req.ID) + `,"result":null}`))
			close(s.shutdown)
		}
		return nil, nil
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+req.Method, nil)
}

func (s *server) initialize(params json.RawMessage) (any, error) {
	var p wireInitialize
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, jsonrpc.NewError(codeInvalidParams, "initialize needs params {protocolVersion, bundle, toolDir, rules}: "+err.Error(), nil)
	}
	if p.ProtocolVersion != protocolVersion {
		return nil, jsonrpc.NewError(codeInvalidParams, fmt.Sprintf("protocol version %d is not supported: this worker speaks version %d", p.ProtocolVersion, protocolVersion), nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initialized {
		return nil, jsonrpc.NewError(codeInvalidRequest, "initialize was already called: a worker loads one tool", nil)
	}
	if s.loadErr != nil {
		var data wireLoadError
		if p.ToolDir != "" {
			data.File = filepath.Join(p.ToolDir, "tool.go")
		}
		return nil, jsonrpc.NewError(codeLoadError, s.loadErr.Error(), data)
	}
	s.initialized = true
	s.rules = p.Rules
	s.toolDir = p.ToolDir
	return wireInitializeResult{
		Definition: s.def,
		Shape:      "jean2",
		Runtime:    wireRuntime{Name: "go", Version: runtime.Version()},
	}, nil
}

func (s *server) execute(ctx context.Context, params json.RawMessage) (any, error) {
	var p wireExecute
	if err := json.Unmarshal(params, &p); err != nil || p.CallID == "" {
		msg := "execute needs params {callId, input, context}"
		if err != nil {
			msg += ": " + err.Error()
		}
		return nil, jsonrpc.NewError(codeInvalidParams, msg, nil)
	}
	s.mu.Lock()
	switch {
	case !s.initialized:
		s.mu.Unlock()
		return nil, jsonrpc.NewError(codeInvalidRequest, "execute before initialize: the tool is not loaded", nil)
	case s.stopping:
		// A call that crossed shutdown on the wire was never started: the host may send it
		// to another worker (docs/protocol.md §7).
		s.mu.Unlock()
		return nil, jsonrpc.NewError(codeInternal, "the worker is stopping and did not start this call", wireExiting{WorkerExiting: true, NotStarted: true})
	case s.calls[p.CallID] != nil:
		s.mu.Unlock()
		return nil, jsonrpc.NewError(codeInvalidParams, fmt.Sprintf("call %s is already running on this worker", p.CallID), nil)
	}
	hc := newHostCall(ctx, s, p.CallID, p.Context, s.rules.Home)
	s.calls[p.CallID] = hc
	s.mu.Unlock()

	defer func() {
		s.mu.Lock()
		delete(s.calls, p.CallID)
		s.mu.Unlock()
		hc.cancel(errCallSettled)
	}()
	input := p.Input
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	res := s.registry.Execute(hc.ctx, s.def.Name, input, hc.c)
	hc.settle()
	raw, err := json.Marshal(res)
	if err != nil {
		raw, _ = json.Marshal(Result{Error: "tool result cannot be serialized: " + err.Error()})
	}
	return json.RawMessage(raw), nil
}

var errCallSettled = errors.New("the call has settled")

func (s *server) cancel(params json.RawMessage) {
	var p wireCancel
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	hc := s.calls[p.CallID]
	s.mu.Unlock()
	if hc == nil {
		return
	}
	reason := p.Reason
	if reason == "" {
		reason = "The call was cancelled"
	}
	hc.cancel(&cancelError{reason: reason})
	// What the tool recorded so far reaches the host even if the call never settles and
	// its worker is killed. Not on the read loop: that must not wait.
	go hc.syncLedger()
}

func (s *server) cancelAll(cause error) {
	s.mu.Lock()
	calls := make([]*hostCall, 0, len(s.calls))
	for _, hc := range s.calls {
		calls = append(calls, hc)
	}
	s.mu.Unlock()
	for _, hc := range calls {
		hc.cancel(cause)
	}
}

// close ends the connection, giving calls that ignore their cancelled context grace to
// return; after that they are left behind (the process is about to exit anyway).
func (s *server) close(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		s.conn.Close()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("jean2 worker: calls still running at exit; they ignore their context", "grace", grace)
	}
}

// watchWriter passes the worker's messages through and reports when a given message has
// been written, so the worker exits only after its answer to shutdown is out. The
// connection has no flush of its own. It deliberately does not expose the file's
// syscall.Conn: every write then goes through Write.
type watchWriter struct {
	w      io.Writer
	mu     sync.Mutex
	needle []byte
	seen   chan struct{}
}

func (ww *watchWriter) watch(needle []byte) {
	ww.mu.Lock()
	ww.needle = needle
	ww.mu.Unlock()
}

func (ww *watchWriter) Write(p []byte) (int, error) {
	n, err := ww.w.Write(p)
	ww.mu.Lock()
	if ww.needle != nil && bytes.Contains(p[:n], ww.needle) {
		ww.needle = nil
		close(ww.seen)
	}
	ww.mu.Unlock()
	return n, err
}

func (ww *watchWriter) Close() error {
	if c, ok := ww.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
