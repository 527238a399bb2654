package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// WorkspaceMCPOptions configure the MCP servers of workspaces' own .jean2/mcp.json files
// (those of $JEAN2_HOME/mcp.json come through Config.Host.Sources).
type WorkspaceMCPOptions struct {
	// Off leaves the workspaces' files alone.
	Off bool
	// Poll is how often the files are read again to pick up edits (default 10 s). A
	// workspace made, moved or deleted through the API is picked up at once.
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts to reach a server that
	// failed (mcpclient's defaults when zero: 1 s, doubling up to 1 min).
	MinBackoff, MaxBackoff time.Duration
}

// workspaceMCPFile is where a workspace lists its MCP servers.
func workspaceMCPFile(workspacePath string) string {
	return mcpclient.WorkspaceConfigPath(workspacePath)
}

// workspaceMCP connects the MCP servers each workspace lists in its .jean2/mcp.json and
// offers their tools to the host as one tool source (host.ToolSource): they join the
// registry, so the harness, tool runs and /mcp call them like any other tool. A tool runs
// only in calls of its own workspace; another workspace's call gets an error saying whose
// it is. A server that fails is listed (problems) with its error and retried with backoff
// by mcpclient.
//
// A workspace's file is started only when a person trusted its content (mcpclient.Trust):
// an untrusted one is listed as a problem saying what it wants to start and how to trust
// it, and kept in untrusted for the web client's question (GET /api/workspaces/{id}/mcp-trust).
//
// Names: a tool is offered as mcpclient names it, mcp__<server>__<tool>, unless another
// tool has that name — one of $JEAN2_HOME's servers, or of another workspace's server of
// the same name — and then its workspace's name, then its workspace's id, joins the server's
// (mcp__<workspace>_<server>__<tool>) until it is unique.
type workspaceMCP struct {
	opts   WorkspaceMCPOptions
	client mcpclient.Options
	trust  *mcpclient.Trust
	log    *slog.Logger

	changed chan struct{} // cap 1: a server's tools changed; the loop reloads the host
	resync  chan struct{} // cap 1: the workspaces changed; the loop reads them again

	mu       sync.Mutex
	closed   bool
	host     *host.Host            // the host's tools now, to keep clear of their names; nil until it exists
	byWS     map[string]*wsServers // workspace id → its servers
	wrapped  map[wrapKey]*wsTool   // kept while unchanged, so the host keeps their versions
	offered  map[string]*wsTool    // name offered → tool, as of the last Tools
	problems []mcpProblem          // as of the last Tools
	// untrusted are the workspaces whose file no person trusted, as of the last sync.
	untrusted map[string]mcpclient.WorkspaceFile
}

// wsServers are the servers of one workspace's mcp.json.
type wsServers struct {
	ws  store.Workspace
	sum string // of the file when its servers were started
	m   *mcpclient.Manager
}

// mcpProblem is a server (or an mcp.json) of a workspace that offers no tools now.
type mcpProblem struct {
	WorkspaceID string
	Source      string // "mcp:<server>", or "mcp.json:<file>" for a file that cannot be used
	Error       string
}

type wrapKey struct {
	workspaceID, name string
	inner             uintptr
}

// wsTool is a tool of a workspace's MCP server, as the host serves it.
type wsTool struct {
	inner                      tool.Tool
	def                        tool.Definition // inner's, with the name it is offered under
	workspaceID, workspacePath string
	workspaceName, server      string
}

func (t *wsTool) Definition() tool.Definition { return t.def }

func (t *wsTool) Execute(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
	mine := c.WorkspaceID == t.workspaceID || (c.WorkspaceID == "" && filepath.Clean(c.Workspace) == t.workspacePath)
	if !mine {
		return tool.Errorf("tool %s comes from MCP server %s of workspace %s (%s); it runs only in that workspace's sessions",
			t.def.Name, t.server, t.workspaceName, workspaceMCPFile(t.workspacePath))
	}
	return t.inner.Execute(ctx, c, args)
}

func newWorkspaceMCP(opts WorkspaceMCPOptions, client mcpclient.Options, trust *mcpclient.Trust, log *slog.Logger) *workspaceMCP {
	if opts.Poll <= 0 {
		opts.Poll = 10 * time.Second
	}
	client.MinBackoff, client.MaxBackoff = opts.MinBackoff, opts.MaxBackoff
	return &workspaceMCP{opts: opts, client: client, trust: trust, log: log,
		changed: make(chan struct{}, 1), resync: make(chan struct{}, 1),
		byWS: map[string]*wsServers{}, wrapped: map[wrapKey]*wsTool{}, offered: map[string]*wsTool{},
		untrusted: map[string]mcpclient.WorkspaceFile{}}
}

