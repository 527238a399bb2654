package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/jean2/jean2/mcpserver"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/cluster"
	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/schedule"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/undo"
)

// DBFile is the database's file name in $JEAN2_HOME.
const DBFile = "jean2.db"

// tokenEnv is the variable a client may hold the API token in: never handed on to a tool
// or an MCP server the server starts.
const tokenEnv = "JEAN2_TOKEN"

// Config is what a server is made from. jean2 serve fills it from its flags and the
// environment; tests fill it by hand.
type Config struct {
	// Host configures the tool host: Layout (whose Home is $JEAN2_HOME), the sandbox,
	// runtimes, tool sources (MCP clients) and ServerEnv (nil: os.Environ()). Open sets
	// its LLM and Grants, and removes the providers' key variables from ServerEnv.
	Host host.Options
	// Getenv reads the environment for provider configuration (nil: os.Getenv).
	Getenv func(string) string
	// ProviderOptions are handed to every provider made (nil: the defaults).
	ProviderOptions *provider.Options
	// AllowedHosts are the names, besides localhost and IP addresses, that requests may
	// give as their Host (jean2 serve --allowed-host): any other is refused (DNS rebinding).
	AllowedHosts []string
	// UserHome is the user's home folder, whose credential folders no workspace may be
	// (default: os.UserHomeDir()).
	UserHome string
	// MCPWorkspace is the folder /mcp calls work in when the client names no workspace
	// (default: the current folder).
	MCPWorkspace string
	// Web serves the client at / (web.Handler); nil serves a page saying it is not built.
	Web http.Handler
	// SubscriberBuffer is how many live events a WebSocket client may fall behind before
	// the server closes it with 4008 (slow subscriber); 0 → hub.DefaultSubscriberBuffer.
	SubscriberBuffer int
	// WorkspaceMCP configures the MCP servers of workspaces' .jean2/mcp.json files.
	WorkspaceMCP WorkspaceMCPOptions
	// MCPPrompts are the prompts of the MCP servers of $JEAN2_HOME/mcp.json, which /mcp
	// offers beside the skills (mcpserver.Options.Imports); nil offers none.
	MCPPrompts mcpserver.PromptImports
	// Watch, when set, keeps the tool folders watched (host.Watch) while the server runs.
	Watch *host.WatchOptions
	// Durability is when a commit reaches the disk (store.ParseDurability of
	// JEAN2_DB_SYNC in jean2 serve): "" or normal survives a crash of the process, full
	// survives a power cut too at an fsync per commit.
	Durability store.Durability
	// DatabaseURL, a postgres:// URL, puts the store on that PostgreSQL database instead
	// of $JEAN2_HOME/jean2.db (jean2 serve reads JEAN2_DATABASE_URL or the config file's
	// databaseURL). Durability is then the server's own.
	DatabaseURL string
	// System is the harness's system prompt ("" for its default, harness.DefaultSystem);
	// the settings' systemPrompt replaces it when set.
	System  string
	Version string
	Logger  *slog.Logger
	// DBPath is the database file ("" → $JEAN2_HOME/jean2.db): instances of a cluster on one
	// host share one file.
	DBPath string
	// Cluster makes this server one of several instances sharing the database
	// (docs/deploy.md); the zero value is a lone instance.
	Cluster ClusterConfig
	// Terminals bounds the web client's terminals (terminals.go).
	Terminals TerminalOptions
	// Schedules configures the scheduled sessions this instance runs.
	Schedules ScheduleConfig
	// Push configures Web Push notifications (push.go); the zero value works.
	Push PushOptions
}

