package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/tool"
)

// Reload rescans the tools folder and swaps in the new set. Unchanged folders keep their
// version (and warm workers); a changed folder gets a new version while calls in flight
// finish on the old one; a change that breaks a tool keeps the last good version serving,
// with the error shown beside it.
func (h *Host) Reload(ctx context.Context) error { return h.reload(ctx, nil) }

// reload rescans the tools folder. When only is not nil, folders outside it are taken as
// unchanged and keep what the last reload made of them without being read again (the
// watcher knows which folders changed). It follows the reload habit: build the new set,
// swap it in, then stop what no longer serves.
func (h *Host) reload(ctx context.Context, only map[string]bool) error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	h.sb.resolvePlaces()
	old := h.cat.Load()

	folders, err := h.toolFolders()
	if err != nil {
		return err
	}
	results := h.loadFolders(ctx, old, folders, only)
	h.early.drop(only)

	b := h.newCatalogBuild(old, results)
	b.addBuiltins()
	for i, r := range results {
		b.addFolder(folders[i], r)
	}
	b.addSources()
	next := b.next
	sort.SliceStable(next.entries, func(i, j int) bool { return next.entries[i].Name < next.entries[j].Name })

	h.cat.Store(next)
	h.retireAndAnnounce(old, next, b.retire)
	return nil
}

// toolFolders lists the folders to load: the ones Options name, or those found in the
// tools folder (a tools folder not made yet holds none).
func (h *Host) toolFolders() ([]loader.Folder, error) {
	if h.opts.Folders != nil {
		folders := make([]loader.Folder, 0, len(h.opts.Folders))
		for _, dir := range h.opts.Folders {
			folders = append(folders, loader.Inspect(dir))
		}
		return folders, nil
	}
	folders, err := loader.Discover(h.layout.Tools)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("scan tools folder %s: %w", h.layout.Tools, err)
	}
	return folders, nil
}

// loadFolders loads the folders in parallel; each result stands alone, so one bad tool
// cannot stop the others. A folder outside only (when only is not nil) keeps its last result.
func (h *Host) loadFolders(ctx context.Context, old *catalog, folders []loader.Folder, only map[string]bool) []folderResult {
	results := make([]folderResult, len(folders))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var ahead atomic.Int32 // scope workers this reload may start ahead (prestart.go)
	ahead.Store(aheadPerReload)
	for i, f := range folders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if prev, seen := old.results[f.Dir]; only != nil && !only[f.Dir] && seen {
				results[i] = prev
				return
			}
			results[i] = h.loader.load(ctx, f, old.folders[f.Dir], &ahead)
		}()
	}
	wg.Wait()
	return results
}

// catalogBuild is the next catalog while a reload fills it: built-ins first, then folder
// tools, then sources' tools, each claiming its name; versions made for it that end up not
// serving are retired once it is stored.
type catalogBuild struct {
	h         *Host
	old, next *catalog
	retire    []*version
	// builtinNames and disabled are the built-ins and those turned off; replaced the
	// turned-off built-ins a folder tool that loads takes the name of.
	builtinNames, disabled, replaced map[string]bool
}

// newCatalogBuild starts the next catalog. A folder tool that loads takes the name of a
// built-in a person turned off (listed with Replaces "builtin"); beside a working built-in
// it is shadowed and says how to choose it (installing jean2's catalogue brings its own
// shell, todoread, todowrite and webfetch). A folder that fails to load replaces nothing.
func (h *Host) newCatalogBuild(old *catalog, results []folderResult) *catalogBuild {
	b := &catalogBuild{h: h, old: old, next: emptyCatalog(), replaced: map[string]bool{}}
	b.next.loaded = true
	b.builtinNames, b.disabled = h.builtinState()
	for _, r := range results {
		if r.serving != nil && b.builtinNames[r.serving.def.Name] && b.disabled[r.serving.def.Name] {
			b.replaced[r.serving.def.Name] = true
		}
	}
	return b
}

