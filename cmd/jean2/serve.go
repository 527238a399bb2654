package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/web"
)

const serveUsage = `Usage:
  jean2 serve [--host 127.0.0.1] [--port 8742] [--new-token]

Runs the jean2 server in the foreground: the API (docs/api.md), the web client at /, MCP
over streamable HTTP at /mcp. Data lives in $JEAN2_HOME/jean2.db; providers come from the
environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, …), $JEAN2_HOME/providers.json or the API.
Ctrl-C stops running turns and shuts down. JEAN2_DB_SYNC=full makes every database commit
reach the disk before it is acknowledged (survives a power cut; the default, normal,
survives a crash of jean2 itself). docs/server.md has the details.

  --host ADDR   the address to listen on (default 127.0.0.1). Any address other than a
                loopback one requires an API token: one is made on the first such start
                and printed once
  --port N      the port (default 8742; 0 picks a free one)
  --new-token   make another API token and print it
`

// serveShutdownWait bounds the wait for running turns and tool workers to stop.
const serveShutdownWait = 10 * time.Second

// serve runs `jean2 serve`.
func serve(ctx context.Context, e env, args []string) error {
	fs := newFlags("serve", e)
	hostFlag := fs.String("host", "127.0.0.1", "the address to listen on")
	port := fs.Int("port", 8742, "the port")
	newToken := fs.Bool("new-token", false, "make another API token")
	if help, err := parseFlags(fs, e, args, serveUsage, ""); help || err != nil {
		return err
	}
	if *port < 0 || *port > 65535 {
		return usagef("--port %d is not a port number (0 to 65535)", *port)
	}
	if *hostFlag == "" {
		return usagef("--host is empty: give an address such as 127.0.0.1 or 0.0.0.0")
	}
	requireToken := !server.IsLoopback(*hostFlag)

	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return err
	}
	durability, err := store.ParseDurability(e.getenv("JEAN2_DB_SYNC"))
	if err != nil {
		return usagef("JEAN2_DB_SYNC: %v (normal: a crash of jean2 loses nothing; full: a power cut neither, at an fsync per commit)", err)
	}
	sb, err := sandboxOptions(e)
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
	log := cliLogger(e)
	// An MCP server whose tools change reloads the host (tools.changed follows). A change
	// while the server is being made is kept and applied once it exists.
	var mu sync.Mutex
	var live *server.Server
	missed := false
	reload := func(s *server.Server) {
		if err := s.Host().Reload(context.Background()); err != nil {
			log.Warn("reload after an MCP server's tools changed", "error", err)
		}
	}
	clients.OnChange(func() {
		mu.Lock()
		s := live
		missed = s == nil
		mu.Unlock()
		if s != nil {
			reload(s)
		}
	})
	srv, err := server.Open(ctx, server.Config{
		Host: host.Options{
			Layout: layout, Sandbox: sb, Sources: clients.Sources(),
			RuntimePreference: e.getenv("JEAN2_RUNTIME"), BunPath: e.getenv("JEAN2_BUN"), NodePath: e.getenv("JEAN2_NODE"),
			Logger: log,
		},
		Getenv:       e.getenv,
		Durability:   durability,
		RequireToken: requireToken,
		MCPWorkspace: workingDir(),
		Web:          web.Handler(),
		Watch:        &host.WatchOptions{},
		Version:      version,
		Logger:       log,
	})
	if err != nil {
		return err
	}
	closeServer := sync.OnceValue(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), serveShutdownWait)
		defer cancel()
		return srv.Close(ctx)
	})
	defer closeServer()
	mu.Lock()
	live = srv
	again := missed
	mu.Unlock()
	if again {
		reload(srv)
	}

	addr := net.JoinHostPort(*hostFlag, strconv.Itoa(*port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another jean2 serve running? try --port)", addr, err)
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(e.stderr, "jean2 serve: tool workers: %s\n", srv.Host().Sandbox().Summary())
	fmt.Fprintf(e.stderr, "jean2 serve: database %s (JEAN2_DB_SYNC=%s)\n", srv.Store().Path(), durability)
	if requireToken {
		if err := printToken(ctx, e, srv, base, *newToken); err != nil {
			ln.Close()
			return err
		}
	} else if *newToken {
		if err := printToken(ctx, e, srv, base, true); err != nil {
			ln.Close()
			return err
		}
	}
	fmt.Fprintf(e.stderr, "jean2 serve: listening on %s (API %s/api/, MCP %s/mcp)\n", base, base, base)

	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve on %s: %w", addr, err)
	case <-ctx.Done():
	}
	fmt.Fprintln(e.stderr, "jean2 serve: stopping")
	// Stop taking requests while the server stops its turns, sockets and tool runs, which
	// lets the requests in flight end.
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

// printToken makes a token when a token-protected server has none (or when asked) and
// prints it once: only its hash is kept.
func printToken(ctx context.Context, e env, srv *server.Server, base string, fresh bool) error {
	var tok string
	var err error
	if fresh {
		tok, err = srv.NewToken(ctx)
	} else {
		tok, err = srv.EnsureToken(ctx)
	}
	if err != nil {
		return fmt.Errorf("make an API token: %w", err)
	}
	if tok == "" {
		fmt.Fprintln(e.stderr, "jean2 serve: API calls need the token printed when it was made (jean2 serve --new-token makes another)")
		return nil
	}
	fmt.Fprintf(e.stderr, "jean2 serve: API token (shown once; only its hash is kept):\n  %s\n"+
		"  send it as Authorization: Bearer <token>, or open %s/auth?token=%s once in a browser\n", tok, base, tok)
	return nil
}
