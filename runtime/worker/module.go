package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
)

// Module is one tool module (one version of a tool) served by a pool's workers. A pool
// starts with one, its main module; a pool whose workers can load more (PoolOptions.Modules)
// takes further ones with AddModule, so that a new version of a tool runs in the processes
// already started for the previous one instead of waiting for a new process. Each call runs
// on the module it was made for, so calls in flight on an old version finish on it while
// new calls go to the new one. A module is loaded into a worker when a call or Load first
// needs it there.
type Module struct {
	pool *Pool
	id   string // its name in the protocol; empty when the pool loads one module only
	init workerproto.InitializeParams

	// Guarded by pool.mu.
	info     *workerproto.InitializeResult
	inflight int
	closed   bool
	drained  chan struct{} // closed when inflight drops to 0 after Close
}

// moduleLoad is the state of one module in one worker.
type moduleLoad struct {
	done chan struct{} // closed when the load settled
	err  error
}

// loadedModule is the record of a module a worker has (initialize loaded it) or failed to
// load with err.
func loadedModule(err error) *moduleLoad {
	ml := &moduleLoad{done: make(chan struct{}), err: err}
	close(ml.done)
	return ml
}

// errWorkerGone marks a module load that failed because its worker went away; the call can
// go to another worker.
var errWorkerGone = errors.New("the worker went away while loading the module")

func (p *Pool) newModule(init workerproto.InitializeParams) *Module {
	m := &Module{pool: p, init: init}
	if p.opts.Modules {
		m.id = "m" + strconv.Itoa(p.nextModule)
		p.nextModule++
		m.init.Module = m.id
	}
	return m
}

// AddModule adds a module (another version of the pool's tool) to a pool whose workers can
// load more than one. init's Rules are the pool's: the module changes what is loaded, not the
// worker. Nothing is loaded until Load or a call needs it.
func (p *Pool) AddModule(bundle, toolDir string) (*Module, error) {
	if !p.opts.Modules {
		return nil, fmt.Errorf("tool %s: the %s worker loads one module only", p.opts.Name, p.launcher.Kind)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("tool %s: %w", p.opts.Name, ErrPoolClosed)
	}
	init := p.opts.Init
	init.Bundle, init.ToolDir = bundle, toolDir
	return p.newModule(init), nil
}

// ID is the module's name in the protocol ("" for the only module of a pool that loads one).
func (m *Module) ID() string { return m.id }

// Load makes sure a worker has the module loaded and returns what it loaded: the
// definition, the module's shape, the runtime. With no worker running, one is started for
// it; otherwise the least-loaded worker loads it. The worker stays for the calls that
// follow.
func (m *Module) Load(ctx context.Context) (workerproto.InitializeResult, error) {
	p := m.pool
	for {
		p.mu.Lock()
		if m.closed {
			p.mu.Unlock()
			return workerproto.InitializeResult{}, fmt.Errorf("tool %s: %w (its module was closed)", p.opts.Name, ErrPoolClosed)
		}
		if m.info != nil {
			for _, w := range p.workers {
				if ml := w.mods[m]; ml != nil && isDone(ml.done) && ml.err == nil {
					info := *m.info
					p.mu.Unlock()
					return info, nil
				}
			}
		}
		p.mu.Unlock()
		w, _, err := p.acquire(ctx, m, false)
		if err != nil {
			if ctx.Err() != nil {
				return workerproto.InitializeResult{}, fmt.Errorf("tool %s: load: %w", p.opts.Name, context.Cause(ctx))
			}
			return workerproto.InitializeResult{}, err
		}
		if err := p.ensureLoaded(ctx, w, m); err != nil && !errors.Is(err, errWorkerGone) {
			return workerproto.InitializeResult{}, err
		}
	}
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Execute runs one call of the module (see Pool.Execute).
func (m *Module) Execute(ctx context.Context, c Call, h CallHandler) (json.RawMessage, error) {
	return m.pool.execute(ctx, m, c, h)
}

// Close retires the module: new calls of it are refused, the calls in flight may finish
// until ctx ends, and the workers that loaded it are told to forget it. The pool and its
// workers carry on for the other modules; Pool.Close stops them.
func (m *Module) Close(ctx context.Context) error {
	p := m.pool
	p.mu.Lock()
	if m.closed {
		p.mu.Unlock()
		return nil
	}
	m.closed = true
	var drained chan struct{}
	if m.inflight > 0 {
		drained = make(chan struct{})
		m.drained = drained
	}
	p.mu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
			return fmt.Errorf("tool %s: close module %s: calls still running: %w", p.opts.Name, m.id, context.Cause(ctx))
		}
	}
	if m.id == "" {
		return nil // the only module: its workers go with the pool
	}
	p.mu.Lock()
	var loaded []*worker
	for _, w := range p.workers {
		if ml := w.mods[m]; ml != nil && isDone(ml.done) && ml.err == nil {
			loaded = append(loaded, w)
		}
		delete(w.mods, m)
	}
	p.mu.Unlock()
	for _, w := range loaded {
		_ = w.conn.Notify(context.Background(), workerproto.MethodUnload, workerproto.UnloadParams{Module: m.id})
	}
	return nil
}