// claim fails when name is already taken in the next catalog, saying by whom.
func (b *catalogBuild) claim(name, owner string) error {
	if prev, taken := b.next.versions[name]; taken {
		where := "a tool compiled into jean2"
		if prev.entry.Folder != "" {
			where = "folder " + prev.entry.Folder
		}
		return fmt.Errorf("duplicate tool name %q: %s already defines it; rename one of them (%s)", name, where, owner)
	}
	return nil
}

// fail lists an entry that cannot serve and records why under key.
func (b *catalogBuild) fail(e Entry, key string) {
	b.next.entries = append(b.next.entries, e)
	b.next.broken[key] = e.Error
}

// serve lists v, serving under name.
func (b *catalogBuild) serve(name string, v *version, e Entry) {
	b.next.versions[name] = v
	b.next.entries = append(b.next.entries, e)
}

// addBuiltins adds the tools compiled into jean2, keeping the old version of each so its
// state carries over; turned-off ones are listed as disabled and replaced ones left out.
func (b *catalogBuild) addBuiltins() {
	for _, t := range b.h.opts.Builtins {
		def := t.Definition()
		if b.replaced[def.Name] {
			continue
		}
		if b.disabled[def.Name] {
			b.next.entries = append(b.next.entries, Entry{Name: def.Name, Version: "builtin", Kind: "builtin", Runtime: "builtin", Status: StatusDisabled,
				Error: "turned off in the settings (disabledBuiltins)", Definition: &def})
			continue
		}
		v := b.old.versions[def.Name]
		if v == nil || v.entry.Kind != "builtin" {
			v = newVersion(Entry{Name: def.Name, Version: "builtin", Kind: "builtin", Runtime: "builtin", Status: StatusOK, Definition: &def}, def, t, nil)
			v.env = b.h.loader.toolEnv(def.Env)
		}
		if err := b.claim(def.Name, "builtin"); err != nil {
			b.next.broken[def.Name] = err.Error()
			continue
		}
		if err := v.register(b.next.registry); err != nil {
			b.fail(Entry{Name: def.Name, Kind: "builtin", Runtime: "builtin", Status: StatusError, Error: err.Error()}, def.Name)
			continue
		}
		b.serve(def.Name, v, v.entry)
	}
}

// addFolder adds what loading folder f came to: an error, a tool shadowed by a built-in or
// clashing with a name already taken, or a version serving (the last good one when the
// folder's change is broken).
func (b *catalogBuild) addFolder(f loader.Folder, r folderResult) {
	b.next.results[f.Dir] = r
	b.h.logReloadFailure(b.old, f, r)
	v := r.serving
	if v == nil {
		b.fail(Entry{Name: f.Name, Folder: f.Dir, Version: r.label, Kind: f.Kind, Runtime: r.runtime, Status: StatusError, Error: r.err.Error()}, f.Name)
		return
	}
	name := v.def.Name
	// A version made by this reload that does not serve must stop; one the old catalog
	// serves stops when the swap retires it.
	unused := func() {
		if v != b.old.folders[f.Dir] {
			b.retire = append(b.retire, v)
		}
	}
	if b.builtinNames[name] && !b.disabled[name] {
		unused()
		b.next.entries = append(b.next.entries, b.h.shadowed(b.old, v.entry, f.Dir))
		return
	}
	if err := b.claim(name, "folder "+f.Dir); err != nil {
		unused()
		e := v.entry
		e.Status, e.Error = StatusError, err.Error()
		b.fail(e, f.Name)
		return
	}
	if err := v.register(b.next.registry); err != nil {
		unused()
		e := v.entry
		e.Status, e.Error = StatusError, err.Error()
		b.fail(e, name)
		return
	}
	e := v.entry
	if r.err != nil {
		// The folder changed and the change is broken: the last good version serves.
		label := r.label
		if label == "" || label == v.entry.Version {
			label = "the changed folder"
		}
		e.Error = fmt.Sprintf("%s failed to load: %v; still serving %s", label, r.err, v.entry.Version)
	}
	e.Env = b.h.envStatus(v.def.Env)
	v.entry.Env = e.Env
	if b.replaced[name] {
		e.Replaces = "builtin"
	}
	b.next.folders[f.Dir] = v
	b.serve(name, v, e)
}

