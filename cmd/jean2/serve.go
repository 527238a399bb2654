package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/jean2/jean2/mcpclient"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/web"
)

const serveUsage = `Usage:
  jean2 serve [--host 127.0.0.1] [--port 8742] [--allowed-host NAME]... [--new-token]

Runs the jean2 server in the foreground: the API (docs/api.md), the web client at /, MCP
over streamable HTTP at /mcp. Data lives in $JEAN2_HOME/jean2.db, or on PostgreSQL when
JEAN2_DATABASE_URL (or "databaseURL" in $JEAN2_HOME/config.json) is a postgres:// URL
(docs/store.md); providers come from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY,
…), $JEAN2_HOME/providers.json or the API.
Ctrl-C stops running turns and shuts down. JEAN2_DB_SYNC=full makes every database commit
reach the disk before it is acknowledged (survives a power cut; the default, normal,
survives a crash of jean2 itself). docs/server.md has the details.

Several instances (each with its own JEAN2_HOME) share one database: on PostgreSQL with
JEAN2_DATABASE_URL=postgres://…, or on one host's SQLite file with JEAN2_DB=FILE and
JEAN2_CLUSTER=on. A turn runs on one instance at a time, events, asks and Stop reach every
instance, a dead instance's turn is sealed by another within JEAN2_LEASE_TTL (30s) and a
third; JEAN2_INSTANCE_ID names the instance. docs/deploy.md has the details.

Every API, WebSocket and /mcp request carries the API token, on any address: the first
start writes it to $JEAN2_HOME/token (mode 0600), which jean2 chat and jean2 signin read.
A browser signs in once at the one-time address printed at start (or by jean2 signin) and
keeps the token in an HttpOnly cookie. Requests whose Host is not localhost, an IP address
or an allowed name are refused (DNS rebinding).

  --host ADDR          the address to listen on (default 127.0.0.1)
  --port N             the port (default 8742; 0 picks a free one)
  --allowed-host NAME  a name besides localhost and IP addresses that browsers may reach
                       the server by (repeat it, or separate names with commas; also
                       JEAN2_ALLOWED_HOSTS). The --host name is allowed already
  --new-token          make another API token for a client on another machine and print it
                       once (only its hash is kept)
`

// serveShutdownWait bounds the wait for running turns and tool workers to stop.
const serveShutdownWait = 10 * time.Second

// serve runs `jean2 serve`.
// serveFlags are jean2 serve's flags.
type serveFlags struct {
	host     string
	port     int
	newToken bool
	allowed  hostList
}

func parseServeFlags(e env, args []string) (f serveFlags, help bool, err error) {
	fs := newFlags("serve", e)
	fs.StringVar(&f.host, "host", "127.0.0.1", "the address to listen on")
	fs.IntVar(&f.port, "port", 8742, "the port")
	fs.BoolVar(&f.newToken, "new-token", false, "make another API token")
	fs.Var(&f.allowed, "allowed-host", "a name browsers may reach the server by")
	if help, err := parseFlags(fs, e, args, serveUsage, ""); help || err != nil {
		return f, help, err
	}
	if f.port < 0 || f.port > 65535 {
		return f, false, usagef("--port %d is not a port number (0 to 65535)", f.port)
	}
	if f.host == "" {
		return f, false, usagef("--host is empty: give an address such as 127.0.0.1 or 0.0.0.0")
	}
	_ = f.allowed.Set(e.getenv("JEAN2_ALLOWED_HOSTS"))
	if net.ParseIP(strings.Trim(f.host, "[]")) == nil {
		f.allowed = append(f.allowed, f.host) // bound by name: that name is the server's
	}
	return f, false, nil
}

// lateReload reloads the server's host when an MCP server's tools change (tools.changed
// follows). A change while the server is being made is kept and applied once it exists.
type lateReload struct {
	log    *slog.Logger
	mu     sync.Mutex
	live   *server.Server
	missed bool
}

