// Package worker runs a tool in worker processes and talks to them over the worker protocol
// (docs/protocol.md): it starts them, spreads calls over them, routes each worker → host
// request to the call it belongs to, enforces timeouts and Stop, and replaces workers that
// crash or are killed. It knows nothing of Node or Bun: a Launcher says how to start one.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
)

// PoolOptions tune a Pool. Zero values take the defaults.
type PoolOptions struct {
	Name string // the tool's name, for logs and errors
	Init workerproto.InitializeParams
	// MaxWorkers bounds the worker processes (default runtime.NumCPU()).
	MaxWorkers int
	// CallsPerWorker is the load at which another worker is started: when every worker has
	// at least this many calls in flight (default 8). Calls never wait for that start; they
	// go to the least-loaded worker meanwhile.
	CallsPerWorker int
	// ScaleAfter adds a condition to starting another worker: the calls in flight on the
	// least-loaded worker must have been running this long on average, and have stayed so
	// for as long again (default 10ms; negative: not checked). A worker that turns calls around in microseconds is not
	// loaded however many are in flight, and on a small machine a second process would only
	// compete with the first (and the host) for the same cores.
	ScaleAfter time.Duration
	// IdleTimeout stops a worker that has run no call for this long (default 5 minutes;
	// negative: never).
	IdleTimeout time.Duration
	// KillGrace is how long a call has to settle after cancel before its worker is killed
	// (default 1s).
	KillGrace time.Duration
	// StartTimeout bounds starting a worker and loading the tool (default 30s).
	StartTimeout time.Duration
	// StopTimeout is each step of stopping a worker: shutdown, SIGTERM, SIGKILL (default 2s).
	StopTimeout time.Duration
	// MaxLineSize bounds one protocol message (default jsonrpc.DefaultMaxLineSize).
	MaxLineSize int
	// MaxResponseSize bounds a worker's answer (jsonrpc.Options.MaxResponseSize): a longer
	// one is refused unread and its call fails with a *jsonrpc.ResponseTooLongError. Zero:
	// MaxLineSize.
	MaxResponseSize int
	// AnswerPoll is how long the host polls a worker's pipe for the answer to a call that
	// is alone in flight on that worker before it sleeps (jsonrpc.Options.AnswerPoll;
	// default 250µs, negative: never). A quick tool answers within it, and the round trip
	// then saves waking the host: on a virtual machine, where waking an idle CPU costs tens
	// of microseconds, that is the largest part of what a worker adds to a quick call.
	AnswerPoll time.Duration
	// OutputLinesPerSecond caps the stdout and stderr lines logged per worker and stream;
	// more are dropped and counted (default 200, bursts of twice that).
	OutputLinesPerSecond int
	// NoteStderr picks out stderr lines to keep for the error of a crash, beside the last
	// ones (ExitError.Noted); nil keeps none.
	NoteStderr func(line string) bool
	Logger     *slog.Logger
	// Modules says the workers can load more modules than the one initialize loads (the
	// JavaScript worker can; docs/protocol.md): AddModule is allowed, and every module is
	// named in the protocol.
	Modules bool
	// MaxModules bounds the modules one worker loads in its life (default 16): a runtime
	// keeps every module it imported, so a worker that has loaded this many is replaced,
	// once its calls are done, by a fresh one for the next module.
	MaxModules int
}

// Call is one execution of the tool.
type Call struct {
	// ID is the call's id (the provider's tool-call id); it is ctx.callId in the tool and
	// names the call in every worker → host request. Ids must be unique among the calls in
	// flight on a pool; an empty id gets a generated one.
	ID      string
	Input   json.RawMessage
	Context workerproto.CallContext
	// Timeout bounds the call, not counting time spent waiting on a person (ask,
	// workspace.addPath). Zero means no timeout.
	Timeout time.Duration
}

