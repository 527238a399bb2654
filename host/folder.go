package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jean2 "github.com/jean2/jean2"
	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/runtime/gotool"
	"github.com/jean2/jean2/runtime/node"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// folderLoader turns tool folders into versions: bundle (cached), learn the definition
// (cached beside the bundle, else from a worker that loads the module), and prepare the
// worker pool that will run it.
type folderLoader struct {
	h      *Host
	loader *loader.Loader

	rtMu     sync.Mutex
	runtimes map[string]runtimeChoice // by preference

	goOnce sync.Once
	goTC   gotool.Toolchain
	goSDK  string // the SDK module Go tools build against
	goErr  error
}

type runtimeChoice struct {
	rt  node.Runtime
	err error
}

func newFolderLoader(h *Host) (*folderLoader, error) {
	l := loader.New(loader.Options{CacheDir: h.layout.Cache, Logger: h.log, Runtimes: loader.Runtimes{Bun: h.opts.BunPath, Node: h.opts.NodePath}, ConfineInstall: h.confineInstall, Confidential: h.confidential, InstallScripts: h.installScriptsApproved})
	return &folderLoader{h: h, loader: l, runtimes: map[string]runtimeChoice{}}, nil
}

// runtime picks the runtime for a folder: its own preference, else JEAN2_RUNTIME, else
// Node when installed, else Bun. Detection runs once per preference.
func (fl *folderLoader) runtime(folderPref string) (node.Runtime, error) {
	pref := folderPref
	if pref == "" {
		pref = fl.h.opts.RuntimePreference
	}
	fl.rtMu.Lock()
	defer fl.rtMu.Unlock()
	if c, ok := fl.runtimes[pref]; ok {
		return c.rt, c.err
	}
	rt, err := node.Detect(node.DetectOptions{Preference: pref, NodePath: fl.h.opts.NodePath, BunPath: fl.h.opts.BunPath})
	fl.runtimes[pref] = runtimeChoice{rt, err}
	return rt, err
}

// dotEnv reads $JEAN2_HOME/.env; a missing file is empty, a malformed one is logged and
// treated as empty (its values are never echoed).
func (fl *folderLoader) dotEnv() map[string]string {
	f, err := os.Open(fl.h.layout.DotEnv)
	if err != nil {
		return nil
	}
	defer f.Close()
	vals, err := policy.ParseDotEnv(f)
	if err != nil {
		fl.h.log.Warn("ignoring malformed .env", "path", fl.h.layout.DotEnv, "error", err)
		return nil
	}
	return vals
}

// toolEnv is the declared variables that have a value (from .env, then the server), less
// the withheld ones: a key variable providers.json names is withheld from .env as well.
func (fl *folderLoader) toolEnv(declared []string) map[string]string {
	vars := policy.ToolEnv(declared, fl.dotEnv(), fl.h.opts.ServerEnv)
	for k := range vars {
		if fl.withheld(k) {
			delete(vars, k)
		}
	}
	return vars
}

func (fl *folderLoader) withheld(name string) bool {
	if policy.ReservedEnv(name) {
		return true
	}
	for _, w := range fl.h.opts.WithheldEnv {
		if w == name {
			return true
		}
	}
	return false
}

// load loads a folder; ahead is how many scope workers may still be started ahead in this
// reload (prestart.go; nil: none).
func (fl *folderLoader) load(ctx context.Context, f loader.Folder, prev *version, ahead *atomic.Int32) folderResult {
	res := fl.loadFresh(ctx, f, prev, ahead)
	if res.err != nil && prev != nil {
		res.serving = prev
	}
	return res
}

// loadFresh loads the folder as it is now: prepare what runs (bundle or build), reuse the
// previous version when nothing changed, else learn the definition and settle its workers.
func (fl *folderLoader) loadFresh(ctx context.Context, f loader.Folder, prev *version, ahead *atomic.Int32) folderResult {
	// Until the bundle says otherwise, the version is what the folder's VERSION or
	// package.json says, so a broken edit is still named ("1.3.0 failed to load").
	res := folderResult{label: f.Version}
	// What the watcher started for a new folder (earlystart.go) is used below or stopped.
	early := fl.h.early.take(f.Dir)
	defer early.release()
	if f.Err != nil {
		res.err = f.Err
		return res
	}
	ft, hash, kind, err := fl.prepare(ctx, f, prev, &res)
	if err != nil {
		res.err = err
		return res
	}
	if prev != nil && prev.entry.Hash == hash && prev.entry.Runtime == res.runtime && sameEnv(prev.env, fl.toolEnv(prev.def.Env)) {
		res.serving, res.fresh = prev, prev
		return res
	}

	// The definition cache is keyed by a digest of what runs, so bundles and Go binaries
	// share it without their hashes having to look alike.
	warnings, started, err := fl.learnDefinition(ctx, f, ft, prev, ahead, early, sha256Hex(kind+":"+hash), res.runtime)
	// The worker started ahead is kept only when this version ends up loaded.
	defer func() { ft.keepAhead(started, res.fresh != nil) }()
	if err != nil {
		res.err = err
		return res
	}
	// A memory cap above the host's is declared, and approved, like a permission.
	ft.def.Permissions = declareLimits(ft.def.Permissions, ft.ownMemoryMB, fl.h.sb.limits)
	ft.env = fl.toolEnv(ft.def.Env)
	ft.settleSharedPool(prev)
	if err := checkFolderDefinition(f, ft); err != nil {
		ft.closePool(context.Background())
		res.err = err
		return res
	}
	ft.adoptScopes(prev)
	def := ft.def
	e := Entry{Name: def.Name, Folder: f.Dir, Version: res.label, Hash: hash, Kind: kind, Runtime: res.runtime, Status: StatusOK, Definition: &def, Warnings: warnings}
	v := newVersion(e, def, ft, ft.closePool)
	v.env = ft.env
	res.serving, res.fresh = v, v
	return res
}

