package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/chat"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/desktop"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/web"
)

const chatUsage = `Usage:
  jean2 chat [--workspace DIR] [--server URL] [--session ID] [--provider NAME] [--model MODEL] [--agent NAME]

Talks with the agent in a terminal, through the jean2 server's API: the answer streams in,
tool calls are shown with their visualizations, and the asks of tools are answered inline.

  --workspace DIR  the folder the agent works in (default: the current folder); made a
                   workspace of the server when it is not one yet
  --server URL     the jean2 server (default $JEAN2_SERVER, else the server running on this
                   $JEAN2_HOME, on whatever port its server.json names, else
                   http://127.0.0.1:8742). Without --server, when no server answers, jean2
                   chat starts one inside itself on a free loopback port, for as long as the
                   chat lasts.
                   When the server it found goes away, the chat waits for it and looks
                   at $JEAN2_HOME/server.json again: it follows a server that came back
                   on another port
  --session ID     go on with an earlier session instead of starting a new one
  --provider NAME  the provider the session uses (default: the server's default provider)
  --model MODEL    the model the session uses (default: the provider's default model)
  --agent NAME     the agent the session runs with: build (default), plan (read-only), or an
                   agent file's; Tab then Enter on an empty line switches in the chat

` + chat.Commands + `
The server's API token is read from $JEAN2_TOKEN, else from $JEAN2_HOME/token (which
jean2 serve writes at its first start).
`

// runChat runs `jean2 chat`: the flags and the environment make the chat's options; the
// terminal client itself is package chat.
func runChat(ctx context.Context, e env, args []string) error {
	fs := newFlags("chat", e)
	workspaceFlag := fs.String("workspace", "", "the folder the agent works in")
	serverFlag := fs.String("server", "", "the jean2 server's URL")
	sessionFlag := fs.String("session", "", "an earlier session to go on with")
	providerFlag := fs.String("provider", "", "the provider the session uses")
	modelFlag := fs.String("model", "", "the model the session uses")
	agentFlag := fs.String("agent", "", "the agent the session runs with (build, plan, an agent file's)")
	if help, err := parseFlags(fs, e, args, chatUsage, "; type your message once the chat starts"); help || err != nil {
		return err
	}

	base, explicit, err := serverBase(e, *serverFlag)
	if err != nil {
		return err
	}
	if err := chat.CheckServerURL(base); err != nil {
		return usagef("--server %s: %v", base, err)
	}
	workspace, err := chatWorkspace(*workspaceFlag, *sessionFlag)
	if err != nil {
		return err
	}
	token, err := clientToken(e)
	if err != nil {
		return err
	}
	o := chat.Options{
		Server: base, Token: token, Workspace: workspace, Session: *sessionFlag,
		Provider: *providerFlag, Model: *modelFlag, Agent: *agentFlag,
		ConfirmMCPTrust: func(file, workspace string, commands []string) bool {
			return confirmMCPTrust(e, file, workspace, commands, false)
		},
		Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr,
		Color: chatColor(e, stdoutIsTerminal(e)),
	}
	closeDesktop, err := chatNotifications(e, &o)
	if err != nil {
		return err
	}
	defer closeDesktop()
	if *serverFlag == "" && e.getenv("JEAN2_SERVER") == "" {
		// The server was looked for, not named: when it comes back on another port, its
		// address file says where.
		o.Rediscover = func() (string, string) { return rediscover(e) }
	}
	if !explicit {
		o.StartServer = func(ctx context.Context) (*chat.LocalServer, error) {
			// Its workspace MCP servers are those of the chat's workspace.
			dir := workspace
			if dir == "" {
				dir = workingDir()
			}
			return startLocalServer(ctx, e, dir)
		}
	}
	if f, ok := e.stdin.(*os.File); ok && e.stdinIsTerminal {
		// Ctrl-L redraws the moment it is pressed, not after an Enter.
		defer ctrlLEndsLine(f)()
	}
	err = chat.Run(ctx, o)
	if ue, ok := errors.AsType[chat.UsageError](err); ok {
		return usageError{ue.Msg}
	}
	return err
}

// chatWorkspace is the folder the chat's session works in: --workspace, else the current
// folder, unless an earlier session is taken up (its own workspace then).
func chatWorkspace(flag, session string) (string, error) {
	if flag == "" && session != "" {
		return "", nil
	}
	dir := flag
	if dir == "" {
		dir = workingDir()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usagef("--workspace %s: %v", dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", usagef("--workspace %s is not a folder", dir)
	}
	return abs, nil
}

// rediscover is the address and token of the server of this home now (server.json), for
// a chat whose server went away: "" when none is running.
func rediscover(e env) (string, string) {
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return "", ""
	}
	base := runningServer(layout.Home)
	if base == "" {
		return "", ""
	}
	tok, _ := clientToken(e)
	return base, tok
}

// chatColor decides whether the chat colours its output: only on a terminal, only without
// NO_COLOR (https://no-color.org), never on TERM=dumb.
func chatColor(e env, stdoutIsTerminal bool) bool {
	return stdoutIsTerminal && e.getenv("NO_COLOR") == "" && e.getenv("TERM") != "dumb"
}

func stdoutIsTerminal(e env) bool {
	f, ok := e.stdout.(*os.File)
	return ok && isTerminal(f)
}

// clientToken is the API token a client of a jean2 server sends: $JEAN2_TOKEN, else the
// local token jean2 serve wrote to $JEAN2_HOME/token; "" when neither is there.
func clientToken(e env) (string, error) {
	if tok := strings.TrimSpace(e.getenv("JEAN2_TOKEN")); tok != "" {
		return tok, nil
	}
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return "", err
	}
	tok, err := server.ReadTokenFile(layout.Home)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return tok, err
}