// CallHandler serves the worker → host requests of one call (fs.*, ask, llm.*, session.*,
// workspace.*) with the call's context, which ends when the call settles or is stopped. The
// error returned reaches the tool as a thrown Error (see RPCError for how it is encoded).
// Notifications (log, progress, ledger.record) go to Notify when the handler implements
// Notifier, else to Handle with the result ignored.
type CallHandler interface {
	Handle(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// A StopBinder is a CallHandler that may stop its own call, when the call goes past a limit
// the handler counts, say. Execute hands it the call's Stopper before the call starts.
type StopBinder interface {
	BindStop(Stopper)
}

// Stopper stops one call: it fails with a *StoppedError carrying cause, as if the caller's
// context had ended with that cause (cancel, a grace to settle, then the worker is killed).
type Stopper interface {
	Stop(cause error)
}

// Notifier receives a call's notifications. They are delivered in order, before the
// call's result, on the connection's read loop: Notify must return quickly.
type Notifier interface {
	Notify(method string, params json.RawMessage)
}

// CallHandlerFunc adapts a function to CallHandler.
type CallHandlerFunc func(ctx context.Context, method string, params json.RawMessage) (any, error)

// Handle calls f.
func (f CallHandlerFunc) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return f(ctx, method, params)
}

// Stats is a snapshot of a pool.
type Stats struct {
	Workers  int   // running and taking calls
	Starting int   // being started
	InFlight int   // calls running
	Started  int64 // workers started since the pool was made
	Spare    int   // processes started ahead (Prestart), not yet initialized
}

// Pool runs one tool version in worker processes.
type Pool struct {
	launcher Launcher
	opts     PoolOptions
	log      *slog.Logger

	ctx    context.Context // ends at Close; starts run under it
	cancel context.CancelFunc
	wg     sync.WaitGroup // starts, monitors, the reaper

	epoch   time.Time // dispatch times are kept as offsets from it
	seq     atomic.Int64
	started atomic.Int64

	main       *Module // the module of opts.Init
	nextModule int

	mu       sync.Mutex
	workers  []*worker // taking calls
	starting int
	attempt  *startAttempt // the latest start, for callers that have no worker to go to
	spare    *spareStart   // a worker process started ahead, not yet initialized (Prestart)
	calls    map[string]*call
	inflight int
	// recycling holds workers taken out of dispatch because they loaded MaxModules
	// modules, until their calls are done and they stop.
	recycling map[*worker]bool
	reaping   bool
	closed    bool
	drained   chan struct{} // closed when inflight drops to 0 after Close
}

type startAttempt struct {
	module *Module // what the worker is initialized with
	done   chan struct{}
	err    error
}

// NewPool makes a pool. It starts nothing until Load or the first Execute.
func NewPool(l Launcher, opts PoolOptions) *Pool {
	if opts.MaxWorkers <= 0 {
		opts.MaxWorkers = runtime.NumCPU()
	}
	if opts.CallsPerWorker <= 0 {
		opts.CallsPerWorker = 8
	}
	if opts.ScaleAfter == 0 {
		opts.ScaleAfter = 10 * time.Millisecond
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 5 * time.Minute
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 2 * time.Second
	}
	if opts.MaxLineSize <= 0 {
		opts.MaxLineSize = jsonrpc.DefaultMaxLineSize
	}
	if opts.AnswerPoll == 0 {
		opts.AnswerPoll = 250 * time.Microsecond
	}
	if opts.Name == "" {
		opts.Name = "(unnamed)"
	}
	if opts.Init.ProtocolVersion == 0 {
		opts.Init.ProtocolVersion = workerproto.Version
	}
	if opts.MaxModules <= 0 {
		opts.MaxModules = 16
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{
		launcher: l, opts: opts, epoch: time.Now(),
		log:   log.With("tool", opts.Name, "runtime", l.Kind),
		calls: make(map[string]*call),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.main = p.newModule(opts.Init)
	return p
}

// Stats reports the pool's workers and calls.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Stats{Workers: len(p.workers), Starting: p.starting, InFlight: p.inflight, Started: p.started.Load()}
	if p.spare != nil {
		st.Spare = 1
	}
	return st
}

// Load makes sure one worker runs and returns what it loaded: the definition, the module's
// shape, the runtime. The worker stays for the calls that follow.
func (p *Pool) Load(ctx context.Context) (workerproto.InitializeResult, error) {
	return p.main.Load(ctx)
}

// Main is the module the pool was made for (PoolOptions.Init).
func (p *Pool) Main() *Module { return p.main }

// startLocked starts a worker in the background, initialized with module m; p.mu must be
// held.
func (p *Pool) startLocked(m *Module) *startAttempt {
	att := &startAttempt{module: m, done: make(chan struct{})}
	p.attempt = att
	p.starting++
	p.startReaperLocked()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		w, info, err := p.spawn(p.ctx, m)
		if err == nil {
			p.started.Add(1)
		}
		p.mu.Lock()
		p.starting--
		if err == nil && p.closed {
			err = fmt.Errorf("tool %s: %w", p.opts.Name, ErrPoolClosed)
			p.mu.Unlock()
			w.stop(context.Background())
			p.mu.Lock()
		} else if err == nil {
			p.workers = append(p.workers, w)
			w.mods[m] = loadedModule(nil)
			w.modCount = 1
			if m.info == nil {
				m.info = &info
			}
		}
		att.err = err
		close(att.done)
		p.mu.Unlock()
		if err != nil {
			p.log.Warn("worker did not start", "err", err)
		}
	}()
	return att
}

// startReaperLocked starts the loop that stops idle workers, once; p.mu must be held.
func (p *Pool) startReaperLocked() {
	if !p.reaping && p.opts.IdleTimeout > 0 {
		p.reaping = true
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.reapLoop() }()
	}
}

