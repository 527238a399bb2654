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
}

// earlyStart is what was started for one folder: the worker that will learn its definition
// and the worker of the scope the host served last (nil when none).
type earlyStart struct {
	probe, ahead *sharedPool
	timer        *time.Timer
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

// startEarly starts the processes of a tool folder that just appeared (see above). It does
// nothing for a folder the host already knows, a Go tool, or a tool that would not be
// confined by Landlock.
func (h *Host) startEarly(dir string) {
	if h.opts.Folders != nil {
		return
	}
	if _, known := h.cat.Load().results[dir]; known {
		return
	}
	if !h.early.reserve(dir) {
		return
	}
	es := h.loader.earlyStart(dir)
	if !h.early.put(dir, es) && es != nil {
		es.release()
	}
}

// reserve claims dir's place (nil until put) while fewer than aheadPerReload folders have
// processes waiting.
func (e *earlyStarts) reserve(dir string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, taken := e.m[dir]; taken || e.closed || len(e.m) >= aheadPerReload {
		return false
	}
	if e.m == nil {
		e.m = map[string]*earlyStart{}
	}
	e.m[dir] = nil
	return true
}

// put records what was started for dir (nil: nothing) and stops it after earlyTTL unless a
// reload took it; false when the host closed meanwhile (the caller releases es).
func (e *earlyStarts) put(dir string, es *earlyStart) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if es == nil || e.closed {
		delete(e.m, dir)
		return es == nil
	}
	e.m[dir] = es
	es.timer = time.AfterFunc(earlyTTL, func() {
		if e.take(dir) == es {
			es.release()
		}
	})
	return true
}

// take removes and returns what was started for dir, nil when nothing was.
func (e *earlyStarts) take(dir string) *earlyStart {
	e.mu.Lock()
	defer e.mu.Unlock()
	es := e.m[dir]
	if es == nil {
		return nil
	}
	delete(e.m, dir)
	es.timer.Stop()
	return es
}

// drop stops what waits for the folders a reload looked at (only; nil: all) and did not
// take: a folder removed, or no longer a tool, before its reload.
func (e *earlyStarts) drop(only map[string]bool) {
	e.mu.Lock()
	var gone []*earlyStart
	for dir, es := range e.m {
		if es != nil && (only == nil || only[dir]) {
			delete(e.m, dir)
			es.timer.Stop()
			gone = append(gone, es)
		}
	}
	e.mu.Unlock()
	for _, es := range gone {
		es.release()
	}
}

// close stops everything waiting; nothing is started for a folder afterwards.
func (e *earlyStarts) close() {
	e.mu.Lock()
	all := e.m
	e.m, e.closed = nil, true
	e.mu.Unlock()
	for _, es := range all {
		if es != nil {
			es.timer.Stop()
			es.release()
		}
	}
}

// earlyStart starts the processes of a tool folder whose sources may not all be written
// yet; nil when it starts none. Its folderTool is provisional: it has no bundle and no
// definition, only what decides how its workers start, which the reload compares with its
// own before taking them.
func (fl *folderLoader) earlyStart(dir string) *earlyStart {
	f := loader.Inspect(dir) // an error here (sources still coming) leaves the preferences known so far
	if f.Kind == loader.KindGo {
		return nil
	}
	rt, err := fl.runtime(f.RuntimePreference)
	if err != nil {
		return nil
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
		return nil
	}
	// The folder of its bundles, which linkModule fills; the bundle itself is not known yet
	// and is never loaded through this pool's main module.
	if ft.moduleDir, err = fl.moduleDir(ft.dir); err != nil {
		return nil
	}
	ft.program = filepath.Join(ft.moduleDir, "pending")
	probe, err := ft.probePool()
	if err != nil {
		return nil
	}
	probe.pool.Prestart()
	var budget atomic.Int32
	budget.Store(1)
	ahead := ft.startAhead(nil, &budget)
	if ahead != nil {
		ahead.placeholder = true
	}
	probe.placeholder = true
	return &earlyStart{probe: probe, ahead: ahead}
}
