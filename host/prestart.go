package host

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/runtime/gotool"
	"github.com/jean2/jean2/sandbox"
)

// The first call of a new confined tool used to wait for two worker starts in series: the
// worker that learns the definition (a scratch folder, no workspace, no network) and then
// the worker of the call's scope. The second now starts beside the first, for the scope the
// host served last, as a process only (worker.Pool.Prestart): the worker script runs, the
// tool's module is not loaded. It is initialized — the tool's code runs in it — at the first
// call in that scope, exactly as a worker started then would be, and only when:
//
//   - the tool runs on Node or Bun, whose worker is jean2's script and loads nothing of the
//     tool before initialize (Bun is started with --config=/dev/null: no bunfig preload);
//     a Go tool's binary is the tool, and is never started ahead;
//   - once its definition is known and checked, a worker of this version for that scope
//     would be started exactly alike (launcherKey: runtime, flags, environment, sandbox
//     spec with the rules, the same network namespace);
//   - it declares no permissions and no variable has a value, so there is nothing to
//     approve that would change the worker, and the egress proxy made for it, which allows
//     nothing and names the tool by its folder, behaves as the tool's own would (its
//     definition's name must be the folder's);
//   - the call passed the usual checks (approvals, install scripts): the worker is taken
//     by the call's own pool, so a refused call never initializes it.
//
// Otherwise the process is stopped without ever having been initialized. One that no call
// takes stops after the idle timeout. A reload starts at most aheadPerReload of them, and
// only for a scope served within the idle timeout.

// aheadPerReload bounds the scope workers one reload starts ahead (many tool folders copied
// in at once must not each leave a process waiting).
const aheadPerReload = 2

// servedScope is the scope a confined tool's call was last served in, and when.
type servedScope struct {
	scope atomic.Pointer[poolScope]
	at    atomic.Int64 // unix nanoseconds
}

// note records a call's scope; the pointer is the pool's own, so this allocates nothing.
func (s *servedScope) note(scope *poolScope, now time.Time) {
	s.scope.Store(scope)
	s.at.Store(now.UnixNano())
}

// recent returns the last scope served, when that was within idle.
func (s *servedScope) recent(now time.Time, idle time.Duration) (poolScope, bool) {
	sc := s.scope.Load()
	if sc == nil || now.Sub(time.Unix(0, s.at.Load())) > idle {
		return poolScope{}, false
	}
	return *sc, true
}

// startAhead starts, for a version whose definition is about to be learned, a worker
// process for the scope the host served last (see above); nil when it does not.
func (t *folderTool) startAhead(prev *version, budget *atomic.Int32) *sharedPool {
	h := t.fl.h
	if budget == nil || !t.confined() || t.kindName == gotool.KindGo {
		return nil
	}
	if prev != nil {
		// An edit of a tool whose workers could not be started ahead before (it declared
		// permissions or has variables) most likely still cannot.
		if pt, ok := prev.tool.(*folderTool); !ok || len(pt.env) > 0 || sandbox.Declares(pt.def.Permissions) {
			return nil
		}
	}
	scope, ok := h.served.recent(time.Now(), h.idleTimeout())
	if !ok || budget.Add(-1) < 0 {
		return nil
	}
	// probing: a network whose proxy allows nothing and names the tool by its folder.
	p, wn, key := t.newPool(nil, scope, true)
	p.Prestart()
	return &sharedPool{pool: p, key: key, scope: scope, net: wn, refs: 1}
}

// keepAhead makes the worker started ahead this version's pool for its scope when the
// version loaded (its definition known and checked) and may use it (see above), and stops
// it otherwise.
func (t *folderTool) keepAhead(ahead *sharedPool, loaded bool) {
	if ahead == nil {
		return
	}
	ok := loaded && len(t.env) == 0 && !sandbox.Declares(t.def.Permissions) && t.def.Name == t.name &&
		launcherKey(t.launcherFor(t.env, ahead.scope, ahead.net)) == ahead.key
	module := ahead.pool.Main()
	if ok && ahead.placeholder {
		var err error
		module, err = ahead.pool.AddModule(t.program, t.dir)
		ok = err == nil
	}
	key := t.poolKey(ahead.scope)
	t.mu.Lock()
	if ok && t.pools[key] == nil {
		if t.pools == nil {
			t.pools = map[string]*scopedPool{}
		}
		t.pools[key] = &scopedPool{shared: ahead, module: module, lastUsed: time.Now()}
		t.reapLaterLocked()
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.releaseLater(ahead)
}

// releaseLater releases a pool off the load's path (a worker's shutdown, its network and
// scratch folder); closePool waits for it.
func (t *folderTool) releaseLater(sp *sharedPool) {
	t.reaping.Add(1)
	go func() {
		defer t.reaping.Done()
		_ = sp.release(context.Background())
	}()
}

// idleTimeout is how long a scope's workers wait for calls (Options.IdleTimeout).
func (h *Host) idleTimeout() time.Duration {
	if h.opts.IdleTimeout == 0 {
		return 5 * time.Minute
	}
	return h.opts.IdleTimeout
}
