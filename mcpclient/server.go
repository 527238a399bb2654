package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backoff bounds of reconnecting to a server that failed or went away.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
	// cancelFlush is how long after a cancelled call Close waits before disconnecting.
	cancelFlush = 100 * time.Millisecond
)

// Server is one MCP server jean2 connects to, and the tool source of its tools. It keeps
// trying to connect (with exponential backoff) until Close; while it is not connected its
// tools are gone and Tools reports why.
type Server struct {
	cfg     ServerConfig
	getenv  func(string) string
	log     *slog.Logger
	version string
	changed func() // the server's tools changed (connected, list_changed, gone)
	// promptsChanged: the server's prompts changed (prompts/list_changed; prompts.go).
	promptsChanged func()
	// toolsRelist and promptsRelist list again after a list_changed (bounds.go).
	toolsRelist, promptsRelist relister
	logs                       serverLogs // its log notifications, passed on at a bounded rate

	minBackoff, maxBackoff time.Duration
	maxLine                int64 // Options.MaxLineBytes: the cap of a message when the entry sets none (limit.go)
	// httpTasks runs the calls of an HTTP server's tools that require tasks (tasks_http.go);
	// nil for other servers.
	httpTasks atomic.Pointer[httpTasks]

	sandbox  Confiner // nil: stdio servers start as they are
	withheld []string

	tokens *TokenStore
	signIn *SignIn
	elicit func(ctx context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// closeAuth ends the connection's sign-in listener, if it has one.
	closeAuth func()

	mu      sync.Mutex
	session *mcp.ClientSession
	tools   []tool.Tool
	prompts []*mcp.Prompt          // the server's own names (prompts.go)
	byJSON  map[string]*remoteTool // the listed tools by their MCP definition, kept while unchanged
	err     error                  // why there are no tools
	state   State
	stderr  *tail

	callers    callers  // the calls running, which answer the server's own requests (requests.go)
	roots      []string // folders offered as roots (the workspace's)
	progress   sync.Map // progress token → func(tool.Progress)
	nextToken  atomic.Int64
	lastCancel atomic.Int64 // when a call was last cancelled (unix ns)
	// tooLarge is set when the server sent a message over its cap (limit.go): the
	// connection is dropped, and its calls and state say why.
	tooLarge atomic.Pointer[MessageTooLargeError]

	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	started atomic.Bool
	done    chan struct{}
	ready   chan struct{} // closed after the first connection attempt
	wake    chan struct{} // cap 1: try again now (a sign-in was made)
}

var _ host.ToolSource = (*Server)(nil)

// Name is "mcp:" and the server's name in mcp.json.
func (s *Server) Name() string { return "mcp:" + s.cfg.Name }

// Kind is what the tool list shows as the runtime of the server's tools.
func (s *Server) Kind() string { return "mcp" }

// Config returns the server's entry of mcp.json.
func (s *Server) Config() ServerConfig { return s.cfg }

// State is how a server is doing, as the tool list and the web client show it.
type State string

const (
	StateConnecting  State = "connecting"
	StateConnected   State = "connected"
	StateNeedsSignIn State = "needs sign-in"
	StateError       State = "error"
)

// Status is the server's state and, unless connected, why.
func (s *Server) Status() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return StateConnected, nil
	}
	if s.state == "" {
		return StateConnecting, s.err
	}
	return s.state, s.err
}

// Retry makes a server that is not connected try again now instead of at the end of its
// backoff: a person just signed in to it.
func (s *Server) Retry() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Tools lists the server's tools now; while it is not connected, the error says why.
func (s *Server) Tools() ([]tool.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		return nil, s.err
	}
	return s.tools, nil
}

// run connects, serves until the connection ends, and reconnects with backoff, until Close.
func (s *Server) run() {
	defer close(s.done)
	backoff := s.minBackoff
	first := true
	lastErr := ""
	defer func() {
		if first {
			close(s.ready)
		}
	}()
	for attempt := 1; ; attempt++ {
		connectedAt := time.Now()
		err := s.connect(s.ctx)
		if err == nil {
			if first {
				close(s.ready)
				first = false
			}
			s.changed()
			err = s.wait()
			if time.Since(connectedAt) > s.maxBackoff {
				backoff, attempt = s.minBackoff, 1
			}
		}
		if s.ctx.Err() != nil {
			return
		}
		if e := s.tooLarge.Load(); e != nil {
			err = e
		} else if stderr := s.stderr.String(); stderr != "" && s.cfg.Type == "stdio" {
			err = fmt.Errorf("%w; its last output: %s", err, stderr)
		}
		s.mu.Lock()
		hadTools := s.session != nil
		s.session, s.tools, s.prompts = nil, nil, nil
		s.state = StateError
		if errors.Is(err, ErrSignInNeeded) {
			// Polled on at the backoff's pace, so a sign-in made elsewhere (jean2 mcp login)
			// is picked up without a restart.
			s.state = StateNeedsSignIn
			s.err = fmt.Errorf("MCP server %s (%s) needs you to sign in: run jean2 mcp login %s, or press Connect in the web client's settings (%w)", s.cfg.Name, s.cfg.File, s.cfg.Name, err)
		} else if e := (*MessageTooLargeError)(nil); errors.As(err, &e) {
			s.err = fmt.Errorf("%w (%s); retrying in %s (attempt %d)", err, s.cfg.File, backoff, attempt)
		} else {
			s.err = fmt.Errorf("MCP server %s (%s): %w; retrying in %s (attempt %d)", s.cfg.Name, s.cfg.File, err, backoff, attempt)
		}
		s.mu.Unlock()
		// Said once per kind of failure; the retries of a server that stays down are quiet.
		level := slog.LevelDebug
		if msg := err.Error(); msg != lastErr {
			level, lastErr = slog.LevelWarn, msg
		}
		s.log.Log(s.ctx, level, "MCP server unavailable", "server", s.cfg.Name, "error", err, "retry", backoff)
		if first {
			close(s.ready)
			first = false
		}
		if hadTools {
			s.changed()
		}
		select {
		case <-time.After(backoff):
		case <-s.wake:
			backoff = s.minBackoff / 2 // a sign-in just happened: not a failure to back off from
		case <-s.ctx.Done():
			return
		}
		backoff = min(backoff*2, s.maxBackoff)
	}
}