// ensureLoaded makes sure worker w has module m, loading it there once (the callers that
// need it meanwhile wait for that load). The load runs under the pool's life, not the
// caller's, so that a caller giving up does not leave the worker half-told.
func (p *Pool) ensureLoaded(ctx context.Context, w *worker, m *Module) error {
	p.mu.Lock()
	ml := w.mods[m]
	if ml == nil {
		ml = &moduleLoad{done: make(chan struct{})}
		w.mods[m] = ml
		w.modCount++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			err := p.loadInto(w, m)
			p.mu.Lock()
			ml.err = err
			if errors.Is(err, errWorkerGone) && w.mods[m] == ml {
				delete(w.mods, m)
			}
			close(ml.done)
			p.mu.Unlock()
		}()
	}
	p.mu.Unlock()
	select {
	case <-ml.done:
		return ml.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadInto sends the load request for m to w.
func (p *Pool) loadInto(w *worker, m *Module) error {
	lctx, cancel := context.WithTimeout(p.ctx, p.opts.StartTimeout)
	defer cancel()
	var info workerproto.InitializeResult
	err := w.conn.Call(lctx, workerproto.MethodLoad, workerproto.LoadParams{Module: m.id, Bundle: m.init.Bundle, ToolDir: m.init.ToolDir}, &info)
	if err == nil {
		p.mu.Lock()
		if m.info == nil {
			m.info = &info
		}
		p.mu.Unlock()
		w.log.Debug("worker loaded another module", "module", m.id, "bundle", m.init.Bundle)
		return nil
	}
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code == workerproto.CodeLoadError:
		var d workerproto.LoadErrorData
		rpcErr.DecodeData(&d)
		return &LoadError{Tool: p.opts.Name, Message: rpcErr.Message, File: d.File, Line: d.Line, Column: d.Column, Stack: d.Stack}
	case errors.As(err, &rpcErr):
		return fmt.Errorf("tool %s: load module %s: %w", p.opts.Name, m.id, rpcErr)
	case errors.Is(err, jsonrpc.ErrClosed):
		return fmt.Errorf("tool %s: %w", p.opts.Name, errWorkerGone)
	case p.ctx.Err() != nil:
		return fmt.Errorf("tool %s: %w", p.opts.Name, ErrPoolClosed)
	}
	// The module did not finish loading in time (its top-level code never returns): the
	// worker is stuck in it, and goes.
	cause := fmt.Errorf("tool %s: worker %d did not finish loading %s within %v", p.opts.Name, w.pid, m.init.Bundle, p.opts.StartTimeout)
	w.kill(cause)
	return cause
}

// recycleFullLocked takes the workers that cannot load module m (they loaded MaxModules
// already) out of dispatch; each stops once its calls are done. p.mu must be held.
func (p *Pool) recycleFullLocked(m *Module) {
	kept := p.workers[:0]
	for _, w := range p.workers {
		if w.mods[m] == nil && w.modCount >= p.opts.MaxModules {
			w.retired, w.recycled = true, true
			if p.recycling == nil {
				p.recycling = map[*worker]bool{}
			}
			p.recycling[w] = true
			if w.load == 0 {
				p.stopLocked(w)
			}
			continue
		}
		kept = append(kept, w)
	}
	clear(p.workers[len(kept):])
	p.workers = kept
}

// stopLocked stops a recycled worker in the background. p.mu must be held.
func (p *Pool) stopLocked(w *worker) {
	delete(p.recycling, w)
	w.log.Debug("stopping a worker that loaded its share of modules", "modules", w.modCount)
	p.wg.Add(1)
	go func() { defer p.wg.Done(); w.stop(p.ctx) }()
}