// prepare makes what the folder runs (a bundle, or a Go binary) and chooses how it is
// confined; it sets res's runtime and, when the folder names none, its label from the hash.
func (fl *folderLoader) prepare(ctx context.Context, f loader.Folder, prev *version, res *folderResult) (ft *folderTool, hash, kind string, err error) {
	if f.Kind == loader.KindGo {
		ft, hash, err = fl.prepareGo(ctx, f)
		kind, res.runtime = loader.KindGo, gotool.KindGo
	} else {
		ft, hash, err = fl.prepareJS(ctx, f, res)
		kind = loader.KindJS
	}
	if err != nil {
		return nil, "", "", err
	}
	ft.hash = hash
	if f.Package != nil {
		ft.ownMemoryMB = f.Package.MemoryMB
	}
	if ft.mech, err = fl.h.sb.status.Choose(ft.runtimeKind()); err != nil {
		return nil, "", "", fmt.Errorf("%s cannot run: %w", f.Name, err)
	}
	if ft.mech == sandbox.Landlock && ft.kindName != gotool.KindGo {
		ft.linkModule()
	}
	if ft.mech == sandbox.Unconfined && fl.h.sb.status.Mode != sandbox.ModeOff && (prev == nil || prev.entry.Hash != hash) {
		fl.h.log.Warn("tool runs without a sandbox: its code can read whatever this user can", "tool", f.Name, "runtime", ft.runtimeKind(), "protection", fl.h.sb.status.Summary())
	}
	if res.label == "" {
		res.label = versionLabel("", hash)
	}
	return ft, hash, kind, nil
}

// learnDefinition sets ft's definition: from the cache, else from workers already running
// (the previous version's, or the one that learned it), else from a new probe worker.
// started is a scope worker started ahead meanwhile; the caller hands it to keepAhead
// whatever happens.
func (fl *folderLoader) learnDefinition(ctx context.Context, f loader.Folder, ft *folderTool, prev *version, ahead *atomic.Int32, early *earlyStart, metaKey, runtime string) (warnings []string, started *sharedPool, err error) {
	// The definition is cached per bundle; a tool loaded under another runtime is probed
	// again, since its module may behave differently there.
	var meta definitionMeta
	if raw, ok := fl.loader.Meta(metaKey); ok && json.Unmarshal(raw, &meta) == nil && meta.Definition.Name != "" && meta.Runtime == runtime {
		ft.def = meta.Definition
		return meta.Warnings, nil, nil
	}
	var info workerproto.InitializeResult
	if shared := ft.shareWith(prev, nil); shared != nil {
		// First sight of this version, and the previous one's workers are started exactly as
		// a worker learning this one's definition would be: load it into them as another
		// module, rather than wait for a new process (see sharedPool).
		var mod *worker.Module
		if mod, info, err = ft.loadInto(ctx, shared); err != nil {
			return nil, nil, err
		}
		ft.shared, ft.module = shared, mod
	} else if learner := ft.shareLearner(prev); learner != nil {
		// First sight of this version of a confined tool that is being edited: the worker
		// that learned the previous version's definition, confined exactly as a new one
		// would be, learns this one's.
		var mod *worker.Module
		if mod, info, err = ft.loadInto(ctx, learner); err != nil {
			return nil, nil, err
		}
		ft.learner, ft.learnerMod = learner, mod
	} else {
		// First sight of this version: load the module in a worker to learn its definition.
		// The worker is kept for the first call when the tool declares no variables (its
		// environment is then already right). Confined, the first call's worker starts
		// meanwhile, its tool not loaded until that call (prestart.go).
		var probe *sharedPool
		var mod *worker.Module
		if probe, mod, started, info, err = fl.learn(ctx, f, ft, prev, ahead, early); err != nil {
			return nil, started, err
		}
		ft.def = info.Definition
		switch {
		case len(info.Definition.Env) == 0 && !ft.confined():
			ft.shared, ft.module = probe, mod
		case ft.moduleDir != "" && prev != nil:
			// The folder is being edited: its next version learns its definition here.
			ft.learner, ft.learnerMod = probe, mod
		default:
			ft.releaseLater(probe)
		}
	}
	ft.def = info.Definition
	fl.storeMeta(f, metaKey, info, runtime)
	return info.Warnings, started, nil
}