func (l *lateReload) changed() {
	l.mu.Lock()
	s := l.live
	l.missed = s == nil
	l.mu.Unlock()
	if s != nil {
		l.reload(s)
	}
}

// attach names the server made, and applies a change that came while it was being made.
func (l *lateReload) attach(s *server.Server) {
	l.mu.Lock()
	l.live = s
	again := l.missed
	l.mu.Unlock()
	if again {
		l.reload(s)
	}
}

func (l *lateReload) reload(s *server.Server) {
	if err := s.Host().Reload(context.Background()); err != nil {
		l.log.Warn("reload after an MCP server's tools changed", "error", err)
	}
}

func serve(ctx context.Context, e env, args []string) error {
	f, help, err := parseServeFlags(e, args)
	if help || err != nil {
		return err
	}
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return err
	}
	// The MCP servers of $JEAN2_HOME/mcp.json join every workspace's tools; those of each
	// workspace's own .jean2/mcp.json are the server's (server.WorkspaceMCPOptions).
	clients, err := startMCPClients(ctx, e, "")
	if err != nil {
		return err
	}
	defer clients.Close()
	defer watchMCPConfig(ctx, e, clients)()
	log := cliLogger(e)
	stopProfiling, err := startProfiling(e, "jean2 serve")
	if err != nil {
		return err
	}
	defer stopProfiling()
	reloads := &lateReload{log: log}
	clients.OnChange(reloads.changed)
	cfg, err := serveConfig(e, layout, clients, f.allowed, log)
	if err != nil {
		return err
	}
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		return err
	}
	closeServer := sync.OnceValue(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), serveShutdownWait)
		defer cancel()
		return srv.Close(ctx)
	})
	defer closeServer()
	reloads.attach(srv)

	addr := net.JoinHostPort(f.host, strconv.Itoa(f.port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another jean2 serve running? try --port)", addr, err)
	}
	if err := announceStart(ctx, e, srv, cfg, ln, f.newToken); err != nil {
		ln.Close()
		return err
	}
	// jean2 chat and jean2 signin of this home find the server on whatever port it has.
	if unpublish, err := publishServer(layout.Home, browserBase(ln.Addr())); err != nil {
		fmt.Fprintf(e.stderr, "jean2 serve: jean2 chat will not find this server without --server: %v\n", err)
	} else {
		defer unpublish()
	}
	return serveHTTP(ctx, e, srv, ln, addr, closeServer)
}

// serveConfig is the server's configuration from the environment and $JEAN2_HOME's files.
func serveConfig(e env, layout host.Layout, clients *mcpclient.Manager, allowed hostList, log *slog.Logger) (server.Config, error) {
	durability, err := store.ParseDurability(e.getenv("JEAN2_DB_SYNC"))
	if err != nil {
		return server.Config{}, usagef("JEAN2_DB_SYNC: %v (normal: a crash of jean2 loses nothing; full: a power cut neither, at an fsync per commit)", err)
	}
	clusterCfg, dbPath, err := clusterConfig(e)
	if err != nil {
		return server.Config{}, err
	}
	dbURL, err := databaseURL(e, layout)
	if err != nil {
		return server.Config{}, err
	}
	sb, err := sandboxOptions(e)
	if err != nil {
		return server.Config{}, err
	}
	builtinTools, disabledBuiltins, err := builtins(layout, sb)
	if err != nil {
		return server.Config{}, err
	}
	limits, err := configLimits(layout)
	if err != nil {
		return server.Config{}, err
	}
	return server.Config{
		Host: host.Options{
			Layout: layout, Sandbox: sb, SourceSets: []host.SourceSet{clients}, Builtins: builtinTools, DisabledBuiltins: disabledBuiltins, Limits: limits,
			RuntimePreference: e.getenv("JEAN2_RUNTIME"), BunPath: e.getenv("JEAN2_BUN"), NodePath: e.getenv("JEAN2_NODE"),
			Logger: log,
		},
		Getenv:       e.getenv,
		Durability:   durability,
		DatabaseURL:  dbURL,
		AllowedHosts: allowed,
		MCPWorkspace: workingDir(),
		MCPPrompts:   clients,
		Web:          web.Handler(),
		Watch:        &host.WatchOptions{},
		Version:      version,
		Logger:       log,
		DBPath:       dbPath,
		Cluster:      clusterCfg,
		Push:         server.PushOptions{Contact: e.getenv("JEAN2_PUSH_CONTACT")},
	}, nil
}