// Server is jean2's agent server. Make it with Open, serve Handler, end with Close.
type Server struct {
	cfg       Config
	log       *slog.Logger
	db        *store.DB
	host      *host.Host
	hub       *hub.Hub
	harness   *harness.Harness
	snapshots *undo.Snapshots
	grants    *ask.Grants
	providers *Providers
	settings  *liveSettings
	mcp       mcpServers
	wsMCP     *workspaceMCP // the MCP servers of workspaces' own mcp.json
	// mcpSandbox confines the workspaces' stdio MCP servers, under the host's sandbox mode
	// and launcher.
	mcpSandbox *host.MCPSandbox
	gate       gate           // deletes against work starting (gate.go)
	sockets    sessionSockets // open sockets by session, closed when it is deleted
	guard      *guard         // the Host allow-list, origin check and token (auth.go)
	handler    http.Handler
	// instance is this server's id (cluster.NewInstanceID, or Config.Cluster.Instance).
	instance string
	// node is the server's part of a cluster; nil for a lone instance.
	node *cluster.Node
	// sched runs the scheduled sessions (schedules.go); nil when Config.Schedules.Off.
	sched *schedule.Scheduler
	// serverAfter is the server log's last event when Open began loading what other
	// instances change (cluster only): the feed follows the log after it.
	serverAfter *int64

	// ctx lives as long as the server: sockets, tool runs and the forwarder end with it.
	ctx    context.Context
	cancel context.CancelFunc
	conns  connTracker
	bg     sync.WaitGroup // the tools.changed forwarder and the folder watcher

	closeOnce sync.Once
	closeErr  error

	// mcpSignIns are the MCP sign-ins started from the web client (mcpservers.go).
	mcpSignIns mcpSignIns
	// skillNotices are the broken skills last reported per workspace folder (skills.go).
	skillNotices skillNotices
	// terms are the open terminals (terminals.go).
	terms *terminals
	// push sends Web Push notifications of sessions nobody watches (push.go).
	push *pusher
}

// Open opens $JEAN2_HOME/jean2.db and builds the providers, the tool host, the hub, undo
// and the harness on it. The harness seals the turns a crash interrupted before Open
// returns.
func Open(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	home := cfg.Host.Layout.Home
	s := &Server{cfg: cfg, log: cfg.Logger, instance: cfg.Cluster.Instance, terms: newTerminals(cfg.Terminals)}
	if s.instance == "" {
		s.instance = cluster.NewInstanceID()
	}
	if cfg.Cluster.On || cfg.DatabaseURL != "" || store.IsPostgresURL(cfg.DBPath) {
		// One of several instances (openCluster): every line says which one wrote it.
		s.log = s.log.With("instance", s.instance)
	}

	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Whatever fails below, what was made before it is closed again.
	defer func() {
		if err != nil {
			_ = s.Close(context.Background())
		}
	}()
	if err := s.openStore(ctx); err != nil {
		return nil, err
	}
	// Every request but the client's assets, /auth and the health check carries this
	// token (or one of the database's), whatever address the server is bound to. The
	// store made home, if it was missing.
	token, err := EnsureTokenFile(home)
	if err != nil {
		return nil, fmt.Errorf("open server: %w", host.ExplainStorage("write the API token", filepath.Join(home, TokenFile), err))
	}
	if err := s.loadShared(ctx); err != nil {
		return nil, err
	}
	st := s.settings.get()
	if err := s.openHost(ctx, st); err != nil {
		return nil, err
	}
	if err := s.openCluster(cfg.Cluster); err != nil {
		return nil, err
	}
	s.startPush()
	if err := s.openHarness(ctx, st); err != nil {
		return nil, err
	}
	s.startBackground()
	s.guard = newGuard(token, s.db, cfg.AllowedHosts)
	s.handler = newJSONGzip(s.routes())
	// Last: a run may start as soon as it does (the occurrences missed while jean2 was down).
	s.startScheduler()
	return s, nil
}

// withDefaults fills what a Config may leave out.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Host.Layout.Home == "" {
		return cfg, errors.New("open server: Config.Host.Layout has no Home")
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.MCPWorkspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return cfg, fmt.Errorf("open server: the current folder (the default MCP workspace): %w", err)
		}
		cfg.MCPWorkspace = wd
	}
	if cfg.UserHome == "" {
		// Only the credential folders' check needs it: without a home there are none.
		cfg.UserHome, _ = os.UserHomeDir()
	}
	return cfg, nil
}

// openStore makes jean2's home and opens its database: PostgreSQL when the config names
// one, else SQLite in the home (or at DBPath).
func (s *Server) openStore(ctx context.Context) (err error) {
	cfg := s.cfg
	// The home first, so a disk that is full or read-only is named with the folder.
	if err := cfg.Host.Layout.Ensure(); err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	if cfg.DatabaseURL != "" {
		if s.db, err = store.OpenPostgres(ctx, cfg.DatabaseURL); err != nil {
			return fmt.Errorf("open server: %w", err)
		}
		return nil
	}
	dbPath := cfg.DBPath
	if dbPath == "" {
		dbPath = filepath.Join(cfg.Host.Layout.Home, DBFile)
	}
	if s.db, err = store.OpenWith(ctx, dbPath, store.Options{Durability: cfg.Durability}); err != nil {
		return host.ExplainStorage("open its database", dbPath, err)
	}
	return nil
}

