package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Manager.
type Options struct {
	// Getenv reads jean2's environment for PATH, HOME and ${NAME} references (os.Getenv when
	// nil). Nothing else of it reaches a server.
	Getenv func(string) string
	// Version is what jean2 reports to servers.
	Version string
	// MinBackoff and MaxBackoff bound the wait between connection attempts (1s and 1m
	// when zero).
	MinBackoff, MaxBackoff time.Duration
	Logger                 *slog.Logger
	// Tokens keeps the OAuth tokens of servers that ask jean2 to sign in
	// (NewTokenStore($JEAN2_HOME)); nil: no OAuth, a server's 401 is an error.
	Tokens *TokenStore
	// SignIn, when set, signs in interactively when a server asks (jean2 mcp login and
	// probe); otherwise a server that needs a sign-in waits in state "needs sign-in".
	SignIn *SignIn
	// Roots are the folders offered to the servers as roots (the workspace's folders).
	Roots []string
	// Elicit answers a server's elicitation requests (jean2 mcp probe); nil: through the asks
	// of the call running (requests.go).
	Elicit func(ctx context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// Sandbox starts stdio servers confined (*host.MCPSandbox); nil starts them as they are
	// (tests of the protocol, and a program that embeds the client without a launcher).
	Sandbox Confiner
	// Withheld are variables a workspace's file may not reference with ${NAME}, beside
	// jean2's reserved ones (policy.ReservedEnv): the key variables providers.json names.
	Withheld []string
	// MaxLineBytes caps one message jean2 reads from a server whose mcp.json entry sets no
	// maxMessageBytes: a stdio line, an HTTP response body, an SSE event (limit.go;
	// DefaultMaxMessageBytes when zero).
	MaxLineBytes int64
}

// Confiner starts a stdio server confined: the process to start and what to do once it
// has exited. *host.MCPSandbox is the one jean2 uses.
type Confiner interface {
	Command(l host.MCPLaunch) (cmd *exec.Cmd, release func(), err error)
}

var _ Confiner = (*host.MCPSandbox)(nil)

// Manager runs the servers of a Config and hands their tools to the host. Reload swaps in
// another Config (an mcp.json edited while jean2 runs), keeping the servers it lists
// unchanged connected.
type Manager struct {
	opts  Options
	onAny atomic.Pointer[func()]
	// prompts are told when a server's prompts may have changed (prompts.go).
	prompts promptSubs
	close   sync.Once
	after   []func() // OnClose's

	mu      sync.Mutex
	servers []*Server
	broken  []host.ToolSource
	started bool // Start ran: a server added by Reload connects at once
	closed  bool
}

// New makes a manager for cfg. loadErr, the error of Load, lists each unusable file as a
// source with that error, so the tool list shows it.
func New(cfg Config, loadErr error, opts Options) *Manager {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = minBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = maxBackoff
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxMessageBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m := &Manager{opts: opts, broken: brokenSources(loadErr)}
	for _, c := range cfg.Servers {
		m.servers = append(m.servers, m.newServer(c))
	}
	return m
}

// brokenSources lists each unusable file of loadErr as a source with its error.
func brokenSources(loadErr error) []host.ToolSource {
	var out []host.ToolSource
	for _, e := range unwrapJoined(loadErr) {
		var fe *FileError
		if errors.As(e, &fe) {
			out = append(out, brokenSource{name: "mcp.json:" + fe.File, err: fe})
		} else {
			out = append(out, brokenSource{name: "mcp.json", err: e})
		}
	}
	return out
}

// newServer makes the (not yet started) server of one entry.
func (m *Manager) newServer(c ServerConfig) *Server {
	opts := m.opts
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: c, getenv: opts.Getenv, log: opts.Logger, version: opts.Version,
		tokens: opts.Tokens, signIn: opts.SignIn, elicit: opts.Elicit, roots: opts.Roots,
		sandbox: opts.Sandbox, withheld: opts.Withheld,
		minBackoff: opts.MinBackoff, maxBackoff: opts.MaxBackoff, maxLine: opts.MaxLineBytes,
		stderr: &tail{}, err: fmt.Errorf("MCP server %s: not connected yet", c.Name),
		ctx: ctx, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}), wake: make(chan struct{}, 1),
	}
	s.changed, s.promptsChanged = m.notify, m.notifyPrompts
	return s
}

// Start connects every server in the background and waits, up to ctx, for each one's first
// attempt, so that a one-shot command sees the tools of the servers that came up.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	m.started = true
	servers := slices.Clone(m.servers)
	m.mu.Unlock()
	for _, s := range servers {
		s.start()
	}
	for _, s := range servers {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return
		}
	}
}

// start connects the server in the background, once.
func (s *Server) start() {
	if s.started.CompareAndSwap(false, true) {
		go s.run()
	}
}

// Sources are the servers (and unusable files) as host tool sources, as of now: the
// manager is a host.SourceSet, so a host lists the servers a Reload brought.
func (m *Manager) Sources() []host.ToolSource {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]host.ToolSource, 0, len(m.servers)+len(m.broken))
	for _, s := range m.servers {
		out = append(out, s)
	}
	return append(out, m.broken...)
}

var _ host.SourceSet = (*Manager)(nil)

// Servers lists the managed servers.
func (m *Manager) Servers() []*Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.servers)
}

// OnChange sets what runs when a server's tools change: the host's Reload.
func (m *Manager) OnChange(f func()) { m.onAny.Store(&f) }

// notify tells the host that a server's tools changed, and the prompts' subscribers too:
// a server that connects or goes away brings or takes its prompts with its tools.
func (m *Manager) notify() {
	if f := m.onAny.Load(); f != nil {
		(*f)()
	}
	m.notifyPrompts()
}

// OnClose adds what Close does once every server has stopped (the end of the sandbox that
// confined them). Not safe to call with Close.
func (m *Manager) OnClose(f func()) { m.after = append(m.after, f) }

// Close disconnects every server and stops their processes; a Reload after it does nothing.
func (m *Manager) Close() {
	m.close.Do(func() {
		defer func() {
			for _, f := range m.after {
				f()
			}
		}()
		m.mu.Lock()
		m.closed = true
		servers := m.servers
		m.mu.Unlock()
		closeServers(servers)
	})
}

func closeServers(servers []*Server) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
}

// brokenSource is an mcp.json that could not be used, listed with its error.
type brokenSource struct {
	name string
	err  error
}

func (b brokenSource) Name() string                { return b.name }
func (b brokenSource) Kind() string                { return "mcp" }
func (b brokenSource) Tools() ([]tool.Tool, error) { return nil, b.err }

func unwrapJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