// Name, Kind and Tools make workspaceMCP a host.ToolSource.
func (w *workspaceMCP) Name() string { return "mcp:workspaces" }
func (w *workspaceMCP) Kind() string { return "mcp" }

var _ host.ToolSource = (*workspaceMCP)(nil)

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// setHost tells the source the host it feeds, once the host exists.
func (w *workspaceMCP) setHost(h *host.Host) {
	w.mu.Lock()
	w.host = h
	w.mu.Unlock()
}

// workspacesChanged has the loop read the workspaces again now.
func (w *workspaceMCP) workspacesChanged() { kick(w.resync) }

// run keeps the servers in line with the workspaces and their files and reloads the host
// when tools change, until ctx ends.
func (w *workspaceMCP) run(ctx context.Context, list func(context.Context) ([]store.Workspace, error), reload func(context.Context)) {
	tick := time.NewTicker(w.opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.changed:
		case <-w.resync:
			if !w.syncFrom(ctx, list) {
				continue
			}
		case <-tick.C:
			if !w.syncFrom(ctx, list) {
				continue
			}
		}
		reload(ctx)
	}
}

// syncFrom reads the workspaces and syncs to them; it reports whether servers changed.
func (w *workspaceMCP) syncFrom(ctx context.Context, list func(context.Context) ([]store.Workspace, error)) bool {
	wss, err := list(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("workspace MCP servers: list the workspaces", "error", err)
		}
		return false
	}
	return w.sync(wss)
}

// sync starts the servers of workspaces whose mcp.json is new or changed and trusted, and
// stops those of workspaces that are gone or whose file changed, went or lost its trust; it
// reports whether any did. A file is read once: the bytes hashed for the trust are the
// bytes started.
func (w *workspaceMCP) sync(wss []store.Workspace) bool {
	if w.opts.Off {
		return false
	}
	type wanted struct {
		ws   store.Workspace
		file mcpclient.WorkspaceFile
	}
	want := map[string]wanted{}
	untrusted := map[string]mcpclient.WorkspaceFile{}
	for _, ws := range wss {
		file := mcpclient.ReadWorkspaceFile(ws.Path)
		if !file.Present {
			continue
		}
		ok, err := w.trust.Trusted(file)
		if err != nil {
			w.log.Warn("workspace MCP servers: the trust store cannot be read; nothing is started", "workspace", ws.ID, "error", err)
		}
		if !ok {
			untrusted[ws.ID] = file
			continue
		}
		want[ws.ID] = wanted{ws, file}
	}
	var stop []*mcpclient.Manager
	changed := false
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	for id, file := range untrusted {
		if old, ok := w.untrusted[id]; !ok || old.SHA256 != file.SHA256 {
			w.log.Warn("workspace MCP servers not started: the file is not trusted", "workspace", id, "file", file.Path, "sha256", file.SHA256, "commands", file.Commands())
			changed = true // the problems listed change
		}
	}
	if len(untrusted) != len(w.untrusted) {
		changed = true
	}
	w.untrusted = untrusted
	for id, cur := range w.byWS {
		if nw, ok := want[id]; ok && nw.file.SHA256 == cur.sum && nw.ws.Path == cur.ws.Path {
			cur.ws = nw.ws // a new name shows in prefixes at the next Tools
			delete(want, id)
			continue
		}
		stop = append(stop, cur.m)
		delete(w.byWS, id)
		changed = true
	}
	for id, nw := range want {
		cfg, loadErr := nw.file.Config()
		opts := w.client
		opts.Roots = append([]string{nw.ws.Path}, nw.ws.AllowedPaths...) // the workspace's folders
		m := mcpclient.New(cfg, loadErr, opts)
		m.OnChange(func() { kick(w.changed) })
		// Start connects in the background; a done context has it return at once.
		started, cancel := context.WithCancel(context.Background())
		cancel()
		m.Start(started)
		w.byWS[id] = &wsServers{ws: nw.ws, sum: nw.file.SHA256, m: m}
		changed = true
		w.log.Info("workspace MCP servers started", "workspace", nw.ws.ID, "file", nw.file.Path, "servers", len(cfg.Servers))
	}
	w.mu.Unlock()
	closeManagers(stop)
	return changed
}