// loadInto loads ft's bundle into a pool already running, as another module, to learn its
// definition; on failure the module is closed and the pool's reference released.
func (ft *folderTool) loadInto(ctx context.Context, sp *sharedPool) (*worker.Module, workerproto.InitializeResult, error) {
	mod, err := sp.pool.AddModule(ft.program, ft.dir)
	if err != nil {
		_ = sp.release(context.Background())
		return nil, workerproto.InitializeResult{}, err
	}
	info, err := mod.Load(ctx)
	if err != nil {
		_ = mod.Close(context.Background())
		_ = sp.release(context.Background())
		return nil, info, err
	}
	return mod, info, nil
}

// settleSharedPool leaves ft on a shared pool only when its workers' environment is right,
// and, when its definition came from the cache, lets its first call find the previous
// version's workers still running.
func (ft *folderTool) settleSharedPool(prev *version) {
	if ft.shared != nil && ft.shared.key != ft.launchKey(ft.env) {
		// Its declared variables have values: its workers need them in their environment,
		// which the workers that learned its definition were started without.
		_ = ft.module.Close(context.Background())
		_ = ft.shared.release(context.Background())
		ft.shared, ft.module = nil, nil
	}
	if ft.shared != nil {
		return
	}
	if shared := ft.shareWith(prev, ft.env); shared != nil {
		if mod, err := shared.pool.AddModule(ft.program, ft.dir); err == nil {
			ft.shared, ft.module = shared, mod
		} else {
			_ = shared.release(context.Background())
		}
	}
}

// checkFolderDefinition checks the definition the folder's tool gave and adds the network
// its package.json declares.
func checkFolderDefinition(f loader.Folder, ft *folderTool) error {
	if err := ft.def.Check(); err != nil {
		return fmt.Errorf("%s: %w", f.Entry, err)
	}
	net, err := packageNetwork(f.Dir)
	if err != nil {
		return err
	}
	ft.def, err = withPackageNetwork(ft.def, net)
	return err
}

// learn loads a new version in a worker of its own (a probe) to learn its definition, in the
// process the watcher started for the folder when there is one started exactly alike, and
// starts the worker of the scope served last beside it (started; the caller hands it to
// keepAhead whatever happens). mod is the version's module in the probe's pool.
func (fl *folderLoader) learn(ctx context.Context, f loader.Folder, ft *folderTool, prev *version, ahead *atomic.Int32, early *earlyStart) (probe *sharedPool, mod *worker.Module, started *sharedPool, info workerproto.InitializeResult, err error) {
	for attempt := 1; ; attempt++ {
		if attempt == 1 {
			probe, mod = ft.takeEarlyProbe(early)
		}
		if probe == nil {
			if probe, err = ft.probePool(); err != nil {
				return nil, nil, started, info, err
			}
			mod = probe.pool.Main()
		}
		if attempt == 1 && ft.kindName != gotool.KindGo {
			probe.pool.Prestart() // its process first (when not started early): the reload waits for this one
			if started = early.takeAhead(prev); started == nil {
				started = ft.startAhead(prev, ahead)
			}
		}
		info, err = mod.Load(ctx)
		if err == nil {
			return probe, mod, started, info, nil
		}
		_ = probe.release(context.Background())
		probe = nil
		// A confined worker is allowed its bundle's file as it was when the worker
		// started; one replaced in between (by another jean2 that still renames bundles
		// into the cache) is refused it. A new worker is allowed the file as it is now.
		if attempt < 2 && refusedOwnBundle(err, ft.program) {
			fl.h.log.Debug("worker refused its bundle; starting another", "tool", f.Name, "error", err)
			continue
		}
		return nil, nil, started, info, err
	}
}

func (fl *folderLoader) storeMeta(f loader.Folder, metaKey string, info workerproto.InitializeResult, runtime string) {
	raw, _ := json.Marshal(definitionMeta{Definition: info.Definition, Shape: info.Shape, Runtime: runtime, Warnings: info.Warnings})
	if err := fl.loader.StoreMeta(metaKey, raw); err != nil {
		fl.h.log.Warn("cache definition", "folder", f.Dir, "error", err)
	}
}

// sharedPool is a worker pool of a JavaScript tool (unconfined, or confined to one scope:
// confinedshare.go), which the tool's next versions share as long as their workers would be
// started exactly the same way (runtime, flags, environment, folder, launcher and its
// sandbox spec): a new version is loaded into the running workers
// as another module (worker.Module), so that a saved change does not wait for a new process
// to start. Calls in flight finish on the module they started on; each version closes its
// own module when it retires, and the last one out closes the pool. The workers recycle
// themselves after a number of modules, so memory stays bounded.
//
// Versions are the same tool folder, so they share a process only while they are also the
// same principal in every other respect: no declared variable has a value (a new version's
// code runs before its declaration is known, and must not see its predecessor's), and,
// confined, nothing declared (confinedshare.go).
type sharedPool struct {
	pool *worker.Pool
	key  string // launcherKey of its workers
	// Confined workers: the scope they serve, their network (closed with the pool) and what
	// else goes with the pool (a probe's scratch folder).
	scope   poolScope
	net     *sandbox.Exit
	cleanup func()

	// placeholder: the pool's main module names no bundle (its processes were started
	// before the bundle was made: earlystart.go); each version adds its own module.
	placeholder bool

	mu   sync.Mutex
	refs int // versions using it; 0 once closed
}

// retain takes a reference; false means the pool is already closed.
func (s *sharedPool) retain() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs == 0 {
		return false
	}
	s.refs++
	return true
}

