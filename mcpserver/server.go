package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Host is what the server needs of a tool host; *host.Host has it.
type Host interface {
	Tools() []host.Entry
	Subscribe(ch chan<- host.ToolsChanged) (cancel func())
	Invoke(ctx context.Context, call host.Call) host.Outcome
	HasLLM() bool
}

var _ Host = (*host.Host)(nil)

// DefaultInputTimeout is how long a call parked on a multi-round-trip input request waits
// for the client to come back with the answer before it is cancelled.
const DefaultInputTimeout = 10 * time.Minute

// Options configure a Server. The zero value of every field has a sensible default.
type Options struct {
	// Workspace is the folder calls work in; its Path defaults to the current folder.
	Workspace host.Workspace
	// Policy decides permission asks when the client cannot answer them (it declared no
	// elicitation). The zero Policy denies every permission.
	Policy ask.Policy
	// InputTimeout bounds the wait for a multi-round-trip client's retry
	// (DefaultInputTimeout when zero).
	InputTimeout time.Duration
	// Version is the version jean2 reports to clients ("dev" when empty).
	Version string
	// NextCallPoll is how long a stdio session polls for the client's next message after
	// answering its only call in flight, before it sleeps (DefaultNextCallPoll when zero;
	// negative: never). See DefaultNextCallPoll.
	NextCallPoll time.Duration
	// FastJSONWait is how long a tools/call on HTTPHandler's fast path may run and still
	// be answered as one JSON object rather than an SSE stream (DefaultFastJSONWait when
	// zero). See httpfast.go.
	FastJSONWait time.Duration
	// HTTPSessionTimeout closes a streamable HTTP session with no request in flight for
	// this long (DefaultHTTPSessionTimeout when zero).
	HTTPSessionTimeout time.Duration
	// AskGatherWindow is how long an input-required round (2026-07-28) waits for more of a
	// call's asks after one arrives, so asks made together travel in one round (20 ms when
	// zero).
	AskGatherWindow time.Duration
	// LLM is the model of the host's calls, for a host whose model is resolved at each
	// request (jean2 serve's providers): while its requests fail with tool.ErrNoLLM, a
	// client that declared sampling answers them. Nil: the host's HasLLM decides once.
	LLM tool.LLM
	// PromptPoll is how often the skills are read again to tell clients that the prompts
	// changed (DefaultPromptPoll when zero; negative: only before a request that shows them).
	PromptPoll time.Duration
	// Imports are the prompts of the MCP servers jean2 imports (mcpclient.Manager), offered
	// beside the skills and saved prompts (imported_prompts.go); nil offers none.
	Imports PromptImports
	// Logger receives the server's own diagnostics (not tool logs); nil discards them.
	Logger *slog.Logger
}

// Server serves a host's tools over MCP. Make one with New; it follows the host's tool list
// until Close.
type Server struct {
	h    Host
	opts Options
	log  *slog.Logger
	mcp  *mcp.Server

	rounds    *rounds
	tasks     *taskTable
	overflows overflowResources       // overflowing results offered as resources (resources.go)
	prompts   promptSet               // skills and saved prompts offered as prompts (prompts.go)
	authored  authoredSet             // $JEAN2_HOME/resources (authored_resources.go)
	serving   atomic.Pointer[serving] // the workspace and policy calls run with now

	mu       sync.Mutex
	listed   map[string]string          // tool name → the JSON listed for it, so a reload sends only changes
	handlers map[string]mcp.ToolHandler // tool name → its handler, for fast calls (fastcall.go)
	tasksOf  map[string]string          // tool name → its task support when not forbidden (taskext.go)
	// The tools whose calls become tasks only once their first answers come (taskext.go).
	afterInput map[string]bool

	connMu     sync.Mutex
	conns      map[*fastConn]bool // open connections made by Connect or Run
	connClosed bool
	calls      sync.WaitGroup // the goroutines of fast calls, on any connection and over HTTP
	// callGoroutines counts the goroutines that run stdio's fast calls or wait for the next
	// (fastConn.serveCalls), for tests to see that they are reused and end.
	callGoroutines atomic.Int64
	httpFast       httpFast     // the fast calls of HTTP sessions (httpfast.go)
	idle           idleSessions // HTTP sessions' idle clocks (httpfast.go)

	sessMu   sync.Mutex
	sessions map[*mcp.ServerSession]*session

	// Stateless calls (2026-07-28) are sessionless calls sharing this temporary folder
	// scope (host.Call.TempScope), removed at Close once used.
	statelessScope string
	statelessUsed  atomic.Bool

	unsubscribe func()
	stopImports func() // stops following the imported prompts
	done        chan struct{}
	impl        *mcp.Implementation // what the server says it is (serverInfo)
	closeOnce   sync.Once
}

