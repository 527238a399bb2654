package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

// Workspace is the folder a call works in, plus the extra paths it may touch.
type Workspace struct {
	ID      string
	Path    string
	Allowed []string
}

// Call is one tool call as a caller (the harness, the CLI, MCP, the API) hands it to Invoke.
type Call struct {
	Tool   string
	Args   json.RawMessage
	CallID string // the provider's tool-call id; one is made when empty
	// SessionID names the session whose temporary folder the call uses; its workers are
	// those of its workspace (Workspace.ID). "" shares the workspace's folder for
	// sessionless calls, or, with no workspace ID either, gives the call a temporary folder
	// removed when it ends.
	SessionID string
	Workspace Workspace
	// TempScope, for calls with no workspace ID, groups sessionless calls as a workspace
	// groups its own: they share one temporary folder and the workers that serve it (an MCP
	// server's stateless calls: a folder, a mount and a sandboxed worker's start per call
	// otherwise). A name unique to its caller; only the temporary folder's place uses it
	// (grants still go by the workspace's path), and RemoveWorkspaceTemp(TempScope) removes
	// it. Ignored when Workspace.ID is set.
	TempScope string

	// Asker answers the call's asks (a terminal, a web client, an MCP client, a policy).
	// Nil refuses every ask with an error that says no one can answer.
	Asker tool.Asker
	// Ledger is the turn's ledger; nil gives the call one of its own.
	Ledger *tool.Ledger
	// Session holds the conversation's facts; nil gives the call empty ones.
	Session *tool.SessionFacts
	// Progress receives progress reports; nil drops them.
	Progress func(tool.Progress)
	// Workspaces widens or narrows the workspace's allowed paths for good; nil keeps the
	// change to this call.
	Workspaces tool.WorkspacePaths
	// LLM serves this call's ctx.llm instead of the host's (an MCP client's sampling when
	// the host has no provider); nil uses the host's.
	LLM tool.LLM
	// LogHandler also receives the tool's log records (an MCP client's log notifications);
	// nil leaves them to the host's log alone.
	LogHandler slog.Handler
}

// Outcome is what came of a call.
type Outcome struct {
	CallID      string `json:"callId"`
	Tool        string `json:"tool"`
	ToolVersion string `json:"toolVersion,omitempty"`
	// ToolHash is the content hash of the version that ran (folder tools): what a grant
	// from this call's refusal names (GrantPermissions).
	ToolHash string      `json:"toolHash,omitempty"`
	Result   tool.Result `json:"result"` // normalized; the visualization is kept here for people
	// ModelText is what the model sees: the result without its visualization (as text when
	// it is text, tool.Result.ModelText), cut to a preview when it overflows.
	ModelText string    `json:"modelText"`
	Overflow  *Overflow `json:"overflow,omitempty"`
	// VisualizationError says why a visualization the tool returned was dropped.
	VisualizationError string        `json:"visualizationError,omitempty"`
	Duration           time.Duration `json:"duration"`
}

func newCallID() string {
	const prefix = "call_"
	var b [len(prefix) + 16]byte
	copy(b[:], prefix)
	var r [8]byte
	_, _ = rand.Read(r[:])
	hex.Encode(b[len(prefix):], r[:])
	return string(b[:])
}