// untrustedFile is the workspace's file not started for want of trust, as of the last sync.
func (w *workspaceMCP) untrustedFile(workspaceID string) (mcpclient.WorkspaceFile, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, ok := w.untrusted[workspaceID]
	return f, ok
}

func closeManagers(ms []*mcpclient.Manager) {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Close()
		}()
	}
	wg.Wait()
}

// close stops every server; Tools offers nothing from then on.
func (w *workspaceMCP) close() {
	w.mu.Lock()
	w.closed = true
	var stop []*mcpclient.Manager
	for _, s := range w.byWS {
		stop = append(stop, s.m)
	}
	w.byWS = map[string]*wsServers{}
	w.mu.Unlock()
	closeManagers(stop)
}

// candidate is a tool of a workspace's server before it is named.
type candidate struct {
	srv   *wsServers
	name  string // the server's own name, without "mcp:"
	inner tool.Tool
	level int // how much prefix its name needs (see offeredName)
}

// remoteNamed is a tool that knows its MCP server's name and its own there (mcpclient's).
type remoteNamed interface {
	Remote() (server, tool string)
}

// offeredName is the name c is offered under at its level: mcpclient's
// mcp__<server>__<tool>, then with the workspace's name, then its id, joined to the
// server's, so that two workspaces' servers of one name stay apart.
func (c candidate) offeredName() string {
	base := c.inner.Definition().Name
	r, ok := c.inner.(remoteNamed)
	if c.level == 0 || !ok {
		return base
	}
	server, remote := r.Remote()
	if c.level == 1 {
		return mcpclient.QualifiedName(c.srv.ws.Name+"_"+server, remote)
	}
	return mcpclient.QualifiedName(c.srv.ws.ID+"_"+server, remote)
}

// Tools lists the tools of every workspace's servers that are up, named apart from the
// host's other tools and from each other; the servers that are not up are kept as
// problems. It never fails: one workspace's broken server must not hide the others.
func (w *workspaceMCP) Tools() ([]tool.Tool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	servers := make([]*wsServers, 0, len(w.byWS))
	for _, s := range w.byWS {
		servers = append(servers, s)
	}
	sort.Slice(servers, func(i, j int) bool {
		if servers[i].ws.Name != servers[j].ws.Name {
			return servers[i].ws.Name < servers[j].ws.Name
		}
		return servers[i].ws.ID < servers[j].ws.ID
	})
	var cands []candidate
	var problems []mcpProblem
	for _, s := range servers {
		for _, src := range s.m.Sources() {
			tools, err := src.Tools()
			if err != nil {
				problems = append(problems, mcpProblem{WorkspaceID: s.ws.ID, Source: src.Name(), Error: err.Error()})
				continue
			}
			for _, t := range tools {
				cands = append(cands, candidate{srv: s, name: strings.TrimPrefix(src.Name(), "mcp:"), inner: t})
			}
		}
	}
	// Names the host has that are not ours.
	taken := map[string]bool{}
	if w.host != nil {
		for _, d := range w.host.Registry().List() {
			if _, ours := w.offered[d.Name]; !ours {
				taken[d.Name] = true
			}
		}
	}
	// Raise the level of every tool whose name clashes until none does.
	for range 3 {
		count := map[string]int{}
		for _, c := range cands {
			count[c.offeredName()]++
		}
		clash := false
		for i := range cands {
			if n := cands[i].offeredName(); (count[n] > 1 || taken[n]) && cands[i].level < 2 {
				cands[i].level++
				clash = true
			}
		}
		if !clash {
			break
		}
	}
	out := make([]tool.Tool, 0, len(cands))
	wrapped := map[wrapKey]*wsTool{}
	offered := map[string]*wsTool{}
	for _, c := range cands {
		name := c.offeredName()
		key := wrapKey{workspaceID: c.srv.ws.ID, name: name}
		if v := reflect.ValueOf(c.inner); v.Kind() == reflect.Pointer {
			key.inner = v.Pointer()
		}
		t := w.wrapped[key]
		if t == nil || key.inner == 0 || t.workspacePath != c.srv.ws.Path || t.workspaceName != c.srv.ws.Name {
			def := c.inner.Definition()
			def.Name = name
			t = &wsTool{inner: c.inner, def: def, workspaceID: c.srv.ws.ID, workspacePath: filepath.Clean(c.srv.ws.Path),
				workspaceName: c.srv.ws.Name, server: c.name}
		}
		wrapped[key] = t
		offered[name] = t
		out = append(out, t)
	}
	w.wrapped, w.offered, w.problems = wrapped, offered, problems
	return out, nil
}