// session is what jean2 keeps for one MCP session: the id its calls share (grants and the
// temporary folder are scoped by it) and the facts of the conversation.
type session struct {
	id    string
	facts *tool.SessionFacts
}

// serving is what calls run with, changed as a whole by SetWorkspace and SetPolicy.
type serving struct {
	workspace host.Workspace
	policy    ask.Policy
}

// checkWorkspace makes ws's folder absolute and checks that it is a folder.
func checkWorkspace(ws host.Workspace) (host.Workspace, error) {
	abs, err := filepath.Abs(ws.Path)
	if err != nil {
		return ws, fmt.Errorf("mcp server: workspace %s: %w", ws.Path, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return ws, fmt.Errorf("mcp server: workspace %s is not a folder", abs)
	}
	ws.Path = abs
	return ws, nil
}

// SetWorkspace makes calls from now on work in ws (calls running keep theirs), for every
// client connected: a workspace moved or given more folders does not end their sessions.
// It fails, changing nothing, when ws's folder is not a folder.
func (s *Server) SetWorkspace(ws host.Workspace) error {
	ws, err := checkWorkspace(ws)
	if err != nil {
		return err
	}
	for {
		old := s.serving.Load()
		next := &serving{workspace: ws, policy: old.policy}
		if s.serving.CompareAndSwap(old, next) {
			return nil
		}
	}
}

// SetPolicy makes p decide, from now on, the permission asks of clients that cannot answer
// them.
func (s *Server) SetPolicy(p ask.Policy) {
	for {
		old := s.serving.Load()
		next := &serving{workspace: old.workspace, policy: p}
		if s.serving.CompareAndSwap(old, next) {
			return
		}
	}
}

// New makes a server that lists h's serving tools and follows its reloads, sending
// notifications/tools/list_changed when the list changes.
func New(h Host, opts Options) (*Server, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{
		h: h, opts: opts, log: opts.Logger,
		listed:     map[string]string{},
		handlers:   map[string]mcp.ToolHandler{},
		tasksOf:    map[string]string{},
		afterInput: map[string]bool{},
		conns:      map[*fastConn]bool{},
		sessions:   map[*mcp.ServerSession]*session{},
		done:       make(chan struct{}),

		statelessScope: "mcp-stateless-" + randomID(),
	}
	s.serving.Store(&serving{workspace: opts.Workspace, policy: opts.Policy})
	s.rounds = newRounds(opts.InputTimeout, opts.AskGatherWindow)
	s.tasks = newTaskTable()
	s.impl = &mcp.Implementation{Name: "jean2", Title: "jean2 tool host", Version: opts.Version}
	s.mcp = mcp.NewServer(s.impl, &mcp.ServerOptions{
		Logger:             sdkLogger(opts.Logger),
		SubscribeHandler:   s.subscribe,
		CompletionHandler:  s.complete,
		UnsubscribeHandler: unsubscribe,
		// Tools are announced even while there are none, so a client learns that the list
		// can change; logging lets it set a level for the tools' log lines; resources hold
		// overflowing results (resources.go), added as calls overflow; prompts are the
		// skills (prompts.go), declared even while there are none for the same reason.
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Logging:     &mcp.LoggingCapabilities{},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
		},
	})
	s.mcp.AddReceivingMiddleware(tasksMiddleware, s.extMiddleware, s.promptsMiddleware)
	s.addWorkspaceTemplate()
	s.prompts.listed = map[string]string{}
	s.stopImports = func() {}
	if opts.Imports != nil {
		// Told at once, not at the next poll: a client listening for the change hears it.
		s.stopImports = opts.Imports.OnPromptsChange(s.syncPrompts)
	}
	s.authored.listed, s.authored.templates = map[string]string{}, map[string]*uritemplate.Template{}
	s.syncPrompts()
	s.syncResources(context.Background())
	go s.pollPrompts(opts.PromptPoll)
	s.followTools()
	return s, nil
}