// loadShared loads what the server keeps in its home and database: providers, settings
// and grants.
//
// In a cluster (openCluster's test) the database holds the providers every instance uses,
// and grants given anywhere are used everywhere (sharedGrants). The feed applies what other
// instances change after the server log's last event read here, before the settings,
// providers and grants are loaded: a change made in between is applied (twice at worst,
// which changes nothing), never missed.
func (s *Server) loadShared(ctx context.Context) (err error) {
	home := s.cfg.Host.Layout.Home
	clustered := s.cfg.Cluster.On || s.db.PostgresURL() != ""
	if clustered {
		last, err := s.db.LastEventSeq(ctx, "")
		if err != nil {
			return fmt.Errorf("open server: read the server log's last event: %w", err)
		}
		s.serverAfter = &last
	}
	if s.providers, err = LoadProviders(home, s.cfg.Getenv, s.cfg.ProviderOptions); err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	if err := s.providers.keepDefaultIn(ctx, s.db); err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	if clustered {
		if err := s.providers.shareIn(ctx, s.db); err != nil {
			return fmt.Errorf("open server: %w", err)
		}
	}
	if s.settings, err = loadSettings(ctx, s.db); err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	var grantStore ask.Store = s.db
	if clustered {
		grantStore = sharedGrants{Store: s.db, given: s.announceGrant}
	}
	s.grants = ask.NewGrants(&ask.GrantsOptions{Store: grantStore, Logger: s.log, Shared: clustered})
	if err := s.grants.Load(ctx); err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	return nil
}

// openHost starts the tool host, with the workspaces' MCP servers as a source of tools.
//
// The MCP servers of workspaces' own mcp.json start connecting now; their tools join the
// host when they are up. Not in a jean2 that an MCP client started as its server: those
// servers are the client's business, and could start this jean2 again.
func (s *Server) openHost(ctx context.Context, st Settings) (err error) {
	cfg := s.cfg
	home := cfg.Host.Layout.Home
	wsOpts := cfg.WorkspaceMCP
	wsOpts.Off = wsOpts.Off || cfg.Getenv(mcpclient.NestedEnv) != ""
	s.mcpSandbox = host.NewMCPSandbox(host.MCPSandboxOptions{Sandbox: cfg.Host.Sandbox, Layout: cfg.Host.Layout,
		UserHome: cfg.UserHome, MaxTasks: cfg.Host.Limits.MaxTasks, Logger: s.log})
	s.wsMCP = newWorkspaceMCP(wsOpts, mcpclient.Options{
		Getenv:  withholdKeys(cfg.Getenv, func() []string { return append(s.providers.Set().KeyEnvNames(), tokenEnv) }),
		Version: cfg.Version, Logger: s.log, Tokens: mcpclient.NewTokenStore(home), Sandbox: s.mcpSandbox,
	}, mcpclient.NewTrust(home), s.log)
	s.wsMCP.syncFrom(ctx, s.db.ListWorkspaces)

	hostOpts := cfg.Host
	hostOpts.Sources = append(slices.Clone(cfg.Host.Sources), s.wsMCP)
	// The agent's own powers (skills, memory, session search) are built-ins that need the
	// server's home and store.
	hostOpts.Builtins = append(slices.Clone(cfg.Host.Builtins), harness.AgentTools(home, s.db)...)
	hostOpts.LLM = s.providers.LLM("", "")
	hostOpts.Grants = s.grants
	hostOpts.ServerEnv = withoutKeys(hostOpts.ServerEnv, append(s.providers.Set().KeyEnvNames(), tokenEnv))
	if hostOpts.Logger == nil {
		hostOpts.Logger = s.log
	}
	if s.host, err = host.New(ctx, hostOpts); err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	s.wsMCP.setHost(s.host)
	// Where each workspace's folders lead now is kept from the start, not from their first
	// call: a folder replaced by a link in between is refused (host.PinFolder).
	if wss, err := s.db.ListWorkspaces(ctx); err == nil {
		for _, ws := range wss {
			for _, p := range append([]string{ws.Path}, ws.AllowedPaths...) {
				s.host.PinFolder(p)
			}
		}
	}
	if len(st.DisabledBuiltins) > 0 {
		if err := s.applyDisabledBuiltins(ctx, st.DisabledBuiltins); err != nil {
			return fmt.Errorf("open server: %w", err)
		}
	}
	return nil
}

