package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
)

// Launcher describes how to start a worker process. The pool adds the protocol pipes (the
// child's fd 3 and fd 4) and reads the child's stdout and stderr itself.
type Launcher struct {
	Kind string   // runtime name for logs: node, bun, go
	Path string   // executable
	Args []string // arguments after the executable
	// Env is the child's whole environment. It is never inherited: nil means an empty one.
	Env []string
	Dir string // working directory; "" means the host's
	// Prepare, when set, runs before every start (the Node launcher writes its worker
	// script there); an error fails the start.
	Prepare func() error
	// Exited, when set, is called with a worker's pid once its process has been reaped and
	// whatever it started in its group has been killed (the sandbox removes the worker's
	// cgroup there).
	Exited func(pid int)
	// ExitNote, when set, is asked once a worker's process has been reaped, before Exited,
	// for what the host knows of why it ended (the sandbox: its memory cgroup's limit killed
	// it); a non-empty answer joins the exit error's noted lines.
	ExitNote func(pid int) string
	// Configure, when set, adjusts the command before every start (the sandbox starts its
	// launcher in a pid namespace of its own there).
	Configure func(cmd *exec.Cmd)
}

// worker is one running worker process.
type worker struct {
	pool *Pool
	pid  int
	cmd  *exec.Cmd
	conn *jsonrpc.Conn
	log  *slog.Logger

	stdout, stderr *outputLog
	outputs        sync.WaitGroup
	outR, errR     *os.File

	// Guarded by pool.mu.
	load      int
	startSum  int64     // sum of the dispatch times (since pool.epoch) of the calls in flight
	took      int64     // moving average of its calls' durations (ns)
	slowSince time.Time // since when its calls in flight have been slow (see saturated)
	cpuSince  time.Duration
	cpuKnown  bool // cpuSince is the worker's CPU time at slowSince
	lastUsed  time.Time
	retired   bool                    // no longer takes calls: dying, stopping or dead
	recycled  bool                    // retired for having loaded MaxModules modules; stops when idle
	mods      map[*Module]*moduleLoad // the modules it has, or is loading
	modCount  int                     // modules it has loaded in its life

	mu         sync.Mutex
	killReason error // why the host killed it, when it did
	stopping   bool  // the host asked it to shut down
	reaped     bool  // the process has been waited for; its pid is no longer its own

	exited  chan struct{} // closed once the process is gone and exitErr is set
	exitErr error
}

// spawn starts a worker process, or takes the one Prestart started, and initializes it with
// module m.
func (p *Pool) spawn(ctx context.Context, m *Module) (*worker, workerproto.InitializeResult, error) {
	if w := p.takeSpare(ctx); w != nil {
		w.lastUsed = time.Now()
		w.log.Debug("initializing the worker started ahead")
		return p.initialize(ctx, w, m)
	}
	w, err := p.launch()
	if err != nil {
		return nil, workerproto.InitializeResult{}, err
	}
	return p.initialize(ctx, w, m)
}