// release drops a reference; the last one closes the pool.
func (s *sharedPool) release(ctx context.Context) error {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	s.mu.Unlock()
	if !last {
		return nil
	}
	err := s.pool.Close(ctx)
	s.net.Close()
	if s.cleanup != nil {
		s.cleanup()
	}
	return err
}

// shareWith returns the previous version's pool, retained, when this version may load into
// its workers: both unconfined JavaScript, and workers of this version (with the variables
// vars) started exactly as the previous version's were. Nil means this version starts
// workers of its own.
func (t *folderTool) shareWith(prev *version, vars map[string]string) *sharedPool {
	if prev == nil || t.confined() || t.kindName == gotool.KindGo || len(vars) > 0 {
		return nil
	}
	pt, ok := prev.tool.(*folderTool)
	if !ok || pt.confined() {
		return nil
	}
	pt.mu.Lock()
	shared := pt.shared
	pt.mu.Unlock()
	if shared == nil || shared.key != t.launchKey(vars) || !shared.retain() {
		return nil
	}
	return shared
}

// probePool makes the pool of the worker that loads a new version to learn its definition,
// held once (sharedPool.release closes it). A confined one gets a scratch folder of its own
// as its only writable place (and no declared permissions: the definition that declares
// them is not known yet), removed with the pool; the worker may have filled it with links:
// fsutil.RemoveTree removes them and never what they point to.
func (t *folderTool) probePool() (*sharedPool, error) {
	if !t.confined() {
		p, _, key := t.newPool(nil, poolScope{}, false)
		return &sharedPool{pool: p, key: key, refs: 1}, nil
	}
	dir, err := os.MkdirTemp(t.fl.h.layout.Temp, "load-")
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", t.name, err)
	}
	// The probe's workers get a network of their own too, with nothing allowed: the
	// declaration is not known yet.
	scope := poolScope{tempDir: dir}
	p, wn, key := t.newPool(nil, scope, true)
	return &sharedPool{pool: p, key: key, scope: scope, net: wn, cleanup: func() { _ = fsutil.RemoveTree(dir) }, refs: 1}, nil
}

func (t *folderTool) runtimeKind() string { return t.kindName }