// openHarness makes the hub, the undo store and the harness that runs the turns.
func (s *Server) openHarness(ctx context.Context, st Settings) (err error) {
	home := s.cfg.Host.Layout.Home
	s.hub = hub.New(hub.Options{
		AttachedElsewhere: s.attachedElsewhere(),
		Store:             s.db,
		AskTimeout:        time.Duration(st.AskTimeoutSeconds) * time.Second,
		Unattended:        func(string) tool.Asker { return s.settings.policy() },
		SubscriberBuffer:  s.cfg.SubscriberBuffer,
		Published:         s.sessionStatus,
		Unwatched:         s.notifyUnwatched,
		Logger:            s.log,
	})
	if s.snapshots, err = undo.New(undo.Options{Dir: filepath.Join(home, "undo"), Logger: s.log}); err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	if s.harness, err = harness.New(ctx, harness.Options{
		Store: s.db, Events: s.hub, Askers: s.hub, Tools: &scopedTools{Host: s.host, w: s.wsMCP}, Models: s.providers, Snapshots: s.snapshots,
		WorkRounds: st.WorkRounds, MaxRounds: st.MaxRounds, System: s.cfg.System, Home: home, Logger: s.log,
		Leases: s.leaser(), SkillsRead: s.skillsRead,
	}); err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	if s.node != nil {
		s.node.Start(s.harness, s.hub)
	}
	s.harness.SetSystem(st.SystemPrompt)
	s.harness.SetTitles(st.AutoTitle, st.TitleModel)
	return nil
}

// startBackground starts what runs beside the requests: tool changes forwarded to the
// clients, the workspaces' MCP servers kept in step, and the tool folders' watch.
func (s *Server) startBackground() {
	s.forwardToolChanges()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.wsMCP.run(s.ctx, s.db.ListWorkspaces, func(ctx context.Context) {
			if err := s.host.Reload(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("reload after a workspace's MCP servers changed", "error", err)
			}
		})
	}()
	if s.cfg.Watch != nil {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			if err := s.host.Watch(s.ctx, *s.cfg.Watch); err != nil && s.ctx.Err() == nil {
				s.log.Warn("watching the tool folders stopped; changes are picked up by restarting", "error", err)
			}
		}()
	}
}

// withoutKeys returns env without the variables named in keys, so the keys providers read
// never reach a tool (policy.ReservedEnv withholds the well-known names already; a
// providers.json may name any variable).
func withoutKeys(env []string, keys []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, name) {
			out = append(out, kv)
		}
	}
	return out
}

// forwardToolChanges publishes tools.changed on the server log after each reload that
// changed the tool list.
func (s *Server) forwardToolChanges() {
	ch := make(chan host.ToolsChanged, 16)
	unsubscribe := s.host.Subscribe(ch)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer unsubscribe()
		for {
			select {
			case ev := <-ch:
				failed := ev.Failed
				if failed == nil {
					failed = []host.ToolFailure{}
				}
				s.publishServer(s.ctx, "tools.changed", map[string]any{
					"added": nonNil(ev.Added), "changed": nonNil(ev.Changed), "removed": nonNil(ev.Removed), "failed": failed})
			case <-s.ctx.Done():
				return
			}
		}
	}()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Handler serves the API, /mcp and the web client.
func (s *Server) Handler() http.Handler { return s.handler }

// Host is the server's tool host (jean2 serve watches its folders and reloads it when an
// MCP server's tools change).
func (s *Server) Host() *host.Host { return s.host }

// Store is the server's database.
func (s *Server) Store() *store.DB { return s.db }

// Providers is the server's provider set.
func (s *Server) Providers() *Providers { return s.providers }

// Token is the local API token, kept in $JEAN2_HOME/token.
func (s *Server) Token() string { return s.guard.token }

// NewToken makes another API token, kept in the database for a client on another machine
// (jean2 serve --new-token), and returns it; it cannot be read back later.
func (s *Server) NewToken(ctx context.Context) (string, error) {
	_, secret, err := s.db.CreateAuthToken(ctx, "jean2 serve")
	return secret, err
}

