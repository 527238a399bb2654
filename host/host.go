package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/llm"
	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// Options configure a Host. The zero value of every field has a sensible default.
type Options struct {
	Layout Layout
	// Builtins are Go tools compiled into the binary (package builtin). A tool folder with
	// a built-in's name replaces it only when the built-in is turned off (DisabledBuiltins),
	// else it is listed as shadowed; any other clash is the later tool's error.
	Builtins []tool.Tool
	// DisabledBuiltins names built-ins that are not served ($JEAN2_HOME/config.json's
	// "disabledBuiltins"); Host.SetDisabledBuiltins adds the server settings' list.
	DisabledBuiltins []string
	// Folders, when not nil, are the only tool folders the host loads, in place of the
	// folders under Layout.Tools (an empty list loads none): `jean2 tools validate` and
	// `jean2 tools test` load just the folder they look at, so other broken tools neither
	// slow them nor fill their output with warnings. Paths must be absolute.
	Folders []string
	// Sources supply tools from elsewhere (MCP servers); they follow folder tools and are
	// prefixed with the source's name on a clash.
	Sources []ToolSource
	// SourceSets supply sources that may come and go while the host runs (the servers of an
	// mcp.json edited then): each reload lists them as they are then, after Sources.
	SourceSets []SourceSet
	// RuntimePreference is JEAN2_RUNTIME: "node", "bun" or "" (Node when installed, else Bun).
	RuntimePreference string
	// BunPath and NodePath point at runtimes outside PATH (tests use them).
	BunPath, NodePath string
	// GoPath points at the go command for Go tool folders (default: PATH, then
	// /usr/local/go/bin/go).
	GoPath string
	// ServerEnv is the server's environment, the second source of declared variables'
	// values after $JEAN2_HOME/.env. Nil means os.Environ().
	ServerEnv []string
	// WithheldEnv names more variables that no tool receives, even one that declares them,
	// beside policy.ReservedEnv's. New adds the key variables $JEAN2_HOME/providers.json
	// names (policy.ProviderKeyNames), so every command that makes a host withholds them,
	// and removes them all from ServerEnv.
	WithheldEnv []string
	// LLM serves ctx.llm; nil says that no provider is configured.
	LLM tool.LLM
	// Grants remembers permissions; nil keeps them in memory for the host's life.
	Grants *ask.Grants
	// Sandbox confines worker processes (docs/security.md). Its zero value confines
	// nothing: set Mode and Launcher (the jean2 command does).
	Sandbox SandboxOptions
	// Limits cap what one worker or call may use (memory, tasks, result and visualization
	// size, log volume, pending asks); zero fields take the defaults.
	Limits Limits
	// Worker pool limits; zero values take the runtime's defaults.
	MaxWorkers  int
	IdleTimeout time.Duration
	KillGrace   time.Duration
	Logger      *slog.Logger
}

// Host owns the live set of tools. It is safe for concurrent use.
type Host struct {
	layout Layout
	home   string
	opts   Options
	log    *slog.Logger
	llm    tool.LLM
	grants *ask.Grants
	loader *folderLoader
	sb     *hostSandbox

	cat      atomic.Pointer[catalog]
	temps    sync.Map     // session id → its temporary folder, once created
	tempFS   tempMounts   // the temporary scopes mounted as tmpfs
	pins     sandbox.Pins // where each workspace folder and allowed path led when first served
	kept     sync.Map     // path of a result KeepResult wrote → struct{}: written once
	reloadMu sync.Mutex   // one reload at a time
	// disabledBuiltins are the built-ins the server's settings turn off (under reloadMu).
	disabledBuiltins []string

	tempQuota sessionTempQuota // sessions whose temporary folder is over Limits.SessionTempMB
	served    servedScope      // the scope a confined tool's call was last served in (prestart.go)
	early     earlyStarts      // processes started for tool folders that appeared (earlystart.go)

	subMu sync.Mutex
	subs  map[int]chan<- ToolsChanged
	next  int
}

// ToolsChanged is sent to subscribers after a reload changed the list, or a tool's load
// failed anew (Failed: a changed tool that does not load keeps its last version serving,
// so nothing else changes, yet the person must hear why their change is not live).
type ToolsChanged struct {
	Added, Changed, Removed []string
	Failed                  []ToolFailure
}