// connect starts or reaches the server, lists its tools and makes them the source's.
func (s *Server) connect(ctx context.Context) error {
	s.tooLarge.Store(nil)
	t, err := s.transport()
	if err != nil {
		return err
	}
	if s.cfg.Type == "stdio" {
		// Follows the tasks of tools that run only as tasks (tasks.go). HTTP servers' are
		// followed from their http.Client (tasks_http.go): the go-sdk's HTTP connection
		// learns the session's state through an unexported method a wrapper cannot pass on.
		t = &taskTransport{inner: t}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "jean2", Version: s.version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.toolsRelist.notice(s.refresh)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			s.promptsRelist.notice(s.refreshPrompts)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if f, ok := s.progress.Load(req.Params.ProgressToken); ok {
				f.(func(tool.Progress))(tool.Progress{Message: req.Params.Message, Current: req.Params.Progress, Total: req.Params.Total})
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s.logs.pass(s.log, s.cfg.Name, req.Params)
		},
		ElicitationHandler:   s.elicitHandler(),
		CreateMessageHandler: s.sampleThroughProvider,
		// Forms and pages to open both reach the person through the running call's asks.
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
	})
	for _, r := range s.roots {
		client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: r}).String(), Name: filepath.Base(r)})
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, t, nil)
	if err != nil {
		s.endAuth()
		return fmt.Errorf("connect: %w", err)
	}
	tools, err := s.list(cctx, cs)
	if err != nil {
		_ = cs.Close()
		s.endAuth()
		return fmt.Errorf("list tools: %w", err)
	}
	prompts, err := s.listPrompts(cctx, cs)
	if err != nil {
		// The tools are still worth having; the prompts are listed again on list_changed.
		s.log.Warn("MCP server prompts not listed", "server", s.cfg.Name, "error", err)
	}
	s.mu.Lock()
	s.session, s.tools, s.prompts, s.err = cs, tools, prompts, nil
	s.mu.Unlock()
	s.log.Info("MCP server connected", "server", s.cfg.Name, "tools", len(tools), "prompts", len(prompts))
	return nil
}

// wait blocks until the connection ends or Close.
func (s *Server) wait() error {
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	select {
	case err := <-ended:
		if err == nil {
			err = errors.New("the connection closed")
		}
		return fmt.Errorf("disconnected: %w", err)
	case <-s.ctx.Done():
		_ = cs.Close()
		<-ended
		s.endAuth()
		return s.ctx.Err()
	}
}

// elicitHandler answers the server's elicitation requests through Options.Elicit.
func (s *Server) elicitHandler() func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if s.elicit == nil {
		return s.elicitThroughAsks
	}
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return s.elicit(ctx, s.cfg.Name, req)
	}
}

// endAuth closes the sign-in listener of the last connection attempt.
func (s *Server) endAuth() {
	if f := s.closeAuth; f != nil {
		s.closeAuth = nil
		f()
	}
}

// refresh lists the tools again after the server said its list changed.
func (s *Server) refresh() {
	if relist(s, "tools", s.list, func(t []tool.Tool) { s.tools = t }) {
		s.changed()
	}
}

// list lists the server's tools. A tool whose definition did not change keeps its value, so
// the host keeps its version and reports no change for it.
func (s *Server) list(ctx context.Context, cs *mcp.ClientSession) ([]tool.Tool, error) {
	s.mu.Lock()
	prev := s.byJSON
	s.mu.Unlock()
	next := map[string]*remoteTool{}
	listed, err := listAll(cs.Tools(ctx, nil), "tools")
	if err != nil {
		return nil, err
	}
	var tools []tool.Tool
	for _, t := range listed {
		key, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		rt, ok := prev[string(key)]
		if !ok {
			rt = &remoteTool{srv: s, remote: t.Name, def: s.definition(t)}
		}
		next[string(key)] = rt
		tools = append(tools, rt)
	}
	s.mu.Lock()
	s.byJSON = next
	s.mu.Unlock()
	return tools, nil
}

