package host

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/runtime/node"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/sandbox"
)

// A new confined tool's first call waits for a worker process to start (the launcher, the
// namespaces, Node's start: 60–100 ms on an idle machine, several times that on a busy one)
// to learn its definition, and the call's scope worker starts beside it (prestart.go). Both
// used to start only once the reload ran: after the watcher's debounce (30 ms) and the
// bundle. They do not depend on either. A confined worker's rules grant the folder of its
// tool folder's bundles (moduleDir, confinedshare.go), not one bundle, and nothing of the
// tool is loaded before initialize; so when the watcher sees a tool folder appear, both
// processes are started at once, as processes only (worker.Pool.Prestart), and the reload
// that follows takes them.
//
// Nothing is widened: a process started early is taken only when the worker the reload
// would start is started exactly alike (launcherKey: runtime, flags, environment, sandbox
// spec with its rules, network), and the tool's code runs in it at the same moment as in a
// worker started then: the probe's at the reload (confined to a scratch folder, no network),
// the scope worker's at the first call and only on the terms of keepAhead. Anyone who can
// make a folder in the tools folder could already make the host start these processes by
// writing a tool there. At most aheadPerReload folders have processes waiting, each for
// earlyTTL at most.

// earlyTTL is how long processes started for a folder wait for its reload.
const earlyTTL = 10 * time.Second

// earlyStarts are the processes started for tool folders that appeared, by folder.
type earlyStarts struct {
	mu     sync.Mutex
	closed bool
	m      map[string]*earlyStart
	wg     sync.WaitGroup // the starts under way
}

// earlyStart is what was started for one folder: the worker that will learn its definition
// and the worker of the scope the host served last (each nil when none). Its fields are set
// once ready is closed.
type earlyStart struct {
	ready        chan struct{}
	probe, ahead *sharedPool
	timer        *time.Timer // guarded by earlyStarts.mu
}

// release stops the processes no reload took (never initialized) off the caller's path.
func (es *earlyStart) release() {
	if es == nil {
		return
	}
	for _, sp := range []*sharedPool{es.probe, es.ahead} {
		if sp != nil {
			go func() { _ = sp.release(context.Background()) }()
		}
	}
	es.probe, es.ahead = nil, nil
}

// takeEarlyProbe returns the probe started early for t's folder, with t's module added,
// when it was started exactly as t's own would be (nil, nil otherwise).
func (t *folderTool) takeEarlyProbe(es *earlyStart) (*sharedPool, *worker.Module) {
	if es == nil || es.probe == nil {
		return nil, nil
	}
	p := es.probe
	if launcherKey(t.launcherFor(nil, p.scope, p.net)) != p.key {
		return nil, nil
	}
	mod, err := p.pool.AddModule(t.program, t.dir)
	if err != nil {
		return nil, nil
	}
	es.probe = nil
	return p, mod
}

// takeAhead returns the scope worker started early, for a folder seen for the first time;
// keepAhead decides whether the version may use it.
func (es *earlyStart) takeAhead(prev *version) *sharedPool {
	if es == nil || es.ahead == nil || prev != nil {
		return nil
	}
	sp := es.ahead
	es.ahead = nil
	return sp
}

// startEarly starts, off the watcher's loop, the processes of a tool folder that just
// appeared (see above). It does nothing for a folder the host already knows, a Go tool, or
// a tool that would not be confined by Landlock.
func (h *Host) startEarly(dir string) {
	if h.opts.Folders != nil {
		return
	}
	if _, known := h.cat.Load().results[dir]; known {
		return
	}
	es := h.early.reserve(dir)
	if es == nil {
		return
	}
	go func() {
		defer h.early.wg.Done()
		es.probe, es.ahead = h.loader.earlyStart(dir)
		close(es.ready)
		h.early.arm(dir, es)
	}()
}