// acquire picks the least-loaded worker for a call of module m, starting workers as the
// load requires. A worker that has loaded MaxModules other modules does not take m: when
// none other can, those workers are recycled (they finish their calls and stop) and a
// fresh one starts. forCall counts the call on the worker.
func (p *Pool) acquire(ctx context.Context, m *Module, forCall bool) (*worker, time.Time, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, time.Time{}, fmt.Errorf("tool %s: %w", p.opts.Name, ErrPoolClosed)
		}
		var best *worker
		full := 0
		for _, w := range p.workers {
			if w.mods[m] == nil && w.modCount >= p.opts.MaxModules {
				full++
				continue
			}
			if best == nil || w.load < best.load {
				best = w
			}
		}
		if best == nil && full > 0 {
			p.recycleFullLocked(m)
		}
		now := time.Now()
		// With no worker ready, one start is enough to wait for; with workers, another starts
		// when the least-loaded one is saturated.
		grow := p.starting == 0
		if best != nil {
			grow = p.saturated(best, now)
		}
		if grow && len(p.workers)+p.starting < p.opts.MaxWorkers {
			p.startLocked(m)
		}
		if best != nil {
			if forCall {
				best.load++
				best.startSum += int64(now.Sub(p.epoch))
			}
			p.mu.Unlock()
			return best, now, nil
		}
		att := p.attempt
		p.mu.Unlock()
		select {
		case <-att.done:
			var le *LoadError
			if att.err != nil && !(att.module != m && errors.As(att.err, &le)) {
				return nil, time.Time{}, att.err
			}
			// Started, or another module failed to load: try again (for this module).
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
	}
}

// saturated reports whether the least-loaded worker is loaded enough to start another;
// p.mu must be held. Beyond CallsPerWorker calls in flight, their average age must have
// stayed at ScaleAfter or more for ScaleAfter: a stall of the whole machine (or of the host)
// ages every call at once for a moment, and a second worker would not help with that.
//
// A worker that runs a whole batch of calls before it answers any (a JavaScript worker
// runs the synchronous part of every call that arrived together) answers them together, so
// the next calls always find young ones in flight, however long each batch takes. For that
// the recent duration of its calls counts too, confirmed by the worker's own scheduling:
// it must have been running, or ready to run, nearly all the time since its calls looked
// slow (where that can be read). A worker waiting for its next calls, as in a stall of
// the host, is neither.
func (p *Pool) saturated(best *worker, now time.Time) bool {
	if best.load < p.opts.CallsPerWorker {
		best.slowSince = time.Time{}
		return false
	}
	if p.opts.ScaleAfter < 0 {
		return true
	}
	avgAge := now.Sub(p.epoch) - time.Duration(best.startSum/int64(best.load))
	agedInFlight := avgAge >= p.opts.ScaleAfter
	slowCalls := time.Duration(best.took) >= p.opts.ScaleAfter
	if !agedInFlight && !slowCalls {
		best.slowSince = time.Time{}
		return false
	}
	if best.slowSince.IsZero() {
		best.slowSince = now
		best.cpuSince, best.cpuKnown = cpuTime(best.pid)
		return false
	}
	held := now.Sub(best.slowSince)
	if held < p.opts.ScaleAfter {
		return false
	}
	if agedInFlight {
		return true
	}
	cpu, ok := cpuTime(best.pid)
	if !ok || !best.cpuKnown {
		return false
	}
	return cpu-best.cpuSince >= held*9/10
}