// transport makes the connection the config asks for.
func (s *Server) transport() (mcp.Transport, error) {
	switch s.cfg.Type {
	case "stdio":
		cmd, release, err := s.command()
		if err != nil {
			return nil, err
		}
		s.stderr.Reset()
		cmd.Stderr = s.stderr
		return &commandTransport{cmd: cmd, release: release, terminate: 2 * time.Second, server: s.cfg.Name, limit: s.maxMessageBytes(), tooBig: s.messageTooLarge}, nil
	case "http", "sse":
		headers := http.Header{}
		for k, v := range s.cfg.Headers {
			headers.Set(k, expand(v, s.getenv))
		}
		limit := s.maxMessageBytes()
		capped := capTransport{next: http.DefaultTransport, server: s.cfg.Name, limit: limit, tooBig: s.messageTooLarge}
		hc := &http.Client{Transport: headerTransport{headers: headers, next: capped}}
		if s.cfg.Type == "sse" {
			return &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxEventSize: sdkBackstop(limit)}, nil
		}
		ht := newHTTPTasks(hc.Transport)
		hc.Transport = ht
		s.httpTasks.Store(ht)
		t := &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxEventSize: sdkBackstop(limit)}
		// A server given its own Authorization header is not signed in to.
		if headers.Get("Authorization") != "" {
			return t, nil
		}
		s.endAuth()
		switch {
		case s.cfg.OAuth != nil && s.cfg.OAuth.Grant == GrantClientCredentials:
			h, err := newMachineAuth(s.cfg, s.getenv, oauthClient(s.cfg.URL, nil))
			if err != nil {
				return nil, err
			}
			t.OAuthHandler = h
		case s.signIn != nil:
			h, closeFn, err := s.signIn.Handler(s.cfg)
			if err != nil {
				return nil, err
			}
			t.OAuthHandler, s.closeAuth = h, closeFn
		case s.tokens != nil:
			h, err := backgroundAuth(s.tokens, s.cfg.URL, oauthClient(s.cfg.URL, nil))
			if err != nil {
				return nil, err
			}
			t.OAuthHandler = h
		}
		return t, nil
	}
	return nil, fmt.Errorf("unknown server type %q", s.cfg.Type)
}

// command is the process of a stdio server: through the sandbox unless the sandbox is not
// given or the user's mcp.json opts the server out; release is what its end must undo.
// A workspace's server runs in its workspace unless its entry says where (cwd, relative
// to the file's folder).
func (s *Server) command() (*exec.Cmd, func(), error) {
	dir := s.cfg.Cwd
	if dir != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(s.cfg.File), dir)
	}
	if dir == "" {
		dir = s.cfg.Workspace
	}
	if s.sandbox == nil || !s.cfg.Confined() {
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env, cmd.Dir = s.cfg.commandEnv(s.getenv, s.withheld), dir
		return cmd, func() {}, nil
	}
	l := host.MCPLaunch{Server: s.cfg.Name, File: s.cfg.File, Program: s.cfg.Command, Args: s.cfg.Args, Dir: dir,
		Env: s.cfg.commandEnv(s.getenv, s.withheld), Network: s.cfg.Reach(), Workspace: s.cfg.Workspace}
	for k := range s.cfg.Env {
		l.Declared = append(l.Declared, k)
	}
	l.Declared = append(l.Declared, NestedEnv)
	if l.Workspace == "" {
		l.Workspace = s.cfg.confinedCwd()
	}
	return s.sandbox.Command(l)
}

// messageTooLarge drops the connection of a server that sent a message over its cap: the
// reader already refused it, and the server is not to be trusted with the next one either.
// run then lists the server in error with e, and retries it after the backoff.
func (s *Server) messageTooLarge(err error) {
	e, ok := err.(*MessageTooLargeError)
	if !ok {
		return
	}
	s.tooLarge.Store(e)
	s.log.Warn("MCP server sent a message over its cap", "server", s.cfg.Name, "limit", e.Limit, "what", e.What)
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	if cs != nil {
		go func() { _ = cs.Close() }()
	}
}

// close disconnects and stops the server process (stdin closed, then SIGTERM, then SIGKILL).
func (s *Server) close() {
	// The go-sdk sends notifications/cancelled on its own goroutine; a call cancelled just
	// now (a one-shot command that timed out) gets a moment for it to leave before the
	// connection closes, so the server hears of the cancellation and not only of the end.
	if since := time.Since(time.Unix(0, s.lastCancel.Load())); since < cancelFlush {
		time.Sleep(cancelFlush - since)
	}
	s.cancel()
	if s.started.Load() {
		<-s.done
	}
}

type headerTransport struct {
	headers http.Header
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// tail keeps the last bytes a server wrote to stderr, to say why it failed.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 1024

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tail) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?"))
}

var _ io.Writer = (*tail)(nil)