// addSources adds the tools of the host's sources (MCP servers and the like); a name
// already taken gets the source's prefix.
func (b *catalogBuild) addSources() {
	for _, src := range b.h.sources() {
		tools, err := src.Tools()
		if err != nil {
			b.fail(Entry{Name: src.Name(), Kind: src.Kind(), Runtime: src.Kind(), Status: StatusError, Error: err.Error()}, src.Name())
			continue
		}
		for _, t := range tools {
			def := t.Definition()
			if _, taken := b.next.versions[def.Name]; taken {
				def.Name = prefixedName(src.Name(), def.Name)
				t = renamed{Tool: t, def: def}
			}
			v := b.old.versions[def.Name]
			if v == nil || v.source != src || !sameTool(v.tool, t) {
				v = newVersion(Entry{Name: def.Name, Folder: "", Version: src.Name(), Kind: src.Kind(), Runtime: src.Kind(), Status: StatusOK, Definition: &def}, def, t, nil)
				v.source = src
			}
			if err := b.claim(def.Name, src.Name()); err != nil {
				b.next.broken[def.Name] = err.Error()
				continue
			}
			if err := v.register(b.next.registry); err != nil {
				b.fail(Entry{Name: def.Name, Kind: src.Kind(), Runtime: src.Kind(), Status: StatusError, Error: err.Error()}, def.Name)
				continue
			}
			b.serve(def.Name, v, v.entry)
		}
	}
}

// retireAndAnnounce stops the versions no longer serving and tells listeners what
// changed. The versions drain in the background: their calls in flight finish on the
// version they started on.
func (h *Host) retireAndAnnounce(old, next *catalog, retire []*version) {
	var ev ToolsChanged
	for name, v := range old.versions {
		nv, ok := next.versions[name]
		switch {
		case !ok:
			ev.Removed = append(ev.Removed, name)
			retire = append(retire, v)
		case nv != v:
			ev.Changed = append(ev.Changed, name)
			retire = append(retire, v)
		}
	}
	for name := range next.versions {
		if _, ok := old.versions[name]; !ok {
			ev.Added = append(ev.Added, name)
		}
	}
	for _, v := range retire {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if err := v.retire(ctx); err != nil {
				h.log.Warn("stop retired tool version", "tool", v.def.Name, "version", v.entry.Version, "error", err)
			}
		}()
	}
	ev.Failed = newFailures(old.entries, next.entries)
	sort.Strings(ev.Added)
	sort.Strings(ev.Changed)
	sort.Strings(ev.Removed)
	h.publish(ev)
}

// builtinState returns the built-ins' names and those a person turned off (config.json's
// disabledBuiltins and the server's settings).
func (h *Host) builtinState() (names, disabled map[string]bool) {
	names, disabled = map[string]bool{}, map[string]bool{}
	for _, t := range h.opts.Builtins {
		names[t.Definition().Name] = true
	}
	for _, n := range h.opts.DisabledBuiltins {
		disabled[n] = true
	}
	for _, n := range h.disabledBuiltins {
		disabled[n] = true
	}
	return names, disabled
}