// retire takes a worker out of dispatch; it takes no new calls.
func (p *Pool) retire(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.retired {
		return
	}
	w.retired = true
	for i, x := range p.workers {
		if x == w {
			p.workers = append(p.workers[:i], p.workers[i+1:]...)
			break
		}
	}
}

// lookup finds the call a worker → host message belongs to.
func (p *Pool) lookup(id string, w *worker) *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[id]
	if c == nil || c.worker != w {
		return nil
	}
	return c
}

// Execute runs one call of the pool's main module and returns the tool's result as the
// worker sent it (the host normalizes it). It fails with *TimeoutError, *StoppedError,
// *ExitError, *KilledError, *CallError, *LoadError (a worker had to be started and the tool
// did not load), or an error wrapping ErrPoolClosed.
func (p *Pool) Execute(ctx context.Context, c Call, h CallHandler) (json.RawMessage, error) {
	return p.main.Execute(ctx, c, h)
}

func (p *Pool) execute(ctx context.Context, m *Module, c Call, h CallHandler) (json.RawMessage, error) {
	if h == nil {
		h = CallHandlerFunc(func(context.Context, string, json.RawMessage) (any, error) {
			return nil, errors.New("this call has no handler for requests to the host")
		})
	}
	id := c.ID
	if id == "" {
		id = "call-" + strconv.FormatInt(p.seq.Add(1), 10)
	}
	if ctx.Err() != nil {
		return nil, &StoppedError{Tool: p.opts.Name, CallID: id, Cause: context.Cause(ctx)}
	}
	cl := &call{id: id, handler: h, module: m, parent: ctx, halt: make(chan struct{})}
	defer cl.settle()
	if b, ok := h.(StopBinder); ok {
		b.BindStop(cl)
	}

	p.mu.Lock()
	if m.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("tool %s: %w (its module was closed)", p.opts.Name, ErrPoolClosed)
	}
	if _, dup := p.calls[id]; dup {
		p.mu.Unlock()
		return nil, fmt.Errorf("tool %s: call %s is already running: call ids must be unique among calls in flight", p.opts.Name, id)
	}
	p.calls[id] = cl
	p.inflight++
	m.inflight++
	p.mu.Unlock()
	defer p.finish(cl)

	// A worker that is going away refuses calls it has not started; those go to another
	// worker. Anything else is tried once.
	for attempt := 1; ; attempt++ {
		raw, retry, err := p.dispatch(ctx, cl, c)
		if !retry || attempt == 3 {
			return raw, err
		}
		p.log.Debug("worker refused a call while stopping; sending it to another", "call", id)
	}
}