// owner returns the workspace tool offered under name, if it is one.
func (w *workspaceMCP) owner(name string) (*wsTool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.offered[name]
	return t, ok
}

// foreign returns the names of the tools offered by workspaces other than workspaceID.
func (w *workspaceMCP) foreign(workspaceID string) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for name, t := range w.offered {
		if t.workspaceID != workspaceID {
			out[name] = true
		}
	}
	return out
}

// listProblems returns the servers that offer no tools now, and the files not started
// because no person trusted them.
func (w *workspaceMCP) listProblems() []mcpProblem {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.problems)
	ids := make([]string, 0, len(w.untrusted))
	for id := range w.untrusted {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		f := w.untrusted[id]
		out = append(out, mcpProblem{WorkspaceID: id, Source: "mcp.json:" + f.Path, Error: (&mcpclient.UntrustedError{File: f}).Error()})
	}
	return out
}

// withholdKeys wraps getenv so that a workspace's mcp.json — which may come with a
// repository nobody checked — cannot put a provider key or a jean2 setting into a
// server's environment or headers through ${NAME}.
func withholdKeys(getenv func(string) string, keyNames func() []string) func(string) string {
	return func(name string) string {
		if policy.ReservedEnv(name) || slices.Contains(keyNames(), name) {
			return ""
		}
		return getenv(name)
	}
}

// scopedTools is the harness's Invoker: the host, with RegistryFor giving a workspace's
// sessions the host's tools without those of other workspaces' MCP servers.
type scopedTools struct {
	*host.Host
	w *workspaceMCP

	mu    sync.Mutex
	cache map[string]scopedRegistry // workspace id → registry made from base
}

type scopedRegistry struct {
	base, reg *tool.Registry
	foreign   string // the foreign names it left out, joined
}

// RegistryFor returns the tools a session of the workspace is offered.
func (s *scopedTools) RegistryFor(workspaceID string) *tool.Registry {
	base := s.Host.Registry()
	foreign := s.w.foreign(workspaceID)
	if len(foreign) == 0 {
		return base
	}
	names := make([]string, 0, len(foreign))
	for n := range foreign {
		names = append(names, n)
	}
	sort.Strings(names)
	key := strings.Join(names, "\x00")
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.cache[workspaceID]; ok && c.base == base && c.foreign == key {
		return c.reg
	}
	reg := tool.NewRegistry()
	for _, d := range base.List() {
		if foreign[d.Name] {
			continue
		}
		if t, ok := base.Lookup(d.Name); ok {
			if err := reg.Register(t); err != nil {
				s.w.log.Warn("a tool left out of a workspace's list", "tool", d.Name, "error", err)
			}
		}
	}
	if s.cache == nil {
		s.cache = map[string]scopedRegistry{}
	}
	s.cache[workspaceID] = scopedRegistry{base: base, reg: reg, foreign: key}
	return reg
}

// Invoke runs the call as the host does, except that a workspace's call never learns of
// another workspace's MCP tools: one named is unknown to it, and an unknown tool's error
// lists only the tools the workspace is offered.
func (s *scopedTools) Invoke(ctx context.Context, call host.Call) host.Outcome {
	if call.Workspace.ID == "" {
		return s.Host.Invoke(ctx, call) // a call by folder: the tool checks the folder (wsTool)
	}
	foreign := s.w.foreign(call.Workspace.ID)
	if len(foreign) == 0 {
		return s.Host.Invoke(ctx, call)
	}
	if foreign[call.Tool] {
		return host.Outcome{CallID: call.CallID, Tool: call.Tool, Result: tool.Result{Error: s.unknown(call)}.Normalize()}
	}
	out := s.Host.Invoke(ctx, call)
	if !out.Result.Success && strings.HasPrefix(out.Result.Error, "unknown tool ") {
		out.Result.Error = s.unknown(call)
	}
	return out
}

// unknown says the call's tool is unknown, naming the tools of the call's workspace.
func (s *scopedTools) unknown(call host.Call) string {
	defs := s.RegistryFor(call.Workspace.ID).List()
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	sort.Strings(names)
	return fmt.Sprintf("unknown tool %q: available tools are %s", call.Tool, strings.Join(names, ", "))
}

// The harness narrows a session's offered tools through this; say at build time that it can.
var _ harness.WorkspaceTools = (*scopedTools)(nil)