// versionLabel is the version people see: VERSION or package.json's version, else the start
// of the content hash.
func versionLabel(semver, hash string) string {
	if semver != "" {
		return semver
	}
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// folderTool runs one version of a folder tool in worker pools.
type folderTool struct {
	fl      *folderLoader
	name    string // the folder's name, for logs before the definition is known
	dir     string // the tool's folder
	program string // what the worker loads: the bundle, or the Go tool's binary
	hash    string // the version's content hash (approvals are per version)
	// launcher says how to start an unconfined worker with the given environment, extra
	// runtime flags (Node's permission model) and JavaScript heap cap (MB, 0 for none).
	launcher func(env, flags []string, heapMB int) worker.Launcher
	// runtimeDir goes first on the worker's PATH (the node or bun binary's folder).
	runtimeDir string
	// What the sandbox needs to know: the executable the worker runs (node, bun, the Go
	// binary), the runtime's own folder, the worker script, the runtime's version.
	executable     string
	rtRoot         string
	script         string
	runtimeVersion string
	kindName       string                 // node, bun or go
	scripts        *loader.InstallScripts // the install scripts it declares, nil for none
	mech           sandbox.Mechanism
	ownMemoryMB    int // package.json "jean2": {"memoryMB"}
	def            tool.Definition
	env            map[string]string // declared variables with values

	// moduleDir, for a tool confined by Landlock, is the folder of its folder's bundles
	// (program is its link there), which its workers may read, every version's: the next
	// versions load into them. "" when they cannot (confinedshare.go).
	moduleDir string

	mu sync.Mutex
	// Unconfined: one pool serves every call, perhaps shared with other versions of the
	// folder, and module is this version's in it.
	shared *sharedPool
	module *worker.Module
	// Confined, while the folder is edited: the pool of the worker that learned this
	// version's definition, which the next version's learns in (learnerMod is this one's).
	learner    *sharedPool
	learnerMod *worker.Module
	pools      map[string]*scopedPool // confined: one pool per scope (workspace, allowed paths, temp, session)
	reapTimer  *time.Timer            // armed while a scope's pool is idle (reapLaterLocked)
	closed     bool
	reaping    sync.WaitGroup // closes of idle pools; closePool waits for them
}

// scopedPool is this version's module in the pool of the workers confined to one scope,
// which later versions may share (adoptScopes).
type scopedPool struct {
	shared   *sharedPool
	module   *worker.Module
	active   int // calls using it; it is not reaped while any is
	lastUsed time.Time
}

func (t *folderTool) Definition() tool.Definition { return t.def }

// confined reports whether workers are held to file rules fixed at their start, so that
// each scope needs workers of its own.
func (t *folderTool) confined() bool {
	return t.mech == sandbox.Landlock || t.mech == sandbox.NodePermissions || t.mech == sandbox.Seatbelt
}

// sandboxName is what Rules.Sandbox tells the worker: "landlock" when Landlock and seccomp
// confine its own code, "seatbelt" when macOS's Seatbelt does (its refusals are EPERM).
func (t *folderTool) sandboxName() string {
	switch t.mech {
	case sandbox.Landlock:
		return "landlock"
	case sandbox.Seatbelt:
		return "seatbelt"
	}
	return ""
}

// launchKey says how an unconfined worker of this version with the variables toolVars is
// started: two versions whose keys are equal may share workers.
func (t *folderTool) launchKey(toolVars map[string]string) string {
	return launcherKey(t.launcherFor(toolVars, poolScope{}, nil))
}

// launcherKey says how a launcher starts a worker: two launchers whose keys are equal start
// workers exactly alike (sandbox spec and network included).
func launcherKey(l worker.Launcher) string {
	return l.Kind + "\x00" + l.Path + "\x00" + l.Dir + "\x00\x00" + strings.Join(l.Args, "\x00") + "\x00\x00" + strings.Join(l.Env, "\x00")
}

// newPool makes a pool of workers with the variables toolVars serving scope. For a
// confined tool where the machine allows it, the pool's workers get a network namespace of
// their own whose only way out is an egress proxy for the tool (probing: one that allows
// nothing); the caller closes it (sandbox.Exit.Close, nil-safe) after the pool. key is the
// workers' launcherKey.
func (t *folderTool) newPool(toolVars map[string]string, scope poolScope, probing bool) (*worker.Pool, *sandbox.Exit, string) {
	h := t.fl.h
	var wn *sandbox.Exit
	var netErr error
	if t.confined() && (h.sb.status.NetNS || h.sb.status.NetLandlock || h.sb.status.Seatbelt) && h.sb.status.Launcher != "" {
		wn, netErr = t.newWorkerNet(probing)
	}
	l := t.launcherFor(toolVars, scope, wn)
	if netErr != nil {
		l.Prepare = func() error { return netErr }
	}
	return worker.NewPool(l, worker.PoolOptions{
		Name: t.name, Logger: h.log, MaxWorkers: h.opts.MaxWorkers,
		IdleTimeout: h.opts.IdleTimeout, KillGrace: h.opts.KillGrace,
		NoteStderr: outOfMemoryLine,
		// An answer over the result limit is refused by its length, unread (resultLineLimit).
		MaxResponseSize: resultLineLimit(h.sb.limits),
		// A confined worker's rules allow its own bundle only, or its folder's (moduleDir); a
		// Go tool is its binary.
		Modules: (!t.confined() || t.moduleDir != "") && t.kindName != gotool.KindGo,
		Init: workerproto.InitializeParams{
			ProtocolVersion: workerproto.Version, Bundle: t.program, ToolDir: t.dir,
			Rules: workerproto.Rules{Blocked: policy.BlockedRoots(), Sensitive: policy.SensitivePatterns(), Home: h.home, Languages: tool.Languages(), Sandbox: t.sandboxName()},
		},
	}), wn, launcherKey(l)
}

// launcherFor says how to start a worker of this version with the variables toolVars
// serving scope, in the network wn (nil: the host's).
func (t *folderTool) launcherFor(toolVars map[string]string, scope poolScope, wn *sandbox.Exit) worker.Launcher {
	h := t.fl.h
	tempDir := h.layout.Temp
	if t.confined() && scope.tempDir != "" {
		// TMPDIR must be a place the worker may write: the session's own folder.
		tempDir = scope.tempDir
	}
	env := policy.WorkerEnv(policy.BaseEnv{RuntimeDir: t.runtimeDir, Home: h.home, TempDir: tempDir, TZ: serverVar(h.opts.ServerEnv, "TZ")}, toolVars)
	if wn != nil {
		env = append(env, wn.Env()...) // last, so a tool's own variables cannot override them
	}
	heapMB := 0
	if h.sb.status.Mode != sandbox.ModeOff {
		// Three quarters of the memory cap: the heap limit is met first and fails cleanly
		// ("JavaScript heap out of memory") before allocations start failing at random.
		heapMB = t.memoryMB() * 3 / 4
	}
	base := t.launcher(env, nil, heapMB)
	return t.sandboxLauncher(base, scope, wn, func(flags []string) worker.Launcher { return t.launcher(env, flags, heapMB) })
}

// workers returns the pool for a call's scope and a func to call when the call is done
// with it. Unconfined tools have one pool; confined ones one per scope, made on first use
// and closed once idle for the idle timeout.
func (t *folderTool) workers(scope poolScope) (*worker.Module, func(), error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, nil, fmt.Errorf("tool %s: %w", t.name, worker.ErrPoolClosed)
	}
	if !t.confined() {
		if t.shared == nil {
			p, _, key := t.newPool(t.env, poolScope{}, false)
			t.shared, t.module = &sharedPool{pool: p, key: key, refs: 1}, p.Main()
		}
		return t.module, func() {}, nil
	}
	now := time.Now()
	t.reapIdleLocked(now)
	key := t.poolKey(scope)
	sp := t.pools[key]
	if sp == nil {
		if t.pools == nil {
			t.pools = map[string]*scopedPool{}
		}
		p, wn, launch := t.newPool(t.env, scope, false)
		sp = &scopedPool{shared: &sharedPool{pool: p, key: launch, scope: scope, net: wn, refs: 1}, module: p.Main()}
		t.pools[key] = sp
	}
	sp.active++
	sp.lastUsed = now
	t.fl.h.served.note(&sp.shared.scope, now)
	return sp.module, func() {
		t.mu.Lock()
		sp.active--
		sp.lastUsed = time.Now()
		if sp.active == 0 {
			t.reapLaterLocked()
		}
		t.mu.Unlock()
	}, nil
}