// dispatch runs the call on one worker. retry reports that the worker did not start it.
func (p *Pool) dispatch(ctx context.Context, cl *call, c Call) (_ json.RawMessage, retry bool, _ error) {
	id := cl.id
	if cause := cl.stoppedBy(); cause != nil {
		return nil, false, &StoppedError{Tool: p.opts.Name, CallID: id, Cause: cause}
	}
	w, dispatched, err := p.acquire(ctx, cl.module, true)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, &StoppedError{Tool: p.opts.Name, CallID: id, Cause: context.Cause(ctx)}
		}
		return nil, false, err
	}
	p.mu.Lock()
	cl.worker = w
	cl.dispatched = int64(dispatched.Sub(p.epoch))
	ml := w.mods[cl.module]
	loaded := ml != nil && isDone(ml.done) && ml.err == nil
	p.mu.Unlock()
	defer p.release(cl)
	if !loaded {
		if err := p.ensureLoaded(ctx, w, cl.module); err != nil {
			if ctx.Err() != nil {
				return nil, false, &StoppedError{Tool: p.opts.Name, CallID: id, Cause: context.Cause(ctx)}
			}
			if errors.Is(err, errWorkerGone) {
				return nil, true, nil // another worker can load it
			}
			return nil, false, err
		}
	}

	cl.startClock(c.Timeout)
	defer cl.stopClock()
	cl.params = workerproto.ExecuteParams{CallID: id, Input: input(c.Input), Context: c.Context, Module: cl.module.id}
	pending, err := w.conn.Start(workerproto.MethodExecute, &cl.params)
	if err != nil {
		if errors.Is(err, jsonrpc.ErrClosed) {
			// The worker went away before the request left: another worker can run it.
			p.retire(w)
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("tool %s: call %s: %w", p.opts.Name, id, err)
	}
	select {
	case <-pending.Done():
		return p.settle(w, id, pending)
	case <-cl.halt:
		if cause := cl.stoppedBy(); cause != nil {
			return nil, false, p.abort(w, cl, pending, "it was stopped", &StoppedError{Tool: p.opts.Name, CallID: id, Cause: cause})
		}
		return nil, false, p.abort(w, cl, pending, "its timeout", &TimeoutError{Tool: p.opts.Name, CallID: id, Timeout: c.Timeout})
	case <-ctx.Done():
		return nil, false, p.abort(w, cl, pending, "it was stopped", &StoppedError{Tool: p.opts.Name, CallID: id, Cause: context.Cause(ctx)})
	}
}

var errCallSettled = errors.New("the call has settled")

func input(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// release gives back the call's place on its worker.
func (p *Pool) release(cl *call) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := cl.worker; w != nil {
		w.load--
		w.startSum -= cl.dispatched
		w.lastUsed = time.Now()
		// A moving average of how long its calls take, for saturated: calls that arrive
		// and settle together (a worker runs a whole batch before it answers) are all young
		// when the next ones come, however long each batch takes.
		took := int64(w.lastUsed.Sub(p.epoch)) - cl.dispatched
		w.took += (took - w.took) / 4
		if w.recycled && w.load == 0 {
			p.stopLocked(w)
		}
	}
	cl.worker = nil
}

// finish releases what a call held.
func (p *Pool) finish(cl *call) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.calls, cl.id)
	p.inflight--
	if p.inflight == 0 && p.drained != nil {
		close(p.drained)
		p.drained = nil
	}
	m := cl.module
	m.inflight--
	if m.inflight == 0 && m.drained != nil {
		close(m.drained)
		m.drained = nil
	}
}

// settle reads the answer of an execute request.
func (p *Pool) settle(w *worker, id string, pending *jsonrpc.Pending) (_ json.RawMessage, retry bool, _ error) {
	raw, err := pending.Result()
	if err == nil {
		return raw, false, nil
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		var d exitingData
		if rpcErr.DecodeData(&d) && d.WorkerExiting {
			// The worker is going down (it crashed and says so): no new calls go to it.
			p.retire(w)
			if d.NotStarted {
				return nil, true, nil
			}
		}
		return nil, false, &CallError{Tool: p.opts.Name, CallID: id, Err: rpcErr}
	}
	var big *jsonrpc.ResponseTooLongError
	if errors.As(err, &big) && big.Known {
		// Refused by its length, the worker still serving: the call's own failure.
		return nil, false, fmt.Errorf("tool %s: call %s: %w", p.opts.Name, id, big)
	}
	return nil, false, p.workerFailed(w, id, err)
}