// shadowed is the entry of a folder tool that has the name of a built-in which serves:
// the person is told (tools list, the web's tools page, the log once) and how to choose
// the folder's tool instead.
func (h *Host) shadowed(old *catalog, e Entry, dir string) Entry {
	e.Status = StatusShadowed
	e.Error = fmt.Sprintf("folder tool %s (%s) has the name of jean2's built-in %s, which serves; to use the folder's tool instead, "+
		`turn the built-in off (add %q to "disabledBuiltins" in $JEAN2_HOME/config.json or the server's settings), or rename the folder's tool`,
		e.Name, dir, e.Name, e.Name)
	for _, o := range old.entries {
		if o.Folder == dir && o.Status == StatusShadowed {
			return e
		}
	}
	h.log.Warn("tool folder shadowed by a built-in", "tool", e.Name, "folder", dir, "why", e.Error)
	return e
}

// folderResult is what loading one folder came to.
type folderResult struct {
	serving *version // the version to serve: the fresh one, or the previous one kept
	fresh   *version // the version built from the folder as it is now, when it loaded
	err     error    // why the folder as it is now cannot serve
	label   string   // the version label of the folder as it is now
	runtime string
}

// definitionMeta is what the host caches beside a bundle so a start with cached bundles
// needs no worker to know the tool.
type definitionMeta struct {
	Definition tool.Definition `json:"definition"`
	Shape      string          `json:"shape"`
	Runtime    string          `json:"runtime"`
	Warnings   []string        `json:"warnings,omitempty"`
}

func (h *Host) envStatus(names []string) []EnvStatus {
	if len(names) == 0 {
		return nil
	}
	vals := h.loader.toolEnv(names)
	out := make([]EnvStatus, len(names))
	for i, n := range names {
		_, set := vals[n]
		out[i] = EnvStatus{Name: n, Set: set, Withheld: h.loader.withheld(n)}
	}
	return out
}

// SetDisabledBuiltins turns the named built-in tools off, beside Options.DisabledBuiltins
// (the server's settings change this list while it runs), and reloads so the change takes
// effect: a turned-off built-in is listed with status "disabled" and cannot be called.
func (h *Host) SetDisabledBuiltins(ctx context.Context, names []string) error {
	h.reloadMu.Lock()
	h.disabledBuiltins = append([]string(nil), names...)
	h.reloadMu.Unlock()
	return h.Reload(ctx)
}

// sameTool reports whether a source handed back the same tool as before, so an unchanged
// tool keeps its version (and no change event is sent for it).
func sameTool(a, b tool.Tool) bool {
	if ra, ok := a.(renamed); ok {
		a = ra.Tool
	}
	if rb, ok := b.(renamed); ok {
		b = rb.Tool
	}
	// Only pointers have an identity to compare; other tool values (tool.Func holds a
	// function) cannot be compared and count as new.
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// logReloadFailure warns, once per new failure, when a reload finds a folder broken: serve
// and mcp run unattended, and /api/tools is not where a person editing a tool looks. The
// first load says nothing (the tool list shows it); an error already reported is not
// repeated on every rescan.
func (h *Host) logReloadFailure(old *catalog, f loader.Folder, r folderResult) {
	if !old.loaded || r.err == nil {
		return
	}
	if prev, seen := old.results[f.Dir]; seen && prev.err != nil && prev.err.Error() == r.err.Error() {
		return
	}
	if r.serving != nil {
		h.log.Warn(fmt.Sprintf("tool %s failed to reload: %v; still serving %s", f.Name, r.err, r.serving.entry.Version), "tool", r.serving.def.Name, "folder", f.Dir)
		return
	}
	h.log.Warn(fmt.Sprintf("tool %s failed to load: %v", f.Name, r.err), "tool", f.Name, "folder", f.Dir)
}

// newFailures lists the tools whose load error is new since the last catalog (a tool that
// failed before with the same error is not news).
func newFailures(before, after []Entry) []ToolFailure {
	was := make(map[string]string, len(before))
	for _, e := range before {
		was[e.Name] = e.Error
	}
	var out []ToolFailure
	for _, e := range after {
		if e.Error != "" && was[e.Name] != e.Error {
			out = append(out, ToolFailure{Name: e.Name, Error: e.Error})
		}
	}
	return out
}