// reapLaterLocked arms the tool's reap timer, unless it is armed, for when the first idle
// pool reaches the idle timeout. Each session has pools of its own, so a session nobody
// uses any more must not hold its pools (their network namespace and proxy; the workers
// stop by themselves) until the tool's next call; t.mu must be held.
func (t *folderTool) reapLaterLocked() {
	idle := t.fl.h.idleTimeout()
	if idle < 0 || t.reapTimer != nil || t.closed {
		return
	}
	next := time.Duration(-1)
	now := time.Now()
	for _, sp := range t.pools {
		if wait := max(sp.lastUsed.Add(idle).Sub(now), 0); sp.active == 0 && (next < 0 || wait < next) {
			next = wait
		}
	}
	if next < 0 {
		return
	}
	t.reapTimer = time.AfterFunc(next+10*time.Millisecond, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.reapTimer = nil
		if !t.closed {
			t.reapIdleLocked(time.Now())
			t.reapLaterLocked()
		}
	})
}

// reapIdleLocked closes the pools of scopes no call has used for the idle timeout (their
// workers have stopped by then); t.mu must be held.
func (t *folderTool) reapIdleLocked(now time.Time) {
	idle := t.fl.h.opts.IdleTimeout
	if idle == 0 {
		idle = 5 * time.Minute
	}
	if idle < 0 {
		return
	}
	for key, sp := range t.pools {
		if sp.active == 0 && now.Sub(sp.lastUsed) >= idle {
			delete(t.pools, key)
			t.reaping.Add(1)
			go func() { defer t.reaping.Done(); _ = sp.close(context.Background()) }()
		}
	}
}

// takeGroupPools takes out the pools of the scopes whose cgroup is group or beneath it (a
// session that ends, a workspace removed), for the caller to close.
func (t *folderTool) takeGroupPools(group string) []*scopedPool {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*scopedPool
	for key, sp := range t.pools {
		if g := sp.shared.scope.group; g == group || strings.HasPrefix(g, group+"/") {
			delete(t.pools, key)
			out = append(out, sp)
		}
	}
	return out
}

func (t *folderTool) closePool(ctx context.Context) error {
	t.mu.Lock()
	pools := []*scopedPool{}
	for _, sp := range t.pools {
		pools = append(pools, sp)
	}
	shared, module := t.shared, t.module
	learner, learnerMod := t.learner, t.learnerMod
	t.shared, t.module, t.learner, t.learnerMod, t.pools, t.closed = nil, nil, nil, nil, nil, true
	if t.reapTimer != nil {
		t.reapTimer.Stop()
	}
	t.mu.Unlock()
	var errs []error
	if shared != nil {
		// This version's calls finish on its module; the workers carry on for the versions
		// that share them.
		errs = append(errs, module.Close(ctx), shared.release(ctx))
	}
	if learner != nil {
		errs = append(errs, learnerMod.Close(ctx), learner.release(ctx))
	}
	for _, sp := range pools {
		errs = append(errs, sp.close(ctx))
	}
	t.reaping.Wait()
	return errors.Join(errs...)
}

func (t *folderTool) Execute(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
	if err := t.checkApproval(); err != nil {
		return tool.Result{Error: err.Error()}
	}
	// Each session has workers of its own, in its cgroup (cgroups.go).
	mod, done, err := t.workers(t.fl.h.callScope(c))
	if err != nil {
		return tool.Result{Error: err.Error()}
	}
	defer done()
	// A limit the call goes past (log volume, pending asks) stops it with the limit as the
	// cause (the pool binds the handler to the call: callHandler.BindStop).
	wc := &workerCall{limits: callLimits{limits: t.fl.h.sb.limits, tool: t.def.Name, callID: c.CallID}}
	wc.handler = callHandler{c: c, limits: &wc.limits}
	raw, err := mod.Execute(ctx, worker.Call{
		ID: c.CallID, Input: args, Timeout: t.def.TimeoutDuration(),
		Context: workerproto.CallContext{
			SessionID: c.SessionID, WorkspacePath: c.Workspace, WorkspaceID: c.WorkspaceID,
			AllowedPaths: c.AllowedPaths, TempDir: c.TempDir, Env: callEnv(c),
		},
	}, &wc.handler)
	var limitErr *LimitError
	if errors.As(err, &limitErr) && ctx.Err() == nil {
		return tool.Result{Error: limitErr.Error()}
	}
	var big *jsonrpc.ResponseTooLongError
	if errors.As(err, &big) {
		return tool.Result{Error: resultTooLong(t.fl.h.sb.limits, t.def.Name, c.CallID, big).Error()}
	}
	if err != nil {
		return tool.Result{Error: t.describeFailure(err)}
	}
	if err := checkResultSize(t.fl.h.sb.limits, t.def.Name, c.CallID, len(raw)); err != nil {
		return tool.Result{Error: err.Error()}
	}
	return parseResult(t.def.Name, raw)
}

