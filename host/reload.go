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
// watcher knows which folders changed).
func (h *Host) reload(ctx context.Context, only map[string]bool) error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	h.sb.resolvePlaces()
	old := h.cat.Load()

	var folders []loader.Folder
	if h.opts.Folders != nil {
		for _, dir := range h.opts.Folders {
			folders = append(folders, loader.Inspect(dir))
		}
	} else {
		var err error
		folders, err = loader.Discover(h.layout.Tools)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("scan tools folder %s: %w", h.layout.Tools, err)
		}
	}

	// Load folders in parallel; each result stands alone, so one bad tool cannot stop the
	// others.
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
	h.early.drop(only)

	next := emptyCatalog()
	next.loaded = true
	var retire []*version
	claim := func(name, owner string) error {
		if prev, taken := next.versions[name]; taken {
			where := "a tool compiled into jean2"
			if prev.entry.Folder != "" {
				where = "folder " + prev.entry.Folder
			}
			return fmt.Errorf("duplicate tool name %q: %s already defines it; rename one of them (%s)", name, where, owner)
		}
		return nil
	}
	// A folder tool that loads takes the name of a built-in a person turned off (listed with
	// Replaces "builtin"); beside a working built-in it is shadowed and says how to choose
	// it (installing jean2's catalogue brings its own shell, todoread, todowrite and
	// webfetch). A folder that fails to load replaces nothing.
	builtinNames, disabled := h.builtinState()
	replaced := map[string]bool{}
	for _, r := range results {
		if r.serving != nil && builtinNames[r.serving.def.Name] && disabled[r.serving.def.Name] {
			replaced[r.serving.def.Name] = true
		}
	}
	for _, t := range h.opts.Builtins {
		def := t.Definition()
		if replaced[def.Name] {
			continue
		}
		if disabled[def.Name] {
			next.entries = append(next.entries, Entry{Name: def.Name, Version: "builtin", Kind: "builtin", Runtime: "builtin", Status: StatusDisabled,
				Error: "turned off in the settings (disabledBuiltins)", Definition: &def})
			continue
		}
		v := old.versions[def.Name]
		if v == nil || v.entry.Kind != "builtin" {
			v = newVersion(Entry{Name: def.Name, Version: "builtin", Kind: "builtin", Runtime: "builtin", Status: StatusOK, Definition: &def}, def, t, nil)
			v.env = h.loader.toolEnv(def.Env)
		}
		if err := claim(def.Name, "builtin"); err != nil {
			next.broken[def.Name] = err.Error()
			continue
		}
		if err := v.register(next.registry); err != nil {
			next.entries = append(next.entries, Entry{Name: def.Name, Kind: "builtin", Runtime: "builtin", Status: StatusError, Error: err.Error()})
			next.broken[def.Name] = err.Error()
			continue
		}
		next.versions[def.Name] = v
		next.entries = append(next.entries, v.entry)
	}
	for i, r := range results {
		f := folders[i]
		next.results[f.Dir] = r
		h.logReloadFailure(old, f, r)
		v := r.serving
		if v == nil {
			e := Entry{Name: f.Name, Folder: f.Dir, Version: r.label, Kind: f.Kind, Runtime: r.runtime, Status: StatusError, Error: r.err.Error()}
			next.entries = append(next.entries, e)
			next.broken[f.Name] = r.err.Error()
			continue
		}
		name := v.def.Name
		if builtinNames[name] && !disabled[name] {
			if v != old.folders[f.Dir] {
				retire = append(retire, v)
			}
			next.entries = append(next.entries, h.shadowed(old, v.entry, f.Dir))
			continue
		}
		if err := claim(name, "folder "+f.Dir); err != nil {
			if v != old.folders[f.Dir] {
				retire = append(retire, v)
			}
			e := v.entry
			e.Status, e.Error = StatusError, err.Error()
			next.entries = append(next.entries, e)
			next.broken[f.Name] = err.Error()
			continue
		}
		if err := v.register(next.registry); err != nil {
			if v != old.folders[f.Dir] {
				retire = append(retire, v)
			}
			e := v.entry
			e.Status, e.Error = StatusError, err.Error()
			next.entries = append(next.entries, e)
			next.broken[name] = err.Error()
			continue
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
		e.Env = h.envStatus(v.def.Env)
		v.entry.Env = e.Env
		if replaced[name] {
			e.Replaces = "builtin"
		}
		next.versions[name] = v
		next.folders[f.Dir] = v
		next.entries = append(next.entries, e)
	}
	for _, src := range h.sources() {
		tools, err := src.Tools()
		if err != nil {
			e := Entry{Name: src.Name(), Kind: src.Kind(), Runtime: src.Kind(), Status: StatusError, Error: err.Error()}
			next.entries = append(next.entries, e)
			next.broken[src.Name()] = err.Error()
			continue
		}
		for _, t := range tools {
			def := t.Definition()
			if _, taken := next.versions[def.Name]; taken {
				def.Name = prefixedName(src.Name(), def.Name)
				t = renamed{Tool: t, def: def}
			}
			v := old.versions[def.Name]
			if v == nil || v.source != src || !sameTool(v.tool, t) {
				v = newVersion(Entry{Name: def.Name, Folder: "", Version: src.Name(), Kind: src.Kind(), Runtime: src.Kind(), Status: StatusOK, Definition: &def}, def, t, nil)
				v.source = src
			}
			if err := claim(def.Name, src.Name()); err != nil {
				next.broken[def.Name] = err.Error()
				continue
			}
			if err := v.register(next.registry); err != nil {
				next.entries = append(next.entries, Entry{Name: def.Name, Kind: src.Kind(), Runtime: src.Kind(), Status: StatusError, Error: err.Error()})
				next.broken[def.Name] = err.Error()
				continue
			}
			next.versions[def.Name] = v
			next.entries = append(next.entries, v.entry)
		}
	}
	sort.SliceStable(next.entries, func(i, j int) bool { return next.entries[i].Name < next.entries[j].Name })

	h.cat.Store(next)

	// Versions no longer serving drain in the background: their calls in flight finish on
	// the version they started on.
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
	return nil
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