// launch starts a worker process and connects to it; nothing of the tool runs in it until
// initialize (the worker script loads the tool's module then).
func (p *Pool) launch() (*worker, error) {
	l := p.launcher
	if l.Path == "" {
		return nil, fmt.Errorf("tool %s: no worker executable configured", p.opts.Name)
	}
	if l.Prepare != nil {
		if err := l.Prepare(); err != nil {
			return nil, fmt.Errorf("tool %s: prepare %s worker: %w", p.opts.Name, l.Kind, err)
		}
	}
	var files []*os.File // every pipe end, closed on failure
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	toWorkerR, toWorkerW, err1 := pipe()
	fromWorkerR, fromWorkerW, err2 := pipe()
	outR, outW, err3 := pipe()
	errR, errW, err4 := pipe()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		closeAll()
		return nil, fmt.Errorf("tool %s: worker pipes: %w", p.opts.Name, err)
	}

	cmd := exec.Command(l.Path, l.Args...)
	cmd.Env = l.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would inherit the host's environment
	}
	cmd.Dir = l.Dir
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.ExtraFiles = []*os.File{toWorkerR, fromWorkerW} // fd 3 and fd 4
	setProcessGroup(cmd)
	if l.Configure != nil {
		l.Configure(cmd)
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("tool %s: start %s worker %s: %w", p.opts.Name, l.Kind, l.Path, err)
	}
	// The child has its copies; the host keeps only its own ends.
	for _, f := range []*os.File{toWorkerR, fromWorkerW, outW, errW} {
		_ = f.Close()
	}

	pid := cmd.Process.Pid
	log := p.log.With("worker_pid", pid)
	w := &worker{
		pool: p, pid: pid, cmd: cmd, log: log,
		stdout:   newOutputLog(log.With("stream", "stdout"), slog.LevelInfo, p.opts.OutputLinesPerSecond, 0),
		stderr:   newOutputLog(log.With("stream", "stderr"), slog.LevelWarn, p.opts.OutputLinesPerSecond, stderrTail),
		outR:     outR,
		errR:     errR,
		exited:   make(chan struct{}),
		lastUsed: time.Now(),
		mods:     map[*Module]*moduleLoad{},
	}
	w.stderr.note = p.opts.NoteStderr
	w.conn = jsonrpc.NewConn(fromWorkerR, toWorkerW, w, &jsonrpc.Options{
		MaxLineSize: p.opts.MaxLineSize, MaxResponseSize: p.opts.MaxResponseSize, Logger: log, AnswerPoll: max(p.opts.AnswerPoll, 0),
	})
	w.outputs.Add(2)
	go func() { defer w.outputs.Done(); w.stdout.run(outR) }()
	go func() { defer w.outputs.Done(); w.stderr.run(errR) }()
	p.wg.Add(1)
	go func() { defer p.wg.Done(); w.monitor() }()
	return w, nil
}

// initialize has a launched worker load module m; on failure the worker is killed.
func (p *Pool) initialize(ctx context.Context, w *worker, m *Module) (*worker, workerproto.InitializeResult, error) {
	var info workerproto.InitializeResult
	ictx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	err := w.conn.Call(ictx, workerproto.MethodInitialize, m.init, &info)
	if err == nil {
		w.log.Debug("worker ready", "runtime", info.Runtime.Name, "version", info.Runtime.Version)
		return w, info, nil
	}
	// Failed: take the process down and explain why.
	var rpcErr *jsonrpc.Error
	var cause error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code == workerproto.CodeLoadError:
		var d workerproto.LoadErrorData
		rpcErr.DecodeData(&d)
		cause = &LoadError{Tool: p.opts.Name, Message: rpcErr.Message, File: d.File, Line: d.Line, Column: d.Column, Stack: d.Stack}
	case errors.As(err, &rpcErr):
		cause = fmt.Errorf("tool %s: initialize: %w", p.opts.Name, rpcErr)
	case errors.Is(err, jsonrpc.ErrClosed):
		// The process died or broke the protocol; its exit says more.
		<-w.exited
		cause = fmt.Errorf("tool %s: worker failed during initialize: %w", p.opts.Name, w.exitErr)
	case ctx.Err() != nil:
		cause = fmt.Errorf("tool %s: start worker: %w", p.opts.Name, context.Cause(ctx))
	default:
		cause = fmt.Errorf("tool %s: worker did not answer initialize within %v: %w", p.opts.Name, p.opts.StartTimeout, err)
	}
	w.kill(cause)
	<-w.exited
	return nil, info, cause
}