// withDefaults fills in what opts leaves out: the current folder as the workspace (checked),
// the timeouts, the version and a logger that drops everything.
func withDefaults(opts Options) (Options, error) {
	if opts.Workspace.Path == "" {
		wd, err := os.Getwd()
		if err != nil {
			return opts, fmt.Errorf("mcp server: no workspace given and the current folder is unknown: %w", err)
		}
		opts.Workspace.Path = wd
	}
	ws, err := checkWorkspace(opts.Workspace)
	if err != nil {
		return opts, err
	}
	opts.Workspace = ws
	if opts.InputTimeout <= 0 {
		opts.InputTimeout = DefaultInputTimeout
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.NextCallPoll == 0 {
		opts.NextCallPoll = DefaultNextCallPoll
	}
	if opts.PromptPoll == 0 {
		opts.PromptPoll = DefaultPromptPoll
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return opts, nil
}

// followTools lists the host's tools and lists them again at each reload, until Close.
// It subscribes before the first sync so that no reload falls between the two.
func (s *Server) followTools() {
	events := make(chan host.ToolsChanged, 16)
	s.unsubscribe = s.h.Subscribe(events)
	s.sync()
	go func() {
		for {
			select {
			case <-events:
				s.sync()
			case <-s.done:
				return
			}
		}
	}()
}

// MCP returns the underlying go-sdk server (to connect other transports).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Connect serves one client on t until the client goes away or the session is closed. Calls
// of listed tools from clients on classic protocol revisions are answered without the
// go-sdk's dispatch (fastcall.go); everything else goes through s.MCP().
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	ss, _, err := s.connect(ctx, t)
	return ss, err
}

// Run serves one client on t (a StdioTransport for jean2 mcp) until the client goes away
// or ctx ends, and returns once the session's calls have ended.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ss, conn, err := s.connect(ctx, t)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-ended
		err = ctx.Err()
	case err = <-ended:
	}
	conn.wait()
	return err
}

func (s *Server) connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, *fastConn, error) {
	ft := &fastTransport{inner: t, srv: s}
	ss, err := s.mcp.Connect(ctx, ft, nil)
	if ft.conn != nil {
		defer close(ft.conn.ready)
	}
	if err != nil {
		return nil, nil, err
	}
	ft.conn.session.Store(ss)
	return ss, ft.conn, nil
}

// addConn records an open connection so that Close can end its calls; false once s is
// closed.
func (s *Server) addConn(c *fastConn) bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.connClosed {
		return false
	}
	s.conns[c] = true
	return true
}

// removeConn forgets a closed connection (its calls are cancelled; s.calls still counts
// them until they end).
func (s *Server) removeConn(c *fastConn) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	delete(s.conns, c)
}

// toolHandler is the handler of a listed tool, nil for a name not listed.
func (s *Server) toolHandler(name string) mcp.ToolHandler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handlers[name]
}

// Close stops following the host, cancels the calls parked on a client's input and the
// calls of sessions made by Connect or Run, and waits for the latter to end.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.unsubscribe()
		s.stopImports()
		close(s.done)
		s.rounds.close()
		s.tasks.close()
		s.connMu.Lock()
		s.connClosed = true
		conns := s.conns
		s.conns = nil
		s.connMu.Unlock()
		for c := range conns {
			c.stop()
		}
		s.httpFast.close()
		s.idle.closeAll()
		s.calls.Wait()
		s.removeStatelessTemp()
	})
	return nil
}

// removeStatelessTemp removes the stateless calls' temporary folder (their overflow files)
// when there were any and the host can.
func (s *Server) removeStatelessTemp() {
	r, ok := s.h.(interface{ RemoveWorkspaceTemp(string) error })
	if !ok || !s.statelessUsed.Load() {
		return
	}
	if err := r.RemoveWorkspaceTemp(s.statelessScope); err != nil {
		s.log.Warn("remove the stateless calls' temporary folder", "scope", s.statelessScope, "error", err)
	}
}

// sync makes the listed tools match the host's serving tools. The go-sdk server sends
// list_changed after each change (coalesced).
func (s *Server) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, e := range s.h.Tools() {
		if e.Status != host.StatusOK || e.Definition == nil {
			continue
		}
		def := *e.Definition
		t, err := listTool(def)
		if err != nil {
			s.log.Warn("tool not offered over MCP", "tool", def.Name, "error", err)
			continue
		}
		seen[def.Name] = true
		if ts := def.TaskSupport(); ts != tool.TaskForbidden {
			s.tasksOf[def.Name] = ts
		} else {
			delete(s.tasksOf, def.Name)
		}
		if def.Execution != nil && def.Execution.TaskAfterInput {
			s.afterInput[def.Name] = true
		} else {
			delete(s.afterInput, def.Name)
		}
		key, _ := json.Marshal(t)
		if s.listed[def.Name] == string(key) {
			continue
		}
		s.listed[def.Name] = string(key)
		h := s.handler(def)
		s.handlers[def.Name] = h
		s.mcp.AddTool(t, h)
	}
	var gone []string
	for name := range s.listed {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.listed, name)
			delete(s.handlers, name)
			delete(s.tasksOf, name)
			delete(s.afterInput, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
}