// Invoke runs one call on the tool version live now and never panics: an unknown or broken
// tool, invalid arguments, a refused power, a crash or a timeout each come back as a failed
// result whose text the model can act on.
func (h *Host) Invoke(ctx context.Context, call Call) Outcome {
	start := time.Now()
	if call.CallID == "" {
		call.CallID = newCallID()
	}
	out := Outcome{CallID: call.CallID, Tool: call.Tool}
	finish := func(res tool.Result) Outcome {
		out.Result = res.Normalize()
		out.Duration = time.Since(start)
		h.finishOutcome(&out, call)
		return out
	}

	// A reload may retire the version between lookup and acquire; the next snapshot has
	// its successor.
	var v *version
	var cat *catalog
	for attempt := 0; ; attempt++ {
		cat = h.cat.Load()
		var ok bool
		v, ok = cat.versions[call.Tool]
		if !ok {
			return finish(tool.Result{Error: cat.unavailable(call.Tool)})
		}
		if v.acquire() {
			break
		}
		if attempt > 100 {
			return finish(tool.Errorf("tool %s is being reloaded; try again", call.Tool))
		}
	}
	defer v.release()
	out.ToolVersion, out.ToolHash = v.entry.Version, v.entry.Hash

	cs, err := h.callContext(&call, v)
	if err != nil {
		return finish(tool.Errorf("%s: %v", call.Tool, err))
	}
	// The broker forgets the call's once-grants when the call ends.
	defer cs.powers.close()
	// The quota holds for what the call's workers may write: the session's temporary
	// folder, their TMPDIR (each session has its own quota).
	quotaDir := cs.ctx.TempDir
	if err := h.checkSessionTemp(call.Tool, call.CallID, quotaDir); err != nil {
		return finish(tool.Result{Error: err.Error()})
	}
	ctx, stopCall := context.WithCancelCause(ctx)
	defer stopCall(nil)
	// Only a call that can write beside ctx.fs (a worker, a built-in that starts processes)
	// needs watching while it runs; what a built-in writes through ctx.fs is measured after.
	stopWatch := func() {}
	if mayWriteBesideFS(v) {
		stopWatch = h.watchSessionTemp(stopCall, call.Tool, call.CallID, quotaDir)
	}
	changesBefore := cs.ctx.Ledger.Len()
	res := cat.registry.Execute(ctx, call.Tool, call.Args, &cs.ctx)
	stopWatch()
	out = finish(res)
	// Measured after the call (and its overflow file): past the quota, the session's next
	// calls are refused.
	if mayHaveWrittenTemp(v, out, cs.ctx.Ledger.Len() != changesBefore) {
		_ = h.measureSessionTemp(quotaDir)
	}
	h.dropCallTemp(call, out)
	return out
}

// finishOutcome checks the visualization and makes the model's text, cutting overflow to a
// file in the session's temporary folder.
func (h *Host) finishOutcome(out *Outcome, call Call) {
	folder := callFolder{h: h, call: &call, callID: out.CallID}
	if out.Result = checkContent(out.Result, call.Tool); len(out.Result.Content) > 0 {
		// Big blocks go to files in the session's folder (a stand-in when it cannot be had),
		// and the images are the tool card's when the tool drew nothing itself.
		tempDir, _ := folder.get()
		out.Result.Content = spillContent(out.Result.Content, h.layout.Temp, tempDir, out.CallID)
		if out.Result.Visualization == nil {
			out.Result.Visualization = tool.ImagesVisualization(out.Result.Content)
		}
	}
	if viz := out.Result.Visualization; viz != nil {
		if err := checkVisualizationSize(h.sb.limits, call.Tool, out.CallID, len(viz)); err != nil {
			out.Result = tool.Result{Error: err.Error()}.Normalize()
		}
	}
	if viz := out.Result.Visualization; viz != nil {
		if err := tool.CheckVisualization(viz); err != nil {
			out.VisualizationError = err.Error()
			out.Result.Visualization = nil
			h.log.Warn("visualization dropped", "tool", call.Tool, "call", out.CallID, "error", err)
		}
	}
	text, isText := modelText(out.Result)
	if err := checkResultSize(h.sb.limits, call.Tool, out.CallID, len(text)); err != nil {
		out.Result = tool.Result{Error: err.Error()}.Normalize()
		text, isText = out.Result.ModelJSON(), false
	}
	if len(text) > OverflowLimit {
		if _, err := folder.get(); err != nil {
			out.ModelText = string(text)
			return
		}
	}
	var err error
	out.ModelText, out.Overflow, err = cutOverflow(text, isText, h.layout.Temp, folder.dir, out.CallID)
	if err != nil {
		// Nothing is lost: the model gets the whole text when the file cannot be written.
		h.log.Error("overflow file", "tool", call.Tool, "call", out.CallID, "error", err)
		out.ModelText = string(text)
	}
}