// exitingData is the error data of a worker that is going away (docs/protocol.md).
type exitingData struct {
	WorkerExiting bool `json:"workerExiting"`
	NotStarted    bool `json:"notStarted"`
}

// workerFailed explains a call lost with its worker's connection: the worker's exit.
func (p *Pool) workerFailed(w *worker, id string, err error) error {
	if !errors.Is(err, jsonrpc.ErrClosed) {
		return fmt.Errorf("tool %s: call %s: %w", p.opts.Name, id, err)
	}
	<-w.exited // the monitor bounds how long this takes
	return w.exitErr
}

// abort ends a call that timed out or was stopped: cancel, a grace to settle, then the
// worker is killed (and replaced on a later call). It returns why, whatever happened next.
func (p *Pool) abort(w *worker, cl *call, pending *jsonrpc.Pending, what string, why error) error {
	reason := "The call timed out"
	var stopped *StoppedError
	if errors.As(why, &stopped) {
		reason = "The call was stopped"
	}
	_ = w.conn.Notify(context.Background(), workerproto.MethodCancel, workerproto.CancelParams{CallID: cl.id, Reason: reason})
	t := time.NewTimer(p.opts.KillGrace)
	defer t.Stop()
	select {
	case <-pending.Done():
		return why
	case <-t.C:
	}
	pending.Abandon()
	p.log.Warn("killing worker: a call did not stop", "worker_pid", w.pid, "call", cl.id, "after", what)
	w.kill(&KilledError{Tool: p.opts.Name, PID: w.pid, CallID: cl.id, Reason: what})
	return why
}

// reapLoop stops workers that have been idle for IdleTimeout.
func (p *Pool) reapLoop() {
	every := p.opts.IdleTimeout / 4
	if every < 5*time.Millisecond {
		every = 5 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		var idle []*worker
		p.mu.Lock()
		for _, w := range p.workers {
			if w.load == 0 && now.Sub(w.lastUsed) >= p.opts.IdleTimeout {
				idle = append(idle, w)
			}
		}
		if sp := p.dropSpareLocked(now, p.opts.IdleTimeout); sp != nil {
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.stopSpare(sp) }()
		}
		for _, w := range idle {
			// Retired under the same lock, so no call can pick it in between.
			w.retired = true
			for i, x := range p.workers {
				if x == w {
					p.workers = append(p.workers[:i], p.workers[i+1:]...)
					break
				}
			}
		}
		p.mu.Unlock()
		for _, w := range idle {
			p.log.Debug("stopping idle worker", "worker_pid", w.pid)
			p.wg.Add(1)
			go func() { defer p.wg.Done(); w.stop(p.ctx) }()
		}
	}
}

// Close drains the pool: new calls are refused, calls in flight may finish until ctx ends
// (then their workers are killed and they fail), and every worker is shut down in steps.
// Close waits for all of the pool's goroutines.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	spare := p.dropSpareLocked(time.Now(), 0)
	var drained chan struct{}
	if p.inflight > 0 {
		drained = make(chan struct{})
		p.drained = drained
	}
	p.mu.Unlock()

	var err error
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
			err = fmt.Errorf("tool %s: close: calls still running: %w", p.opts.Name, context.Cause(ctx))
		}
	}
	// Workers still referenced by calls (only when ctx ended first) and the idle ones.
	p.mu.Lock()
	all := map[*worker]bool{}
	for _, w := range p.workers {
		all[w] = true
	}
	for w := range p.recycling {
		all[w] = true
	}
	for _, c := range p.calls {
		if c.worker != nil {
			all[c.worker] = true
		}
	}
	p.mu.Unlock()
	var stops sync.WaitGroup
	if spare != nil {
		stops.Add(1)
		go func() { defer stops.Done(); p.stopSpare(spare) }()
	}
	for w := range all {
		stops.Add(1)
		go func() {
			defer stops.Done()
			if err != nil {
				w.kill(fmt.Errorf("the pool was closed before its calls finished"))
				<-w.exited
				return
			}
			w.stop(ctx)
		}()
	}
	stops.Wait()
	p.cancel() // ends starts in progress and the reaper
	p.wg.Wait()
	return err
}