// workerCall is what a worker call needs beside its context, in one allocation.
type workerCall struct {
	handler callHandler
	limits  callLimits
}

// describeFailure names the memory limit when a worker died of it.
func (t *folderTool) describeFailure(err error) string {
	var exit *worker.ExitError
	if errors.As(err, &exit) && t.fl.h.sb.status.Mode != sandbox.ModeOff && outOfMemory(exit.Noted, exit.Stderr) {
		if mb := t.memoryMB(); mb > 0 {
			how := fmt.Sprintf("exited with code %d", exit.Code)
			if exit.Signal != "" {
				how = "was killed by " + exit.Signal
			}
			said := ""
			for _, l := range append(append([]string(nil), exit.Noted...), exit.Stderr...) {
				if outOfMemoryLine(l) {
					said = l
					break
				}
			}
			return fmt.Sprintf("tool %s ran out of memory: it exceeded the memory limit of %d MB per worker (MemoryMB; a tool may ask for more with package.json \"jean2\": {\"memoryMB\": N}); worker %d %s after writing: %s", t.def.Name, mb, exit.PID, how, said)
		}
	}
	return err.Error()
}

// parseResult reads what a worker returned as a ToolResult, refusing anything else with a
// message that says what a ToolResult is. This is on every call: the common result is read
// in one pass by parseResultFast, the rest with encoding/json.
func parseResult(name string, raw json.RawMessage) tool.Result {
	if res, ok := parseResultFast(raw); ok {
		return res
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return tool.Errorf("tool %s returned %s; a ToolResult is an object {success, result?, error?, visualization?}", name, describeJSON(trimmed))
	}
	var wire struct {
		Success       json.RawMessage `json:"success"`
		Result        json.RawMessage `json:"result"`
		Data          json.RawMessage `json:"data"`
		Error         json.RawMessage `json:"error"`
		Summary       json.RawMessage `json:"summary"`
		Visualization json.RawMessage `json:"visualization"`
		Content       json.RawMessage `json:"content"`
		ProtocolError json.RawMessage `json:"protocolError"`
	}
	if err := json.Unmarshal(trimmed, &wire); err != nil {
		return tool.Errorf("tool %s returned invalid JSON: %v", name, err)
	}
	res := tool.Result{Result: wire.Result, Data: wire.Data, Visualization: wire.Visualization}
	if len(wire.Content) > 0 && string(wire.Content) != "null" {
		if err := json.Unmarshal(wire.Content, &res.Content); err != nil {
			return tool.Errorf("tool %s returned a malformed ToolResult: \"content\" is not a list of content blocks {type, text?, data?, mimeType?, uri?, resource?}: %v", name, err)
		}
	}
	if len(wire.ProtocolError) > 0 && string(wire.ProtocolError) != "null" {
		if err := json.Unmarshal(wire.ProtocolError, &res.ProtocolError); err != nil {
			return tool.Errorf("tool %s returned a malformed ToolResult: \"protocolError\" is not {code, message, data?}: %v", name, err)
		}
	}
	switch string(wire.Success) {
	case "true":
		res.Success = true
	case "false":
	default:
		return tool.Errorf("tool %s returned an object without a boolean \"success\"; a ToolResult is {success, result?, error?, visualization?}", name)
	}
	var err error
	if res.Error, err = optionalString(wire.Error); err != nil {
		return tool.Errorf("tool %s returned a malformed ToolResult: \"error\" %v", name, err)
	}
	if res.Summary, err = optionalString(wire.Summary); err != nil {
		return tool.Errorf("tool %s returned a malformed ToolResult: \"summary\" %v", name, err)
	}
	return res
}

// parseResultFast reads a well-formed result in one pass, its raw members aliasing raw. It
// gives up (ok false) on whatever it does not read exactly as parseResult's encoding/json
// path would: escaped keys or strings, keys that match a member only ignoring case, repeated
// members, a missing or non-boolean success, anything invalid.
func parseResultFast(raw json.RawMessage) (res tool.Result, ok bool) {
	var seen uint8
	once := func(bit uint8) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	ok = jsonrpc.ObjectFields(raw, func(key []byte, escaped bool, v []byte) bool {
		if escaped {
			return false
		}
		switch string(key) {
		case "success":
			if !once(1) {
				return false
			}
			switch string(v) {
			case "true":
				res.Success = true
			case "false":
			default:
				return false
			}
		case "result":
			res.Result = v
			return once(2)
		case "data":
			res.Data = v
			return once(4)
		case "visualization":
			res.Visualization = v
			return once(8)
		case "error":
			s, ok := plainString(v)
			res.Error = s
			return ok && once(16)
		case "summary":
			s, ok := plainString(v)
			res.Summary = s
			return ok && once(32)
		case "content", "protocolError":
			return false // rare, and decoded: parseResult's path
		default:
			return !resultKeyFold(key)
		}
		return true
	})
	return res, ok && seen&1 != 0
}

// plainString reads a JSON string without escapes and of ASCII only (what encoding/json
// would decode to the same bytes), or null as "".
func plainString(v []byte) (string, bool) {
	if string(v) == "null" {
		return "", true
	}
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' || c >= 0x80 {
			return "", false
		}
	}
	return string(v[1 : len(v)-1]), true
}