// Handle serves the worker's requests and notifications by routing each to the handler of
// the call named by params.callId.
func (w *worker) Handle(_ context.Context, req *jsonrpc.Request) (any, error) {
	id := callIDOf(req.Params)
	c := w.pool.lookup(id, w)
	if c == nil {
		if req.IsNotification() {
			if req.Method == workerproto.MethodLog {
				w.logOrphan(req.Params)
			} else {
				w.log.Debug("dropping notification of a call that is not running", "method", req.Method, "call", id)
			}
			return nil, nil
		}
		return nil, jsonrpc.NewError(workerproto.CodeUnknownCall,
			fmt.Sprintf("%s: call %q is not running on this worker (it finished, or never started)", req.Method, id), nil)
	}
	if req.IsNotification() {
		if n, ok := c.handler.(Notifier); ok {
			n.Notify(req.Method, req.Params)
		} else {
			_, _ = c.handler.Handle(c.handlerContext(), req.Method, req.Params)
		}
		return nil, nil
	}
	if waitsOnPerson(req.Method) {
		c.pauseClock()
		defer c.resumeClock()
	}
	res, err := c.handler.Handle(c.handlerContext(), req.Method, req.Params)
	if err != nil {
		return nil, RPCError(err)
	}
	return res, nil
}

// waitsOnPerson names the requests during which a call's timeout does not run.
func waitsOnPerson(method string) bool {
	return method == workerproto.MethodAsk || method == workerproto.MethodWorkspaceAddPath
}

