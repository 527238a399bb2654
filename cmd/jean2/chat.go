package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/web"
)

const chatUsage = `Usage:
  jean2 chat [--workspace DIR] [--server URL] [--session ID] [--provider NAME] [--model MODEL]

Talks with the agent in a terminal, through the jean2 server's API: the answer streams in,
tool calls are shown with their visualizations, and the asks of tools are answered inline.

  --workspace DIR  the folder the agent works in (default: the current folder); made a
                   workspace of the server when it is not one yet
  --server URL     the jean2 server (default $JEAN2_SERVER, else http://127.0.0.1:8742).
                   Without --server, when no server answers there, jean2 chat starts one
                   inside itself on a free loopback port, for as long as the chat lasts
  --session ID     go on with an earlier session instead of starting a new one
  --provider NAME  the provider the session uses (default: the server's default provider)
  --model MODEL    the model the session uses (default: the provider's default model)

In the chat:
  /compact   summarize the older messages now to free the model's context (long sessions
             are compacted by themselves when they near the model's context window)
  /model     the session's model and the provider's models; /model M switches to model M,
             /model P M to model M of provider P
  /tokens    the tokens this session used, by model, and their cost when prices are set
  /sessions  this workspace's sessions: title, date, the start of the last message
  /title T   rename the session (it is named after its first turn otherwise)
  /search W  list the sessions whose messages or title hold the words W
  /restore   list the turns that changed files and put files back as they were before one
  /edit TEXT send your last message again as TEXT, dropping what came after it
             (add --restore to put the files back as they were before it)
  /retry     answer your last message again (--restore as for /edit)
  /fork      a new session with this conversation so far
  /stop      stop the running turn (as Ctrl-C does)
  /help      this list
  /quit      leave (as Ctrl-D, or Ctrl-C twice within 2 seconds; also at a question)
  Ctrl-C     stop the running turn; a second Ctrl-C within 2 seconds leaves

The server's API token is read from $JEAN2_TOKEN, else from $JEAN2_HOME/token (which
jean2 serve writes at its first start).
`

const defaultChatServer = "http://127.0.0.1:8742"

// chat runs `jean2 chat`.
func chat(ctx context.Context, e env, args []string) error {
	fs := newFlags("chat", e)
	workspaceFlag := fs.String("workspace", "", "the folder the agent works in")
	serverFlag := fs.String("server", "", "the jean2 server's URL")
	sessionFlag := fs.String("session", "", "an earlier session to go on with")
	providerFlag := fs.String("provider", "", "the provider the session uses")
	modelFlag := fs.String("model", "", "the model the session uses")
	if help, err := parseFlags(fs, e, args, chatUsage, "; type your message once the chat starts"); help || err != nil {
		return err
	}

	base, explicit := *serverFlag, true
	if base == "" {
		base, explicit = e.getenv("JEAN2_SERVER"), false
	}
	if base == "" {
		base = defaultChatServer
	}
	if err := checkServerURL(base); err != nil {
		return usagef("--server %s: %v", base, err)
	}
	workspace := ""
	if *workspaceFlag != "" || *sessionFlag == "" {
		dir := *workspaceFlag
		if dir == "" {
			dir = workingDir()
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return usagef("--workspace %s: %v", dir, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return usagef("--workspace %s is not a folder", dir)
		}
		workspace = abs
	}

	token, err := clientToken(e)
	if err != nil {
		return err
	}
	api := newAPIClient(base, token)
	var local *localServer
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = api.health(hctx)
	cancel()
	if err != nil {
		var ae *apiError
		if explicit || errors.As(err, &ae) || !isLoopbackURL(base) {
			return fmt.Errorf("no jean2 server answers at %s: %w (start one with jean2 serve, or leave --server out to have jean2 chat start its own)", base, err)
		}
		mcpDir := workspace
		if mcpDir == "" {
			mcpDir = workingDir()
		}
		if local, err = startLocalServer(ctx, e, mcpDir); err != nil {
			return fmt.Errorf("no jean2 server answers at %s, and starting one here failed: %w", base, err)
		}
		defer local.close()
		api = newAPIClient(local.base, local.token)
		fmt.Fprintf(e.stderr, "jean2 chat: no server at %s; started one here at %s until the chat ends (web client: %s)\n", base, local.base, local.signIn)
	} else if api.token == "" {
		return fmt.Errorf("the jean2 server at %s needs its API token, and there is none here: set JEAN2_TOKEN, or run jean2 chat where $JEAN2_HOME is the server's (its token file is $JEAN2_HOME/%s)", base, server.TokenFile)
	}

	ses, ws, err := chatSessionFor(ctx, api, workspace, *sessionFlag)
	if err != nil {
		return err
	}
	if *providerFlag != "" || *modelFlag != "" {
		if ses, err = setChatModel(ctx, api, ses, *providerFlag, *modelFlag); err != nil {
			return usagef("--provider %q --model %q: %v", *providerFlag, *modelFlag, err)
		}
	}
	if err := chatMCPTrust(ctx, e, api, ws); err != nil {
		return err
	}
	ui := newChatUI(e, api, ses, ws, local != nil)
	return ui.run(ctx)
}

func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("use an http:// or https:// URL, e.g. http://127.0.0.1:8742")
	}
	if u.Host == "" {
		return errors.New("the URL names no host")
	}
	if u.Path != "" && u.Path != "/" {
		return errors.New("give the server's root, without a path")
	}
	return nil
}

func isLoopbackURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && server.IsLoopback(u.Hostname())
}

// chatSessionFor finds or makes the workspace of dir and makes a session in it, or finds
// the session named by sessionID (which must be in dir's workspace when dir is given).
func chatSessionFor(ctx context.Context, api *apiClient, dir, sessionID string) (chatSession, chatWorkspace, error) {
	var ses chatSession
	var ws chatWorkspace
	if sessionID != "" {
		if err := api.call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(sessionID), nil, &ses); err != nil {
			return ses, ws, fmt.Errorf("session %s: %w", sessionID, err)
		}
		if err := api.call(ctx, http.MethodGet, "/api/workspaces/"+url.PathEscape(ses.WorkspaceID), nil, &ws); err != nil {
			return ses, ws, fmt.Errorf("the workspace of session %s: %w", sessionID, err)
		}
		if dir != "" && filepath.Clean(ws.Path) != filepath.Clean(dir) {
			return ses, ws, usagef("session %s belongs to the workspace %s, not %s: leave --workspace out to go on with it", sessionID, ws.Path, dir)
		}
		return ses, ws, nil
	}
	ws, err := workspaceFor(ctx, api, dir)
	if err != nil {
		return ses, ws, err
	}
	if err := api.call(ctx, http.MethodPost, "/api/workspaces/"+url.PathEscape(ws.ID)+"/sessions", map[string]any{}, &ses); err != nil {
		return ses, ws, fmt.Errorf("start a session in %s: %w", ws.Path, err)
	}
	return ses, ws, nil
}

// workspaceFor returns the server's workspace of dir, making it when there is none.
func workspaceFor(ctx context.Context, api *apiClient, dir string) (chatWorkspace, error) {
	find := func() (chatWorkspace, bool, error) {
		var list struct {
			Workspaces []chatWorkspace `json:"workspaces"`
		}
		if err := api.call(ctx, http.MethodGet, "/api/workspaces", nil, &list); err != nil {
			return chatWorkspace{}, false, fmt.Errorf("list the server's workspaces: %w", err)
		}
		real, _ := filepath.EvalSymlinks(dir)
		for _, w := range list.Workspaces {
			if p := filepath.Clean(w.Path); p == dir || p == real {
				return w, true, nil
			}
		}
		return chatWorkspace{}, false, nil
	}
	if w, ok, err := find(); err != nil || ok {
		return w, err
	}
	var w chatWorkspace
	err := api.call(ctx, http.MethodPost, "/api/workspaces", map[string]any{"path": dir}, &w)
	if _, conflict := isAPIError(err, "conflict"); conflict {
		// Made meanwhile by another client, or under another spelling of the path.
		if w, ok, ferr := find(); ferr == nil && ok {
			return w, nil
		}
	}
	if err != nil {
		return w, fmt.Errorf("make %s a workspace: %w", dir, err)
	}
	return w, nil
}

// localServer is a jean2 server run inside the chat's process, on a free loopback port.
type localServer struct {
	base   string
	token  string
	signIn string // a one-time address that signs a browser in to it
	close  func()
}

// localServerWait bounds the wait for the local server's turns and workers to stop.
const localServerWait = 10 * time.Second

// startLocalServer starts the server jean2 serve would run, with the same configuration
// (tools, MCP servers of $JEAN2_HOME/mcp.json, providers, the sandbox), listening on a free
// port of 127.0.0.1.
func startLocalServer(ctx context.Context, e env, workspace string) (*localServer, error) {
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return nil, err
	}
	dbURL, err := databaseURL(e, layout)
	if err != nil {
		return nil, err
	}
	sb, err := sandboxOptions(e)
	if err != nil {
		return nil, err
	}
	// The server's log would interleave with the conversation: only errors are shown,
	// unless JEAN2_LOG asks for more.
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if e.getenv("JEAN2_LOG") != "" {
		log = cliLogger(e)
	}
	clients, err := startMCPClients(ctx, e, "")
	if err != nil {
		return nil, err
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
		return nil, err
	}
	srv, err := server.Open(ctx, server.Config{
		Host: host.Options{
			Layout: layout, Sandbox: sb, Sources: clients.Sources(), Builtins: builtinTools, DisabledBuiltins: disabledBuiltins,
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
		return nil, err
	}
	mu.Lock()
	live = srv
	mu.Unlock()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), localServerWait)
		defer cancel()
		_ = srv.Close(cctx)
		clients.Close()
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
	return &localServer{
		base:   base,
		token:  srv.Token(),
		signIn: signIn,
		close: func() {
			cctx, cancel := context.WithTimeout(context.Background(), localServerWait)
			defer cancel()
			// The server ends its turns and sockets; then the listener closes.
			if err := srv.Close(cctx); err != nil {
				log.Error("stop the chat's server", "error", err)
			}
			_ = hs.Shutdown(cctx)
			_ = hs.Close()
			<-served
			clients.Close()
		},
	}, nil
}