// resultKeyFold reports whether encoding/json might match key to a ToolResult member
// (it ignores case, and folds some non-ASCII letters).
func resultKeyFold(key []byte) bool {
	for _, k := range [...]string{"success", "result", "data", "error", "summary", "visualization", "content", "protocolError"} {
		if strings.EqualFold(string(key), k) {
			return true
		}
	}
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// optionalString decodes a JSON string that may be absent or null.
func optionalString(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("must be a string")
	}
	return s, nil
}

func describeJSON(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// serverVar returns a variable of the server's environment (the last entry wins).
func serverVar(env []string, name string) string {
	val := ""
	for _, kv := range env {
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			val = kv[len(name)+1:]
		}
	}
	return val
}

// sameEnv reports whether two sets of variables are equal; a changed .env makes a new
// version, since a worker's environment is fixed when it starts.
func sameEnv(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// prepareJS bundles a JavaScript or TypeScript folder (cached) for its runtime.
func (fl *folderLoader) prepareJS(ctx context.Context, f loader.Folder, res *folderResult) (*folderTool, string, error) {
	rt, err := fl.runtime(f.RuntimePreference)
	if err != nil {
		return nil, "", err
	}
	res.runtime = rt.Kind
	b, err := fl.loader.Load(ctx, f, loader.LoadOptions{Runtime: rt.Kind})
	if err != nil {
		return nil, "", err
	}
	if rt.Kind != node.KindBun {
		// A bundle that imports bun:* or whose own code uses the Bun global cannot run on
		// Node: it runs on Bun whatever the preference, or fails to load saying so.
		use, err := loader.BunUsage(b.Path, b.Folder)
		if err != nil {
			return nil, "", err
		}
		if use != nil {
			bun, err := fl.runtime(node.KindBun)
			if err != nil {
				return nil, "", fmt.Errorf("this tool uses Bun APIs (%s): install Bun ≥ %s (https://bun.sh); %v", use, node.MinBun(), err)
			}
			fl.h.log.Info("tool uses Bun APIs: running it on Bun", "tool", b.Name, "uses", use.String(), "preferred", rt.Kind)
			rt = bun
			res.runtime = rt.Kind
		}
	}
	res.label = versionLabel(b.Version, b.Hash)
	cache := fl.h.layout.Cache
	return &folderTool{
		fl: fl, name: b.Name, dir: b.Folder, program: b.Path, runtimeDir: rt.Dir(),
		executable: rt.Path, rtRoot: sandbox.RuntimeRoot(rt.Path, fl.h.home), script: node.ScriptPath(cache),
		runtimeVersion: rt.Version, kindName: rt.Kind, scripts: b.InstallScripts,
		launcher: jsLauncher(rt, cache, b.Folder),
	}, b.Hash, nil
}

// jsLauncher says how a JavaScript tool's unconfined worker is started on rt in the tool
// folder dir (folderTool.launcher).
func jsLauncher(rt node.Runtime, cache, dir string) func(env, flags []string, heapMB int) worker.Launcher {
	return func(env, flags []string, heapMB int) worker.Launcher {
		return node.NewLauncher(rt, node.LauncherOptions{CacheDir: cache, Env: env, Dir: dir, Flags: flags, MaxOldSpaceMB: heapMB})
	}
}

// prepareGo builds a Go tool folder with the local toolchain (cached by content hash).
func (fl *folderLoader) prepareGo(ctx context.Context, f loader.Folder) (*folderTool, string, error) {
	tc, sdk, err := fl.goToolchain()
	if err != nil {
		return nil, "", err
	}
	bin, err := gotool.Build(ctx, tc, gotool.BuildOptions{
		Folder: f.Dir, CacheDir: fl.h.layout.Cache, SDKModule: sdk,
		Env: gotool.BuildEnv(tc, fl.h.opts.ServerEnv),
	})
	if err != nil {
		return nil, "", err
	}
	return &folderTool{
		fl: fl, name: f.Name, dir: f.Dir, program: bin.Path, executable: bin.Path, kindName: gotool.KindGo,
		launcher: func(env, _ []string, _ int) worker.Launcher { return gotool.NewLauncher(bin, env, f.Dir) },
	}, bin.Hash, nil
}

// goToolchain finds the Go toolchain and writes the SDK module Go tools build against,
// once per host.
func (fl *folderLoader) goToolchain() (gotool.Toolchain, string, error) {
	fl.goOnce.Do(func() {
		fl.goTC, fl.goErr = gotool.Detect(fl.h.opts.GoPath)
		if fl.goErr != nil {
			fl.goErr = fmt.Errorf("Go tool folders are built with the Go toolchain: %w", fl.goErr)
			return
		}
		fl.goSDK, fl.goErr = jean2.WriteSDKModule(filepath.Join(fl.h.layout.Cache, "gosdk"))
	})
	return fl.goTC, fl.goSDK, fl.goErr
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// refusedOwnBundle reports whether a load failed because the worker was refused its own
// bundle (EACCES on the bundle's path).
func refusedOwnBundle(err error, bundle string) bool {
	msg := err.Error()
	return bundle != "" && strings.Contains(msg, "EACCES") && strings.Contains(msg, bundle)
}