// announceStart says on stderr what the server runs with and how to reach it; its last
// line ("listening on") is the one scripts wait for.
func announceStart(ctx context.Context, e env, srv *server.Server, cfg server.Config, ln net.Listener, newToken bool) error {
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(e.stderr, "jean2 serve: tool workers: %s\n", srv.Host().Sandbox().Summary())
	if cfg.DatabaseURL != "" {
		fmt.Fprintf(e.stderr, "jean2 serve: database %s (PostgreSQL)\n", srv.Store().Path())
	} else {
		fmt.Fprintf(e.stderr, "jean2 serve: database %s (JEAN2_DB_SYNC=%s)\n", srv.Store().Path(), cfg.Durability)
	}
	if srv.Clustered() {
		fmt.Fprintf(e.stderr, "jean2 serve: instance %s, one of several sharing the database (docs/deploy.md)\n", srv.Instance())
	}
	for _, line := range providerLines(srv.Providers().Set(), cfg.Host.Layout.Home) {
		fmt.Fprintf(e.stderr, "jean2 serve: %s\n", line)
	}
	if newToken {
		if err := printToken(ctx, e, srv, base); err != nil {
			return err
		}
	}
	signIn, err := srv.SignInURL(browserBase(ln.Addr()))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "jean2 serve: open in your browser to sign in (once, within an hour; jean2 signin prints another):\n  %s\n", signIn)
	fmt.Fprintf(e.stderr, "jean2 serve: listening on %s (API %s/api/, MCP %s/mcp; API token in %s)\n",
		base, base, base, filepath.Join(cfg.Host.Layout.Home, server.TokenFile))
	return nil
}

// serveHTTP serves until ctx ends, then stops taking requests while the server stops its
// turns, sockets and tool runs, which lets the requests in flight end.
func serveHTTP(ctx context.Context, e env, srv *server.Server, ln net.Listener, addr string, closeServer func() error) error {
	// Timeouts and a connection cap, so slow or idle clients cannot hold every descriptor.
	lim := server.HTTPLimits{}
	hs := srv.HTTPServer(lim)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(server.LimitListener(ln, lim)) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve on %s: %w", addr, err)
	case <-ctx.Done():
	}
	fmt.Fprintln(e.stderr, "jean2 serve: stopping")
	shutdownDone := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), serveShutdownWait)
		defer cancel()
		shutdownDone <- hs.Shutdown(sctx)
	}()
	closeErr := closeServer()
	if err := <-shutdownDone; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		closeErr = errors.Join(closeErr, err)
	}
	_ = hs.Close()
	<-served
	return closeErr
}

// printToken makes another API token (for a client on another machine) and prints it
// once: only its hash is kept.
func printToken(ctx context.Context, e env, srv *server.Server, base string) error {
	tok, err := srv.NewToken(ctx)
	if err != nil {
		return fmt.Errorf("make an API token: %w", err)
	}
	fmt.Fprintf(e.stderr, "jean2 serve: another API token (shown once; only its hash is kept):\n  %s\n"+
		"  send it as Authorization: Bearer <token> (JEAN2_TOKEN for jean2 chat), or open %s/auth?token=<token> once in a browser\n", tok, base)
	return nil
}

// browserBase is the address a person opens: a wildcard bind (0.0.0.0, ::) is reached on
// this machine at 127.0.0.1.
func browserBase(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// hostList is a repeatable flag of names, each value possibly a comma-separated list.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(v string) error {
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			*h = append(*h, name)
		}
	}
	return nil
}