// listTool is a definition as MCP lists it: name, title, description, schemas and the
// behaviour hints the definition gives.
func listTool(def tool.Definition) (*mcp.Tool, error) {
	in, err := objectSchema(def.InputSchema, true)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	t := &mcp.Tool{Name: def.Name, Title: def.Title, Description: def.Description, InputSchema: in}
	// MCP requires an object output schema (clients reject the tool list otherwise); a
	// tool whose results are not objects is listed without one and returns text only.
	if out, err := objectSchema(def.OutputSchema, false); err == nil && out != nil {
		t.OutputSchema = out
	}
	if a := def.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{
			ReadOnlyHint:    a.ReadOnlyHint != nil && *a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint != nil && *a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return t, nil
}

// objectSchema returns a schema whose root has type "object". A missing type is filled in
// when fill is set (jean2 accepts an input schema that leaves it out); any other root type is
// an error. An empty schema is nil.
func objectSchema(raw json.RawMessage, fill bool) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if fill {
			return json.RawMessage(`{"type":"object"}`), nil
		}
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	switch m["type"] {
	case "object":
		return raw, nil
	case nil:
		if !fill {
			return nil, fmt.Errorf("the root has no type; MCP needs \"object\"")
		}
		m["type"] = "object"
		return json.Marshal(m)
	default:
		return nil, fmt.Errorf("the root type is %v; MCP needs \"object\"", m["type"])
	}
}

// session returns jean2's record of a call's MCP session, made on its first call and forgotten
// when the session ends.
func (s *Server) session(req *mcp.CallToolRequest) *session {
	if stateless(req) {
		// No session, so nothing of one call carries over to another (session grants,
		// refusals, the shell's background commands); its facts are its own.
		return &session{facts: tool.NewSessionFacts()}
	}
	ss := req.Session
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if sess, ok := s.sessions[ss]; ok {
		return sess
	}
	id := ss.ID()
	if id == "" {
		id = randomID()
	}
	sess := &session{id: "mcp-" + safeID(id), facts: tool.NewSessionFacts()}
	s.sessions[ss] = sess
	go func() {
		_ = ss.Wait()
		s.sessMu.Lock()
		delete(s.sessions, ss)
		s.sessMu.Unlock()
		s.endSession(sess.id)
	}()
	return sess
}

// sessionEnder is a Host that lets go of what it keeps for a session (host.Host: its
// temporary folder and mount, its tool workers and cgroup, the shell's background commands).
type sessionEnder interface {
	EndSession(ctx context.Context, workspaceID, sessionID string) error
}

// endSession lets the host free an MCP session's keep once its client is gone (closed,
// deleted, or idle past HTTPSessionTimeout).
func (s *Server) endSession(id string) {
	e, ok := s.h.(sessionEnder)
	if !ok || id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.EndSession(ctx, s.serving.Load().workspace.ID, id); err != nil {
		s.log.Warn("mcp: end a session's keep", "session", id, "error", err)
	}
}

// stateless reports whether a call is a stateless HTTP request (2026-07-28): one on the
// fast path (httpstateless.go), which has no session, or one the go-sdk serves in a session
// made for the request. A 2026-07-28 client over stdio keeps its connection's session.
func stateless(req *mcp.CallToolRequest) bool {
	return req.Session == nil || (req.Extra != nil && req.Extra.Header != nil && usesRounds(req.Session))
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// safeID keeps a client-chosen session id fit for a folder name.
func safeID(id string) string {
	b := []byte(id)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// sdkLogger passes on the go-sdk's warnings and errors; its routine lines (a session
// connected, a level set) only when the logger shows debug lines.
func sdkLogger(l *slog.Logger) *slog.Logger {
	if l.Enabled(context.Background(), slog.LevelDebug) {
		return l
	}
	return slog.New(floorHandler{l.Handler(), slog.LevelWarn})
}

type floorHandler struct {
	slog.Handler
	floor slog.Level
}

func (f floorHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.floor && f.Handler.Enabled(ctx, l)
}

func (f floorHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return floorHandler{f.Handler.WithAttrs(as), f.floor}
}

func (f floorHandler) WithGroup(name string) slog.Handler {
	return floorHandler{f.Handler.WithGroup(name), f.floor}
}