// callFolder is a call's temporary folder, looked up (and checked to be a real folder,
// sessionTemp) when the outcome first writes in it: most results write nothing, and the
// check is a system call or two on every call's path.
type callFolder struct {
	h      *Host
	call   *Call
	callID string
	dir    string
	err    error
	done   bool
}

func (f *callFolder) get() (string, error) {
	if !f.done {
		f.dir, f.err = f.h.callTemp(*f.call, f.callID)
		f.done = true
	}
	return f.dir, f.err
}

// callTemp is the call's temporary folder (sessionTemp of its tempKey).
func (h *Host) callTemp(call Call, callID string) (string, error) {
	key, err := tempKey(call, callID)
	if err != nil {
		return "", err
	}
	return h.sessionTemp(key)
}

// sessionTemp returns a call's temporary folder (tempKey's path under Layout.Temp),
// creating it (and its tmpfs: mountScope) once per host and making sure at every call that
// it is a real folder: a link (to "/") in a session's place would be taken by ctx.fs for a
// root and by the shell for a folder to grant its commands. Confined workers no longer
// write the folder that holds it (each writes its session's own), but an unconfined one may
// (TestSandboxAttackSessionFolder…).
func (h *Host) sessionTemp(key string) (string, error) {
	if v, ok := h.temps.Load(key); ok {
		dir := v.(string)
		if !h.mountedHere(dir) { // a tmpfs of this host's cannot be replaced: no stat
			if err := keepRealFolder(dir); err != nil {
				return "", err
			}
		}
		return dir, nil
	}
	h.mountScope(key)
	dir, err := h.layout.tempFolder(key)
	if err != nil {
		return "", err
	}
	if err := keepRealFolder(dir); err != nil {
		return "", err
	}
	h.temps.Store(key, dir)
	return dir, nil
}

// pinRoots returns where the call's workspace folder and allowed paths really are: where
// each led when this host first served it. A workspace may lie inside another (~/code and
// ~/code/app), whose tools may write it: one can move the inner folder aside and put a link
// in its place, to the rest of the user's files or to "/". Resolved afresh at each call,
// the inner workspace's ctx.fs and workers would take the link's target for their
// workspace; pinned, a path that leads elsewhere now refuses the call and says why.
func (h *Host) pinRoots(ws Workspace) (map[string]string, error) {
	out := make(map[string]string, 1+len(ws.Allowed))
	for _, root := range append([]string{ws.Path}, ws.Allowed...) {
		if root == "" || !filepath.IsAbs(root) {
			continue
		}
		real, err := h.pinRoot(root)
		if err != nil {
			return nil, err
		}
		out[filepath.Clean(root)] = real
	}
	return out, nil
}

// PinFolder pins a workspace folder or allowed path where it leads now, replacing an
// earlier pin: the server calls it when a person adds a workspace or changes its folders,
// and at its start for the workspaces it has, so that a folder swapped before its first
// call is not taken for the workspace (pinRoots).
func (h *Host) PinFolder(path string) string { return h.pins.Set(path) }

// pinRoot is pinRoots for one folder (sandbox.Pins: one stat while nothing moved).
func (h *Host) pinRoot(root string) (string, error) { return h.pins.Real(root) }

// callState is what the host makes for one call, in one allocation: the tool.Context,
// its logger, and the powers behind its file system, asks and workspace changes.
type callState struct {
	ctx     tool.Context
	logger  slog.Logger
	logH    callLogHandler
	powers  callPowers
	ledger  tool.Ledger       // the call's own, when the caller gave none
	session tool.SessionFacts // the same
}

func noProgress(tool.Progress) {}