// Close stops running turns (they are sealed as stopped), closes the sockets, the MCP
// servers, the tool workers and the database. ctx bounds the wait for turns and workers.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		var errs []error
		// No occurrence is claimed once the harness closes; the runs in flight see their
		// turns stopped, record it, and end.
		if s.sched != nil {
			s.sched.Stop()
		}
		if s.harness != nil {
			if err := s.harness.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("close harness: %w", err))
			}
		}
		if s.sched != nil {
			s.sched.Close()
		}
		if s.node != nil {
			s.node.Close()
		}
		s.cancel()
		s.conns.closeAndWait()
		if s.hub != nil {
			s.hub.Close()
		}
		s.bg.Wait()
		// The terminals' shells end before the host that started them.
		if err := s.terms.closeWhere(func(*liveTerminal) bool { return true }); err != nil {
			errs = append(errs, fmt.Errorf("close terminals: %w", err))
		}
		s.mcp.close()
		if s.wsMCP != nil {
			s.wsMCP.close()
		}
		if err := s.mcpSandbox.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the MCP servers' sandbox: %w", err))
		}
		if s.snapshots != nil {
			if err := s.snapshots.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close undo snapshots: %w", err))
			}
		}
		if s.host != nil {
			if err := s.host.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("close tool host: %w", err))
			}
		}
		if s.db != nil {
			if err := s.db.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close database: %w", err))
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// connTracker counts the long-lived connections (WebSockets) so Close can wait for them:
// http.Server.Shutdown does not wait for hijacked connections.
type connTracker struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (c *connTracker) add() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

func (c *connTracker) done() { c.wg.Done() }

func (c *connTracker) closeAndWait() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
}

// handlerFunc is a route that returns its error for writeErr to answer.
type handlerFunc func(http.ResponseWriter, *http.Request) error

func (s *Server) h(f handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			s.writeErr(w, r, err)
		}
	})
}

// routes is the route table of docs/api.md.
func (s *Server) routes() http.Handler {
	// The API has a mux of its own, so a wrong method on an API path is a 405 rather than
	// a request for the web client's catch-all.
	api := http.NewServeMux()
	route := func(pattern string, f handlerFunc) { api.Handle(pattern, s.h(f)) }

	route("GET /api/health", s.health)
	route("GET /api/status", s.status)
	route("POST /api/auth/codes", s.postSignIn)

	s.workspaceRoutes(route)
	s.sessionRoutes(route)

	route("GET /api/tools", s.listTools)
	route("GET /api/tools/{name}", s.getTool)
	route("POST /api/tools/{name}/run", s.runTool)
	route("POST /api/tools/{name}/grant", s.grantTool)
	route("DELETE /api/tools/{name}/grant", s.revokeTool)
	route("POST /api/tools/{name}/approve", s.approveTool)

	route("GET /api/ws", s.serverSocket)
	route("GET /api/events", s.listServerEvents)

	route("GET /api/grants", s.listGrants)
	route("DELETE /api/grants/{id}", s.deleteGrant)

	route("GET /api/providers", s.getProviders)
	route("PUT /api/providers", s.putProviders)
	route("GET /api/settings", s.getSettings)
	route("PATCH /api/settings", s.patchSettings)
	s.agentRoutes(route)
	s.goalRoutes(route)
	s.scheduleRoutes(route)
	s.fileRoutes(route)
	s.pushRoutes(route)

	mux := http.NewServeMux()
	mux.Handle("/api/", muxErrorsAsJSON(api))
	mux.Handle("/mcp", s.h(s.serveMCP))
	mux.Handle("/auth", s.h(s.guard.signIn))
	web := s.cfg.Web
	if web == nil {
		web = http.HandlerFunc(notBuilt)
	}
	mux.Handle("/", web)
	return s.guard.wrap(mux, s.writeErr)
}

// workspaceRoutes are the routes of workspaces, their terminals and MCP servers.
func (s *Server) workspaceRoutes(route func(string, handlerFunc)) {
	route("GET /api/workspaces", s.listWorkspaces)
	route("POST /api/workspaces", s.createWorkspace)
	route("GET /api/workspaces/{id}", s.getWorkspace)
	route("PATCH /api/workspaces/{id}", s.patchWorkspace)
	route("DELETE /api/workspaces/{id}", s.deleteWorkspace)
	route("GET /api/workspaces/{id}/sessions", s.listWorkspaceSessions)
	route("POST /api/workspaces/{id}/sessions", s.createSession)
	route("GET /api/workspaces/{id}/terminals", s.listTerminals)
	route("POST /api/workspaces/{id}/terminals", s.createTerminal)
	route("DELETE /api/terminals/{id}", s.deleteTerminal)
	route("GET /api/terminals/{id}/ws", s.terminalSocket)
	route("GET /api/workspaces/{id}/mcp-trust", s.getMCPTrust)
	route("POST /api/workspaces/{id}/mcp-trust", s.postMCPTrust)
	route("DELETE /api/workspaces/{id}/mcp-trust", s.deleteMCPTrust)
	route("GET /api/mcp/servers", s.getMCPServers)
	route("POST /api/mcp/servers", s.postMCPServer)
	route("POST /api/mcp/servers/{name}/sign-in", s.postMCPSignIn)
	route("DELETE /api/mcp/servers/{name}/sign-in", s.deleteMCPSignIn)
	route("GET /api/mcp/servers/{name}/catalog", s.getMCPCatalog)
	route("GET /api/mcp/servers/{name}/resource", s.getMCPResource)
}