// localServerWait bounds the wait for the local server's turns and workers to stop.
const localServerWait = 10 * time.Second

// startLocalServer starts the server jean2 serve would run, with the same configuration
// (tools, MCP servers of $JEAN2_HOME/mcp.json, providers, the sandbox), listening on a free
// port of 127.0.0.1.
func startLocalServer(ctx context.Context, e env, workspace string) (*chat.LocalServer, error) {
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return nil, err
	}
	// The server's log would interleave with the conversation: only errors are shown,
	// unless JEAN2_LOG asks for more.
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if e.getenv("JEAN2_LOG") != "" {
		log = cliLogger(e)
	}
	srv, clients, err := openLocalServer(ctx, e, layout, workspace, log)
	if err != nil {
		return nil, err
	}
	// The chat's own server lives as long as the chat: it takes edits of mcp.json too.
	stopWatch := watchMCPConfig(context.Background(), e, clients)
	return serveLocalServer(srv, layout.Home, log, func() {
		stopWatch()
		clients.Close()
	})
}

// openLocalServer opens the server with jean2 serve's configuration, its MCP clients
// started; a change of their tools reloads the server's.
func openLocalServer(ctx context.Context, e env, layout host.Layout, workspace string, log *slog.Logger) (*server.Server, *mcpclient.Manager, error) {
	dbURL, err := databaseURL(e, layout)
	if err != nil {
		return nil, nil, err
	}
	sb, err := sandboxOptions(e)
	if err != nil {
		return nil, nil, err
	}
	clients, err := startMCPClients(ctx, e, "")
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	var live *server.Server
	clients.OnChange(func() {
		mu.Lock()
		s := live
		mu.Unlock()
		if s != nil {
			if err := s.Host().Reload(context.Background()); err != nil {
				log.Warn("reload after an MCP server's tools changed", "error", err)
			}
		}
	})
	builtinTools, disabledBuiltins, err := builtins(layout, sb)
	if err != nil {
		clients.Close()
		return nil, nil, err
	}
	limits, err := configLimits(layout)
	if err != nil {
		clients.Close()
		return nil, nil, err
	}
	srv, err := server.Open(ctx, server.Config{
		Host: host.Options{
			Layout: layout, Sandbox: sb, SourceSets: []host.SourceSet{clients}, Builtins: builtinTools, DisabledBuiltins: disabledBuiltins, Limits: limits,
			RuntimePreference: e.getenv("JEAN2_RUNTIME"), BunPath: e.getenv("JEAN2_BUN"), NodePath: e.getenv("JEAN2_NODE"),
			Logger: log,
		},
		Getenv:       e.getenv,
		DatabaseURL:  dbURL,
		MCPWorkspace: workspace,
		Web:          web.Handler(),
		Watch:        &host.WatchOptions{},
		Version:      version,
		Logger:       log,
	})
	if err != nil {
		clients.Close()
		return nil, nil, err
	}
	mu.Lock()
	live = srv
	mu.Unlock()
	return srv, clients, nil
}

// serveLocalServer serves srv on a free port of 127.0.0.1 and publishes it under home for
// other terminals; after runs once the server is closed (on failure here, or by Close).
func serveLocalServer(srv *server.Server, home string, log *slog.Logger, after func()) (*chat.LocalServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), localServerWait)
		defer cancel()
		_ = srv.Close(cctx)
		after()
		return nil, fmt.Errorf("listen on a loopback port: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
	base := "http://" + ln.Addr().String()
	signIn, err := srv.SignInURL(base)
	if err != nil {
		signIn = base + "/ (jean2 signin --server " + base + " signs a browser in)"
	}
	// Another jean2 chat or signin on this home joins this server while the chat lasts.
	unpublish, err := publishServer(home, base)
	if err != nil {
		log.Warn("other terminals will not find the chat's server", "error", err)
		unpublish = func() {}
	}
	return &chat.LocalServer{
		URL:    base,
		Token:  srv.Token(),
		SignIn: signIn,
		Close: func() {
			unpublish()
			cctx, cancel := context.WithTimeout(context.Background(), localServerWait)
			defer cancel()
			// The server ends its turns and sockets; then the listener closes.
			if err := srv.Close(cctx); err != nil {
				log.Error("stop the chat's server", "error", err)
			}
			_ = hs.Shutdown(cctx)
			_ = hs.Close()
			<-served
			after()
		},
	}, nil
}

// chatNotifications sets how the chat notifies when a long turn ends or asks, by
// JEAN2_CHAT_NOTIFY: "terminal" (BEL and OSC 9), "desktop" (the desktop's notification
// service, and the bell), "off", or unset: the desktop when there is one (not over SSH),
// else the terminal. It returns what closes the desktop's connection.
func chatNotifications(e env, o *chat.Options) (func(), error) {
	mode := e.getenv("JEAN2_CHAT_NOTIFY")
	terminal := stdoutIsTerminal(e) && e.getenv("TERM") != "dumb"
	switch mode {
	case "off":
		return func() {}, nil
	case "terminal":
		o.Notify = terminal
		return func() {}, nil
	case "", "desktop":
	default:
		return nil, usagef("JEAN2_CHAT_NOTIFY=%q: give terminal, desktop or off", mode)
	}
	o.Notify = terminal
	d, why := desktop.New(e.getenv)
	if d == nil {
		if mode == "desktop" {
			fmt.Fprintf(e.stderr, "jean2 chat: no desktop notifications: %s; the terminal is rung instead\n", why)
		}
		return func() {}, nil
	}
	o.Desktop = d
	return func() { _ = d.Close() }, nil
}