// callContext builds the context whose powers the host enforces for one call.
func (h *Host) callContext(call *Call, v *version) (*callState, error) {
	ws := call.Workspace
	if ws.Path == "" {
		return nil, fmt.Errorf("the call has no workspace folder")
	}
	key, err := tempKey(*call, call.CallID)
	if err != nil {
		return nil, err
	}
	tempDir, err := h.sessionTemp(key)
	if err != nil {
		return nil, err
	}
	realRoots, err := h.pinRoots(ws)
	if err != nil {
		return nil, err
	}
	asker := call.Asker
	if asker == nil {
		asker = ask.Refuse{}
	}
	cs := &callState{}
	cs.logH = callLogHandler{inner: callLogInner(h.log.Handler(), *call), tool: v.def.Name, call: call.CallID}
	cs.logger = *slog.New(&cs.logH)
	// What tool.NewContext would fill in, filled here so the context lives in cs.
	c := &cs.ctx
	*c = tool.Context{
		CallID:       call.CallID,
		SessionID:    call.SessionID,
		WorkspaceID:  ws.ID,
		Workspace:    ws.Path,
		AllowedPaths: append([]string(nil), ws.Allowed...),
		TempDir:      tempDir,
		Home:         h.home,
		Tool:         v.def.Name,
		ToolVersion:  v.entry.Hash,
		LLM:          callLLM(h.llm, *call),
		Env:          v.toolEnv(),
		Logger:       &cs.logger,
		Ledger:       call.Ledger,
		Session:      call.Session,
		Progress:     call.Progress,
		FS:           &cs.powers,
		Asker:        &cs.powers,
		Workspaces:   &cs.powers,
		Refused:      h.grants.Refused(call.SessionID),
	}
	if c.Ledger == nil {
		c.Ledger = &cs.ledger // a zero Ledger is what tool.NewLedger makes
	}
	if c.Session == nil {
		c.Session = &cs.session // likewise tool.NewSessionFacts
	}
	if c.Progress == nil {
		c.Progress = noProgress
	}
	if c.Home == "" {
		c.Home, _ = os.UserHomeDir()
	}
	cs.powers = callPowers{
		ctx: c, env: v.env, persist: call.Workspaces, scope: c.Scope(), ledger: c.Ledger,
		protected: h.sb.protected, protectedPlaces: h.sb.protectedPlaces(), realRoots: realRoots,
		broker: ask.BrokerOptions{
			Asker: asker, Grants: h.grants,
			Tool: v.def.Name, ToolVersion: v.entry.Hash,
			CallID: call.CallID, SessionID: call.SessionID, WorkspaceID: ws.ID,
			Workspace: ws.Path, Home: h.home, Protected: h.sb.protected, TempDir: tempDir,
		},
	}
	return cs, nil
}

// callPowers are a call's file system, asks and workspace changes. They are built on first
// use, since most calls never make a request to the host; what they enforce is fixed when
// the call starts (the scope, the broker's facts), exactly as if they were built then.
type callPowers struct {
	ctx     *tool.Context     // the call's context, for telling it apart from a caller's own
	env     map[string]string // the version's variables, read-only
	persist tool.WorkspacePaths
	scope   policy.Scope
	ledger  *tool.Ledger
	broker  ask.BrokerOptions
	// protected are the places ctx.fs never touches whatever the scope and grants: jean2's
	// home, the tools folder, the credential folders (the sandbox's protected list).
	protected []string
	// protectedPlaces is protected as toolfs.ExpandPlaces gives it, resolved by the host.
	protectedPlaces []string
	// realRoots is where the workspace folder and allowed paths lead, as pinned (pinRoots).
	realRoots map[string]string

	ready atomic.Bool // built; read without the lock
	mu    sync.Mutex
	ended bool // the call is over
	b     *ask.Broker
	fs    liveFS
	ws    callWorkspace
}

var (
	_ tool.FS             = (*callPowers)(nil)
	_ tool.Asker          = (*callPowers)(nil)
	_ tool.WorkspacePaths = (*callPowers)(nil)
)