// ToolFailure is a tool whose last load failed, and why.
type ToolFailure struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// New makes a host and loads every tool folder once. A broken tool is listed with its
// error; only a problem with the host's own set-up fails New.
func New(ctx context.Context, opts Options) (*Host, error) {
	if opts.Layout.Home == "" {
		l, err := LayoutFromEnv(os.Getenv)
		if err != nil {
			return nil, err
		}
		opts.Layout = l
	}
	if err := opts.Layout.Ensure(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.ServerEnv == nil {
		opts.ServerEnv = os.Environ()
	}
	keys, err := policy.ProviderKeyNames(opts.Layout.Home)
	if err != nil {
		return nil, err
	}
	opts.WithheldEnv = append(slices.Clone(opts.WithheldEnv), keys...)
	opts.ServerEnv = policy.WithoutEnv(opts.ServerEnv, opts.WithheldEnv)
	if opts.LLM == nil {
		opts.LLM = llm.Unconfigured{}
	}
	if opts.Grants == nil {
		opts.Grants = ask.NewGrants(nil)
	}
	userHome, _ := os.UserHomeDir()
	h := &Host{
		layout: opts.Layout, home: userHome, opts: opts, log: opts.Logger,
		llm: opts.LLM, grants: opts.Grants, subs: map[int]chan<- ToolsChanged{},
	}
	h.sb = newHostSandbox(opts, userHome)
	h.pins.Stater = h.sb.stat
	h.giveSessionCgroups()
	if h.sb.status.Mode != sandbox.ModeOff {
		h.log.Debug("sandbox", "protection", h.sb.status.Summary(), "pids", h.sb.status.Pids)
	}
	fl, err := newFolderLoader(h)
	if err != nil {
		_ = h.sb.close()
		return nil, err
	}
	h.loader = fl
	h.cleanStaleTemps()
	h.sweepTempMounts()
	h.cat.Store(emptyCatalog())
	if err := h.Reload(ctx); err != nil {
		_ = h.Close(context.Background())
		return nil, err
	}
	return h, nil
}

// Layout returns where the host keeps its files.
func (h *Host) Layout() Layout { return h.layout }

// Tools lists every tool, serving or broken, sorted by name.
func (h *Host) Tools() []Entry {
	return append([]Entry(nil), h.cat.Load().entries...)
}

// Tool returns one tool's entry.
func (h *Host) Tool(name string) (Entry, bool) {
	for _, e := range h.cat.Load().entries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Registry returns the serving tools as a registry snapshot (for ListForLLM and the like).
func (h *Host) Registry() *tool.Registry { return h.cat.Load().registry }

// Subscribe delivers a ToolsChanged after each reload that changed the list, until the
// returned cancel is called. A slow subscriber misses events rather than blocking reloads.
func (h *Host) Subscribe(ch chan<- ToolsChanged) (cancel func()) {
	h.subMu.Lock()
	id := h.next
	h.next++
	h.subs[id] = ch
	h.subMu.Unlock()
	return func() {
		h.subMu.Lock()
		delete(h.subs, id)
		h.subMu.Unlock()
	}
}

func (h *Host) publish(ev ToolsChanged) {
	if len(ev.Added)+len(ev.Changed)+len(ev.Removed)+len(ev.Failed) == 0 {
		return
	}
	h.subMu.Lock()
	defer h.subMu.Unlock()
	for _, ch := range h.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// Close retires every version (letting calls in flight finish, bounded by ctx) and stops
// all workers.
func (h *Host) Close(ctx context.Context) error {
	h.early.close()
	cat := h.cat.Swap(emptyCatalog())
	var errs []error
	for _, v := range cat.versions {
		if err := v.retire(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", v.def.Name, err))
		}
	}
	// A built-in that holds something of its own (the shell's background commands and
	// cgroups) ends it with the host.
	for _, t := range h.opts.Builtins {
		if c, ok := t.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close built-in %s: %w", t.Definition().Name, err))
			}
		}
	}
	errs = append(errs, h.sb.close())
	errs = append(errs, h.unmountTemps())
	return errors.Join(errs...)
}

// catalog is one immutable snapshot of the tool set.
type catalog struct {
	entries  []Entry                 // every tool, sorted by name
	versions map[string]*version     // serving versions by tool name
	registry *tool.Registry          // the serving tools
	broken   map[string]string       // tool or folder name → why it cannot be called
	folders  map[string]*version     // folder path → its serving version, for reuse on reload
	results  map[string]folderResult // folder path → what the last load made of it
	loaded   bool                    // made by a reload, not the empty start
}

func emptyCatalog() *catalog {
	return &catalog{versions: map[string]*version{}, registry: tool.NewRegistry(), broken: map[string]string{}, folders: map[string]*version{}, results: map[string]folderResult{}}
}

// unavailable explains why name cannot be called.
func (c *catalog) unavailable(name string) string {
	if why, ok := c.broken[name]; ok {
		return fmt.Sprintf("tool %s cannot be used: %s", name, why)
	}
	names := make([]string, 0, len(c.versions))
	for n := range c.versions {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Sprintf("unknown tool %q: no tools are available", name)
	}
	return fmt.Sprintf("unknown tool %q: available tools are %s", name, strings.Join(names, ", "))
}

// Validate loads one tool folder, wherever it is, the way a reload would, and reports the
// entry it would list. Nothing is added to the live set.
func (h *Host) Validate(ctx context.Context, dir string) Entry {
	f := loader.Inspect(dir)
	r := h.loader.loadFresh(ctx, f, nil, nil)
	if r.err != nil {
		return Entry{Name: f.Name, Folder: f.Dir, Version: r.label, Kind: f.Kind, Runtime: r.runtime, Status: StatusError, Error: r.err.Error()}
	}
	defer func() { _ = r.fresh.retire(ctx) }()
	e := r.fresh.entry
	e.Env = h.envStatus(r.fresh.def.Env)
	return e
}