func (w *worker) logOrphan(params json.RawMessage) {
	var p workerproto.LogParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	level := slog.LevelInfo
	switch p.Level {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	attrs := []any{"source", "tool"}
	if p.CallID != "" {
		attrs = append(attrs, "call", p.CallID)
	}
	if len(p.Data) > 0 {
		attrs = append(attrs, "data", p.Data)
	}
	w.log.Log(context.Background(), level, p.Message, attrs...)
}

// callIDOf reads params.callId. Workers put it first, so the common case is a prefix check
// rather than a parse of params that may hold megabytes of file content.
func callIDOf(params json.RawMessage) string {
	const prefix = `{"callId":"`
	if len(params) > len(prefix) && string(params[:len(prefix)]) == prefix {
		rest := params[len(prefix):]
		for i, b := range rest {
			if b == '\\' {
				break // escapes: let the decoder handle it
			}
			if b == '"' {
				return string(rest[:i])
			}
		}
	}
	var p struct {
		CallID string `json:"callId"`
	}
	_ = json.Unmarshal(params, &p)
	return p.CallID
}

// kill ends the worker at once (SIGKILL to its process group). reason becomes the error of
// the calls still running on it; the first reason wins.
func (w *worker) kill(reason error) {
	w.mu.Lock()
	if w.killReason == nil && !w.reaped {
		w.killReason = reason
	}
	w.mu.Unlock()
	w.pool.retire(w)
	w.signal(syscall.SIGKILL)
}

// signal signals the worker's process group unless the worker has been reaped, after which
// the group id may belong to someone else.
func (w *worker) signal(sig syscall.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.reaped {
		signalGroup(w.pid, sig)
	}
}

// stop shuts the worker down in steps: a shutdown request, closing its pipes, SIGTERM,
// SIGKILL, each step given StopTimeout (less when ctx ends sooner).
func (w *worker) stop(ctx context.Context) {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.pool.retire(w)
	step := w.pool.opts.StopTimeout
	wait := func() bool {
		t := time.NewTimer(step)
		defer t.Stop()
		select {
		case <-w.exited:
			return true
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	sctx, cancel := context.WithTimeout(ctx, step)
	err := w.conn.Call(sctx, workerproto.MethodShutdown, nil, nil)
	cancel()
	if err == nil && wait() {
		return
	}
	w.conn.Close()
	if ctx.Err() == nil {
		w.signal(syscall.SIGTERM)
		if wait() {
			return
		}
	}
	w.signal(syscall.SIGKILL)
	<-w.exited
}

// monitor waits for the process to end, cleans up after it and records why it ended.
func (w *worker) monitor() {
	waited := make(chan error, 1)
	go func() {
		// Whatever the tool started in the worker's group goes with it, once the worker
		// itself has exited (and before it is reaped).
		if waitExit(w.pid) {
			w.mu.Lock()
			signalGroup(w.pid, syscall.SIGKILL)
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.reaped = true
		w.mu.Unlock()
		waited <- w.cmd.Wait()
	}()
	var waitErr error
	select {
	case waitErr = <-waited:
		// The process is gone, but what it wrote just before exiting may still be in the
		// pipe (a crash's "every call running failed" answers): the connection reads to the
		// pipe's end before it is closed. A grandchild holding the pipe open is not waited
		// for long.
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-w.conn.Done():
		case <-t.C:
		}
		t.Stop()
	case <-w.conn.Done():
		connErr := w.conn.Err()
		switch {
		case errors.Is(connErr, jsonrpc.ErrClosed):
			// The host closed it while stopping the worker; stop owns the signals.
		case errors.Is(connErr, io.EOF):
			// The worker closed its end, most likely because it is exiting.
			t := time.NewTimer(w.pool.opts.KillGrace)
			select {
			case waitErr = <-waited:
				t.Stop()
				goto exited
			case <-t.C:
				w.kill(errors.New("it closed its protocol pipe without exiting"))
			}
		default:
			w.log.Error("worker broke the protocol; killing it", "err", connErr)
			w.kill(fmt.Errorf("it broke the protocol: %w", connErr))
		}
		waitErr = <-waited
	}
exited:
	// Closing waits for the handlers of the worker's requests, which end with their calls;
	// the calls wait for exited, so that wait must not hold it up.
	w.pool.wg.Add(1)
	go func() { defer w.pool.wg.Done(); w.conn.Close() }()
	w.drainOutput()
	var note string
	if f := w.pool.launcher.ExitNote; f != nil {
		note = f(w.pid)
	}
	if exited := w.pool.launcher.Exited; exited != nil {
		// Off the path of the calls waiting on this worker's exit; Close waits for it.
		w.pool.wg.Add(1)
		go func() { defer w.pool.wg.Done(); exited(w.pid) }()
	}
	w.exitErr = w.describeExit(waitErr, note)
	w.pool.retire(w)
	close(w.exited)
	w.log.Debug("worker exited", "err", w.exitErr)
}

// drainOutput lets the output readers reach the end of what the worker wrote (a grandchild
// that still holds the pipes open is not waited for), then closes the host's ends of the
// output pipes: left to the garbage collector, an exited worker's descriptors stayed open
// until something (often the tool's next call) made it run.
func (w *worker) drainOutput() {
	done := make(chan struct{})
	go func() { w.outputs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(250 * time.Millisecond):
		_ = w.outR.Close()
		_ = w.errR.Close()
		<-done
	}
	_ = w.outR.Close()
	_ = w.errR.Close()
}

func (w *worker) describeExit(waitErr error, note string) error {
	w.mu.Lock()
	reason, stopping := w.killReason, w.stopping
	w.mu.Unlock()
	if reason != nil {
		var killed *KilledError
		if errors.As(reason, &killed) {
			return killed
		}
		var le *LoadError
		if errors.As(reason, &le) {
			return le
		}
	}
	e := &ExitError{Tool: w.pool.opts.Name, PID: w.pid, Code: -1, Stderr: w.stderr.lastLines(), Noted: w.stderr.notedLines()}
	if note != "" {
		e.Noted = append(e.Noted, note)
	}
	if st := w.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = signalName(ws.Signal())
		} else {
			e.Code = st.ExitCode()
		}
	} else if waitErr != nil {
		e.Reason = "could not be waited for: " + waitErr.Error()
	}
	switch {
	case reason != nil:
		e.Reason = "was killed: " + reason.Error()
	case stopping:
		e.Reason = "was shut down"
	}
	return e
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGILL:
		return "SIGILL"
	case syscall.SIGFPE:
		return "SIGFPE"
	}
	return s.String()
}