// built builds the powers on first use.
func (p *callPowers) built() *callPowers {
	if p.ready.Load() {
		return p
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready.Load() {
		return p
	}
	p.b = ask.NewBroker(p.broker)
	p.fs.cur.Store(p.newFS(p.scope))
	p.ws = callWorkspace{scope: p.scope, tool: p.broker.Tool, broker: p.b, persist: p.persist, protected: p.protected,
		apply: func(scope policy.Scope) { p.fs.cur.Store(p.newFS(scope)) }}
	if p.ended {
		// Used after the call ended (a Go tool's stray goroutine): no once-grants outlive it.
		p.b.Close()
	}
	p.ready.Store(true)
	return p
}

// newFS is the call's file system for scope. Each workspace root's .jean2 folder is
// read-only to it: jean2 acts on the settings there (mcp.json names commands it starts).
func (p *callPowers) newFS(scope policy.Scope) *toolfs.FS {
	return toolfs.New(toolfs.Options{Scope: scope, Tool: p.broker.Tool, CallID: p.broker.CallID, Ledger: p.ledger, Grants: p.b,
		Protected: p.protected, ProtectedPlaces: p.protectedPlaces, ReadOnly: scope.SettingsDirs(), RealRoots: p.realRoots})
}

// close ends the call: the broker forgets its once-grants. Powers never built hold none.
func (p *callPowers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	if p.b != nil {
		p.b.Close()
	}
}

// allowed returns the call's allowed paths now.
func (p *callPowers) allowed() []string {
	if !p.ready.Load() {
		return append([]string{}, p.scope.Allowed...)
	}
	return p.ws.allowed()
}

// callEnv returns the variables to send with a call: the version's own map when c is the
// host's context for the call (nothing can change it), else a copy of c's.
func callEnv(c *tool.Context) map[string]string {
	if p, ok := c.Workspaces.(*callPowers); ok && p.ctx == c {
		return p.env
	}
	return c.Env.Map()
}

func (p *callPowers) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	return p.built().b.Ask(ctx, a)
}

func (p *callPowers) AddWorkspacePath(ctx context.Context, path string) error {
	return p.built().ws.AddWorkspacePath(ctx, path)
}

func (p *callPowers) RemoveWorkspacePath(ctx context.Context, path string) error {
	return p.built().ws.RemoveWorkspacePath(ctx, path)
}

func (p *callPowers) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return p.built().fs.ReadFile(ctx, path)
}
func (p *callPowers) WriteFile(ctx context.Context, path string, d []byte) error {
	return p.built().fs.WriteFile(ctx, path, d)
}
func (p *callPowers) AppendFile(ctx context.Context, path string, d []byte) error {
	return p.built().fs.AppendFile(ctx, path, d)
}
func (p *callPowers) ReadDir(ctx context.Context, path string) ([]tool.DirEntry, error) {
	return p.built().fs.ReadDir(ctx, path)
}
func (p *callPowers) Exists(ctx context.Context, path string) (bool, error) {
	return p.built().fs.Exists(ctx, path)
}
func (p *callPowers) Stat(ctx context.Context, path string) (tool.FileInfo, error) {
	return p.built().fs.Stat(ctx, path)
}
func (p *callPowers) Mkdir(ctx context.Context, path string, r bool) error {
	return p.built().fs.Mkdir(ctx, path, r)
}
func (p *callPowers) Remove(ctx context.Context, path string, r bool) error {
	return p.built().fs.Remove(ctx, path, r)
}
func (p *callPowers) Rename(ctx context.Context, from, to string) error {
	return p.built().fs.Rename(ctx, from, to)
}

// liveFS is the call's file system; widening the workspace swaps in one with the new scope
// while the call's other requests may be running.
type liveFS struct{ cur atomic.Pointer[toolfs.FS] }

func (l *liveFS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return l.cur.Load().ReadFile(ctx, p)
}
func (l *liveFS) WriteFile(ctx context.Context, p string, d []byte) error {
	return l.cur.Load().WriteFile(ctx, p, d)
}
func (l *liveFS) AppendFile(ctx context.Context, p string, d []byte) error {
	return l.cur.Load().AppendFile(ctx, p, d)
}
func (l *liveFS) ReadDir(ctx context.Context, p string) ([]tool.DirEntry, error) {
	return l.cur.Load().ReadDir(ctx, p)
}
func (l *liveFS) Exists(ctx context.Context, p string) (bool, error) {
	return l.cur.Load().Exists(ctx, p)
}
func (l *liveFS) Stat(ctx context.Context, p string) (tool.FileInfo, error) {
	return l.cur.Load().Stat(ctx, p)
}
func (l *liveFS) Mkdir(ctx context.Context, p string, r bool) error {
	return l.cur.Load().Mkdir(ctx, p, r)
}
func (l *liveFS) Remove(ctx context.Context, p string, r bool) error {
	return l.cur.Load().Remove(ctx, p, r)
}
func (l *liveFS) Rename(ctx context.Context, from, to string) error {
	return l.cur.Load().Rename(ctx, from, to)
}

