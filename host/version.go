package host

import (
	"context"
	"sync"

	"github.com/jean2/jean2/tool"
)

// version is one loaded version of a tool: what runs it and how many calls it is serving.
// A reload retires versions that are no longer live; a retired version takes no new calls,
// finishes the ones it has, then stops its workers.
type version struct {
	entry Entry
	def   tool.Definition
	tool  tool.Tool
	env   map[string]string // the declared variables with values, for ctx.env

	envOnce sync.Once
	ctxEnv  tool.Env // env as ctx.env, made once: every call of the version shares it
	// source is the ToolSource the tool came from, nil for folder and built-in tools.
	source ToolSource
	// stop releases what the version holds (its worker pool); nil for built-in tools.
	stop func(ctx context.Context) error

	// checked is the tool as a registry takes it, its definition checked and its input
	// schema compiled once: every reload registers every serving version again.
	checkOnce sync.Once
	checked   *tool.Checked
	checkErr  error

	mu       sync.Mutex
	inflight int
	retired  bool
	idle     chan struct{} // closed when retired and no call is in flight
}

func newVersion(e Entry, def tool.Definition, t tool.Tool, stop func(context.Context) error) *version {
	return &version{entry: e, def: def, tool: t, stop: stop, idle: make(chan struct{})}
}

// toolEnv is the version's variables as ctx.env. An Env cannot be changed through its
// methods, so one serves every call.
func (v *version) toolEnv() tool.Env {
	v.envOnce.Do(func() { v.ctxEnv = tool.NewEnv(v.env) })
	return v.ctxEnv
}

// register adds the version's tool to r.
func (v *version) register(r *tool.Registry) error {
	v.checkOnce.Do(func() { v.checked, v.checkErr = tool.Check(v.tool) })
	if v.checkErr != nil {
		return v.checkErr
	}
	return r.Add(v.checked)
}

// acquire registers a call; it fails once the version is retired.
func (v *version) acquire() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.retired {
		return false
	}
	v.inflight++
	return true
}

func (v *version) release() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.inflight--
	if v.retired && v.inflight == 0 {
		close(v.idle)
	}
}

// retire stops new calls, waits (bounded by ctx) for the calls in flight, and stops the
// version's workers.
func (v *version) retire(ctx context.Context) error {
	v.mu.Lock()
	if !v.retired {
		v.retired = true
		if v.inflight == 0 {
			close(v.idle)
		}
	}
	v.mu.Unlock()
	select {
	case <-v.idle:
	case <-ctx.Done():
	}
	if v.stop == nil {
		return nil
	}
	return v.stop(ctx)
}
