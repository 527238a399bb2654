package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
)

// A confined tool's new version runs in the workers its previous version started, where
// they are confined exactly as its own would be, as an unconfined tool's does (sharedPool):
// a saved change then waits for no process to start (the launcher, a network namespace,
// Landlock, Node's start: 100–400 ms on a busy machine, twice, for the worker that learns
// the definition and the one that serves the call). Two things make that possible without
// widening anything:
//
//   - The workers' rules grant the folder of the tool folder's bundles (moduleDir: links
//     to the bundles of this folder only, under jean2's cache) rather than the one bundle
//     of their version, so the rules of two versions are the same rules. A worker could
//     already read the sources these bundles are made from (its tool's folder).
//   - A version shares a worker only when a worker of its own would be started exactly the
//     same way (launcherKey: runtime, flags, environment, sandbox spec with the rules,
//     network namespace), and neither version declares permissions or has variables with
//     values (its egress proxy, which the pool keeps, then allows nothing for either, and
//     no declaration's approval can differ).
//
// The worker that learns a version's definition stays confined to a scratch folder with no
// network (probePool) and learns the next versions' too (learner); a scope's workers take
// the next version's module only once its definition is known and checked (adoptScopes),
// and load it at the first call, as a new worker would.

// linkModule links the bundle into the tool folder's own bundle folder and makes that the
// program; a failure leaves the tool confined to its one bundle (and its versions unshared).
func (t *folderTool) linkModule() {
	dir, err := t.fl.moduleDir(t.dir)
	if err != nil {
		t.fl.h.log.Warn("cannot make the folder of a tool's bundles; its versions will not share workers", "tool", t.name, "path", dir, "error", err)
		return
	}
	dst := filepath.Join(dir, filepath.Base(t.program))
	// Bundles are named by the hash of what they are made from: one already there is this
	// one.
	if err := os.Link(t.program, dst); err != nil && !errors.Is(err, fs.ErrExist) {
		t.fl.h.log.Warn("cannot link a tool's bundle; its versions will not share workers", "tool", t.name, "path", dst, "error", err)
		return
	}
	t.program, t.moduleDir = dst, dir
}

// moduleDir makes the folder of a tool folder's bundles, under jean2's cache.
func (fl *folderLoader) moduleDir(toolDir string) (string, error) {
	dir := filepath.Join(fl.h.layout.Cache, "modules", sha256Hex(policy.Real(toolDir))[:32])
	return dir, os.MkdirAll(dir, 0o755)
}

// sharesConfined reports whether this version's confined workers may serve other versions
// of its folder: nothing declared (so nothing approved, and its proxy allows nothing), no
// variable with a value.
func (t *folderTool) sharesConfined() bool {
	return t.moduleDir != "" && len(t.env) == 0 && !sandbox.Declares(t.def.Permissions)
}

// shareLearner returns the pool of the worker that learned the previous version's
// definition, retained, when this version's probe would be started exactly as it was.
func (t *folderTool) shareLearner(prev *version) *sharedPool {
	if prev == nil || t.moduleDir == "" {
		return nil
	}
	pt, ok := prev.tool.(*folderTool)
	if !ok {
		return nil
	}
	pt.mu.Lock()
	learner := pt.learner
	pt.mu.Unlock()
	if learner == nil || launcherKey(t.launcherFor(nil, learner.scope, learner.net)) != learner.key || !learner.retain() {
		return nil
	}
	return learner
}

// adoptScopes takes, for each scope the previous version's workers serve, those workers for
// this version (its module is added to their pool and loaded at its first call there)
// when both versions may share them and this version's workers for that scope would be
// started exactly as they were.
func (t *folderTool) adoptScopes(prev *version) {
	if prev == nil || !t.sharesConfined() {
		return
	}
	pt, ok := prev.tool.(*folderTool)
	if !ok || !pt.sharesConfined() {
		return
	}
	pt.mu.Lock()
	scopes := make(map[string]*sharedPool, len(pt.pools))
	for key, sp := range pt.pools {
		scopes[key] = sp.shared
	}
	pt.mu.Unlock()
	now := time.Now()
	for _, shared := range scopes {
		key := t.poolKey(shared.scope)
		if launcherKey(t.launcherFor(t.env, shared.scope, shared.net)) != shared.key || !shared.retain() {
			continue
		}
		mod, err := shared.pool.AddModule(t.program, t.dir)
		if err != nil {
			_ = shared.release(context.Background())
			continue
		}
		t.mu.Lock()
		if t.pools == nil {
			t.pools = map[string]*scopedPool{}
		}
		t.pools[key] = &scopedPool{shared: shared, module: mod, lastUsed: now}
		t.reapLaterLocked()
		t.mu.Unlock()
	}
}

// close ends this version's use of the scope's workers: its calls finish on its module, and
// the last version out closes the pool and its network.
func (sp *scopedPool) close(ctx context.Context) error {
	return errors.Join(sp.module.Close(ctx), sp.shared.release(ctx))
}