// sessionRoutes are the routes of sessions: their turns, events, asks, undo and controls.
func (s *Server) sessionRoutes(route func(string, handlerFunc)) {
	route("GET /api/sessions", s.listAllSessions)
	route("GET /api/sessions/{id}", s.getSession)
	route("PATCH /api/sessions/{id}", s.patchSession)
	route("DELETE /api/sessions/{id}", s.deleteSession)
	route("GET /api/sessions/{id}/messages", s.listMessages)
	route("GET /api/sessions/{id}/parts/{partId}/image", s.partImage)
	route("POST /api/sessions/{id}/turns", s.startTurn)
	route("POST /api/sessions/{id}/stop", s.stopTurn)
	route("GET /api/sessions/{id}/events", s.listEvents)
	route("GET /api/sessions/{id}/ws", s.sessionSocket)
	route("GET /api/sessions/{id}/asks", s.listAsks)
	route("POST /api/sessions/{id}/asks/{askId}", s.postAnswer)
	route("POST /api/sessions/{id}/asks/{askId}/refuse", s.postRefusal)
	route("GET /api/sessions/{id}/ledgers", s.listLedgers)
	route("POST /api/sessions/{id}/restore", s.restore)
	// Conversation controls (controls.go).
	route("POST /api/sessions/{id}/queue", s.queueMessage)
	route("GET /api/sessions/{id}/queue", s.listQueue)
	route("DELETE /api/sessions/{id}/queue/{queueId}", s.unqueue)
	route("POST /api/sessions/{id}/messages/{messageId}/resend", s.resendMessage)
	route("POST /api/sessions/{id}/regenerate", s.regenerate)
	route("POST /api/sessions/{id}/fork", s.fork)
}

// health answers without a token, so it says nothing but that a jean2 server is there.
func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	return nil
}

// muxErrorsAsJSON turns the mux's own plain-text 404 and 405 for an API path into the
// API's JSON errors (keeping the Allow header of a 405).
func muxErrorsAsJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&jsonStatusWriter{ResponseWriter: w, r: r}, r)
	})
}

// jsonStatusWriter rewrites a 404 or 405 answered by the mux itself: the API's handlers
// set the JSON content type before their status, the mux does not.
type jsonStatusWriter struct {
	http.ResponseWriter
	r       *http.Request
	swallow bool
}

func (j *jsonStatusWriter) WriteHeader(code int) {
	if (code == http.StatusMethodNotAllowed || code == http.StatusNotFound) && j.Header().Get(headerContentType) != contentTypeJSONUTF {
		j.swallow = true
		j.Header().Del("X-Content-Type-Options")
		ae := errorf(code, codeNotFound, "no API route %s %s (docs/api.md lists them)", j.r.Method, j.r.URL.Path)
		if code == http.StatusMethodNotAllowed {
			ae = errorf(code, codeMethod, "%s is not allowed on %s (allowed: %s)", j.r.Method, j.r.URL.Path, j.Header().Get("Allow"))
		}
		writeJSON(j.ResponseWriter, code, map[string]any{"error": ae})
		return
	}
	j.ResponseWriter.WriteHeader(code)
}

func (j *jsonStatusWriter) Write(b []byte) (int, error) {
	if j.swallow {
		return len(b), nil
	}
	return j.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController (and the WebSocket upgrade) reach the connection.
func (j *jsonStatusWriter) Unwrap() http.ResponseWriter { return j.ResponseWriter }

// notBuilt is / when the binary holds no web client.
func notBuilt(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set(headerContentType, "text/html; charset=utf-8")
	_, _ = fmt.Fprint(w, `<!doctype html><title>jean2</title><p>jean2 is running, but this binary holds no web client. The API is at <code>/api/</code> (docs/api.md).</p>`)
}

// The hub stores a turn's writes and the events announcing them in one commit; the harness
// finds that out by a type assertion, so this says at build time that it still can.
var _ harness.BatchPublisher = (*hub.Hub)(nil)