var _ tool.FS = (*liveFS)(nil)

// callWorkspace lets a tool widen its workspace only with a person's approval, and narrow it
// freely. The change applies to the rest of the call and, when the caller gave a persistent
// store, to the workspace for good.
type callWorkspace struct {
	tool    string
	broker  tool.Asker
	persist tool.WorkspacePaths
	apply   func(policy.Scope)
	// protected are the places no workspace may be at or inside (policy.ProtectedPaths):
	// ctx.fs and Landlock keep them closed anyway, and the tool is told so before a person
	// is asked for nothing.
	protected []string

	mu    sync.Mutex
	scope policy.Scope
}

// allowed returns the call's allowed paths now.
func (w *callWorkspace) allowed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string{}, w.scope.Allowed...)
}

func (w *callWorkspace) AddWorkspacePath(ctx context.Context, p string) error {
	w.mu.Lock()
	scope := w.scope
	w.mu.Unlock()
	abs := scope.Resolve(p)
	if scope.Blocked(abs) {
		return fmt.Errorf("add %s to the workspace: it is a blocked system path", abs)
	}
	real := policy.Real(abs)
	if real == string(filepath.Separator) {
		return fmt.Errorf("add %s to the workspace: the whole file system cannot be a workspace", abs)
	}
	for _, x := range w.protected {
		if policy.Within(real, policy.Real(x)) {
			return fmt.Errorf("add %s to the workspace: it is at or inside %s, which jean2 keeps closed to every tool (its own folder, the tools folder, credential folders)", abs, x)
		}
	}
	if scope.Inside(abs) {
		return nil
	}
	answer, err := w.broker.Ask(ctx, tool.Ask{
		Type: tool.AskPermission, Resource: "file", Risk: "high", Duration: tool.DurationOnce,
		Question: fmt.Sprintf("Tool %s wants to add %s to the workspace, so it can read and write there.", w.tool, abs),
		Paths:    []string{abs},
	})
	if err != nil {
		return fmt.Errorf("add %s to the workspace: %w", abs, err)
	}
	if string(answer) != "true" {
		return fmt.Errorf("add %s to the workspace: %s", abs, tool.UserRejection)
	}
	if w.persist != nil {
		if err := w.persist.AddWorkspacePath(ctx, abs); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.scope.Allowed = append(append([]string(nil), w.scope.Allowed...), abs)
	w.apply(w.scope)
	w.mu.Unlock()
	return nil
}

func (w *callWorkspace) RemoveWorkspacePath(ctx context.Context, p string) error {
	w.mu.Lock()
	abs := w.scope.Resolve(p)
	w.mu.Unlock()
	if w.persist != nil {
		if err := w.persist.RemoveWorkspacePath(ctx, abs); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var kept []string
	for _, a := range w.scope.Allowed {
		if a != abs {
			kept = append(kept, a)
		}
	}
	w.scope.Allowed = kept
	w.apply(w.scope)
	return nil
}

// callLogHandler names the tool and the call on every record it passes on. slog's own With
// formats the attributes up front, which costs on every call whether or not it logs.
type callLogHandler struct {
	inner      slog.Handler
	tool, call string
}

func (h *callLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *callLogHandler) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(slog.String("tool", h.tool), slog.String("call", h.call))
	return h.inner.Handle(ctx, r)
}

func (h *callLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &callLogHandler{inner: h.inner.WithAttrs(as), tool: h.tool, call: h.call}
}

func (h *callLogHandler) WithGroup(name string) slog.Handler {
	return &callLogHandler{inner: h.inner.WithGroup(name), tool: h.tool, call: h.call}
}