// reserve records a start for dir while fewer than aheadPerReload folders have processes
// waiting; nil when it may not start.
func (e *earlyStarts) reserve(dir string) *earlyStart {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, taken := e.m[dir]; taken || e.closed || len(e.m) >= aheadPerReload {
		return nil
	}
	if e.m == nil {
		e.m = map[string]*earlyStart{}
	}
	es := &earlyStart{ready: make(chan struct{})}
	e.m[dir] = es
	e.wg.Add(1)
	return es
}

// arm stops what was started for dir after earlyTTL unless a reload took it first.
func (e *earlyStarts) arm(dir string, es *earlyStart) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m[dir] != es {
		return // taken, dropped or closed meanwhile: whoever removed it has it
	}
	es.timer = time.AfterFunc(earlyTTL, func() {
		e.mu.Lock()
		mine := e.m[dir] == es
		if mine {
			delete(e.m, dir)
		}
		e.mu.Unlock()
		if mine {
			es.release()
		}
	})
}

// take removes and returns what was started for dir, once started; nil when nothing was.
func (e *earlyStarts) take(dir string) *earlyStart {
	e.mu.Lock()
	es := e.m[dir]
	delete(e.m, dir)
	e.mu.Unlock()
	if es == nil {
		return nil
	}
	<-es.ready // the start is quick: the processes are only launched
	e.mu.Lock()
	if es.timer != nil {
		es.timer.Stop()
	}
	e.mu.Unlock()
	return es
}

// drop stops what waits for the folders a reload looked at (only; nil: all) and did not
// take: a folder removed, or no longer a tool, before its reload.
func (e *earlyStarts) drop(only map[string]bool) {
	e.mu.Lock()
	var dirs []string
	for dir := range e.m {
		if only == nil || only[dir] {
			dirs = append(dirs, dir)
		}
	}
	e.mu.Unlock()
	for _, dir := range dirs {
		e.take(dir).release()
	}
}

// close stops everything waiting, once the starts under way are done; nothing is started
// for a folder afterwards.
func (e *earlyStarts) close() {
	e.mu.Lock()
	e.closed = true
	var dirs []string
	for dir := range e.m {
		dirs = append(dirs, dir)
	}
	e.mu.Unlock()
	e.wg.Wait()
	for _, dir := range dirs {
		e.take(dir).release()
	}
}

// earlyStart starts the processes of a tool folder whose sources may not all be written
// yet (nil, nil when it starts none). Its folderTool is provisional: it has no bundle and no
// definition, only what decides how its workers start, which the reload compares with its
// own before taking them.
func (fl *folderLoader) earlyStart(dir string) (probe, ahead *sharedPool) {
	f := loader.Inspect(dir) // an error here (sources still coming) leaves the preferences known so far
	if f.Kind == loader.KindGo {
		return nil, nil
	}
	rt, err := fl.runtime(f.RuntimePreference)
	if err != nil {
		return nil, nil
	}
	cache := fl.h.layout.Cache
	ft := &folderTool{
		fl: fl, name: f.Name, dir: f.Dir, runtimeDir: rt.Dir(),
		executable: rt.Path, rtRoot: sandbox.RuntimeRoot(rt.Path, fl.h.home), script: node.ScriptPath(cache),
		runtimeVersion: rt.Version, kindName: rt.Kind,
		launcher: jsLauncher(rt, cache, f.Dir),
	}
	if f.Package != nil {
		ft.ownMemoryMB = f.Package.MemoryMB
	}
	if ft.mech, err = fl.h.sb.status.Choose(ft.runtimeKind()); err != nil || ft.mech != sandbox.Landlock {
		return nil, nil
	}
	// The folder of its bundles, which linkModule fills; the bundle itself is not known yet
	// and is never loaded through this pool's main module.
	if ft.moduleDir, err = fl.moduleDir(ft.dir); err != nil {
		return nil, nil
	}
	ft.program = filepath.Join(ft.moduleDir, "pending")
	probe, err = ft.probePool()
	if err != nil {
		return nil, nil
	}
	probe.pool.Prestart()
	var budget atomic.Int32
	budget.Store(1)
	if ahead = ft.startAhead(nil, &budget); ahead != nil {
		ahead.placeholder = true
	}
	probe.placeholder = true
	return probe, ahead
}
