package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/skills"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// Defaults of Options.
const (
	DefaultWorkRounds = 5
	DefaultMaxRounds  = 25
)

// ErrBusy is returned when a session already has a turn (or a restore) running.
var ErrBusy = errors.New("the session is busy with a turn; wait for it to finish or stop it")

// ErrClosed is returned once Close has begun.
var ErrClosed = errors.New("the harness is closed")

// Publisher numbers, stores and fans out a session's events (*hub.Hub).
type Publisher interface {
	Publish(ctx context.Context, sessionID string, evs ...store.NewEvent) ([]store.Event, error)
}

// AskerSource gives the asker of a session: who answers its tools' asks (*hub.Hub).
type AskerSource interface {
	Asker(sessionID string) tool.Asker
}

// Invoker runs tool calls (*host.Host).
type Invoker interface {
	Invoke(ctx context.Context, call host.Call) host.Outcome
	Registry() *tool.Registry
}

// WorkspaceTools is an Invoker that can narrow the tools offered to a workspace's sessions
// (the server leaves out the tools of other workspaces' MCP servers). The harness offers a
// model RegistryFor(the session's workspace) when its Invoker has it, Registry() otherwise.
type WorkspaceTools interface {
	RegistryFor(workspaceID string) *tool.Registry
}

// offered is the registry whose tools a session of the workspace is offered.
func (h *Harness) offered(workspaceID string) *tool.Registry {
	if wt, ok := h.opts.Tools.(WorkspaceTools); ok {
		return wt.RegistryFor(workspaceID)
	}
	return h.opts.Tools.Registry()
}

// Models resolves a session's provider and model names ("" names the default) to a
// provider and the model to ask for.
type Models interface {
	Model(ctx context.Context, providerName, model string) (provider.Provider, string, error)
}

// Options configure a Harness. Store, Events, Tools and Models are required.
type Options struct {
	Store  *store.DB
	Events Publisher
	// Askers answer asks; nil leaves every ask refused (no one to ask).
	Askers AskerSource
	Tools  Invoker
	Models Models
	// Snapshots, when set, snapshots the workspace at each turn's start so that changes made
	// by anything (a shell command a tool started) join the ledger, and serves Restore.
	Snapshots Snapshotter
	// WorkRounds is the work budget: how many rounds that ran work a turn may have
	// (DefaultWorkRounds when 0). Rounds made only of interactive calls do not count.
	WorkRounds int
	// MaxRounds is the hard ceiling of model calls per turn (DefaultMaxRounds when 0).
	MaxRounds int
	// System is the system prompt (DefaultSystem when empty); the workspace folder, the
	// instruction files (ReadInstructions) and a compaction's summary are added to it.
	// SetSystem replaces it for the turns started later.
	System string
	// Home is $JEAN2_HOME, whose AGENTS.md joins every session's system prompt; "" for
	// none.
	Home string
	// SkillsRead, when set, is told the skills each turn read for its workspace folder
	// (the server reports the broken ones to people).
	SkillsRead func(workspace string, set skills.Set)
	// MaxParallel caps read-only calls running at once in one round (default 8).
	MaxParallel int
	// Leases claims sessions across instances sharing the database (lease.go); nil on one
	// instance.
	Leases Leaser
	Logger *slog.Logger
}

// Input is what a person sends to start a turn.
type Input struct {
	Text   string
	Images []provider.Image
	// Resources are resources of imported MCP servers attached to the message, read by
	// the caller when the message was sent; they are stored with it (as resource parts)
	// and go to the model on every later turn, as they were read.
	Resources []Resource
	// stopChain is set on the turns Stop hooks ask for (hookflow.go).
	stopChain int
}

// Resource is an attached resource's contents as its MCP server gave them.
type Resource struct {
	store.ResourceInfo
	MimeType string // "" when the server gave none
	Text     string // a text resource's contents
	Blob     []byte // a binary resource's bytes (nil for a text one)
}

// part is the resource as a part of the user's message.
func (r Resource) part() store.Part {
	args, _ := json.Marshal(r.ResourceInfo) // plain strings: cannot fail
	return store.Part{Kind: store.PartResource, Status: store.StatusComplete, Args: string(args),
		MediaType: r.MimeType, Text: r.Text, Data: r.Blob}
}

// resourceOf is the resource a resource part holds; ok is false for another part.
func resourceOf(p store.Part) (r Resource, ok bool) {
	if p.Kind != store.PartResource {
		return Resource{}, false
	}
	_ = json.Unmarshal([]byte(p.Args), &r.ResourceInfo) // checked when stored
	return Resource{ResourceInfo: r.ResourceInfo, MimeType: p.MediaType, Text: p.Text, Blob: p.Data}, true
}

// TurnInfo names a turn that started.
type TurnInfo struct {
	ID            string `json:"id"`
	SessionID     string `json:"sessionId"`
	UserMessageID string `json:"userMessageId"`
}

// Harness runs turns, one at a time per session. Safe for concurrent use.
type Harness struct {
	opts Options
	log  *slog.Logger

	// base is the parent of every turn's context; Close cancels it.
	base       context.Context
	cancelBase context.CancelCauseFunc
	wg         sync.WaitGroup

	mu     sync.Mutex
	closed bool
	busy   map[string]*turn              // session → its running turn (nil value: a restore holds it)
	leases map[string]Lease              // session → the lease its claim holds (Options.Leases)
	facts  map[string]*tool.SessionFacts // session → its facts, for the harness's life

	hist histories // transcripts kept between turns
	// windows are the context windows providers' refusals taught (window.go).
	windows learnedWindows
	queue   queues // messages waiting for their session's turn to end (queue.go)
	// spawning holds the children a task call is starting (subagents.go).
	spawning spawned
	// goals holds the goal evaluations running between turns (goal.go).
	goals goalRuns

	// workRounds and maxRounds are the limits of turns started from now on (SetLimits);
	// guarded by mu.
	workRounds, maxRounds int
	// system is the system prompt of turns started from now on (SetSystem); guarded by mu.
	system string
	// titles and titleModel say whether and with which model sessions are named
	// (SetTitles); guarded by mu.
	titles     bool
	titleModel string
}

// SetSystem replaces the system prompt of the turns started from now on; "" restores
// Options.System (DefaultSystem when that was empty).
func (h *Harness) SetSystem(prompt string) {
	if strings.TrimSpace(prompt) == "" {
		prompt = h.opts.System
	}
	h.mu.Lock()
	h.system = prompt
	h.mu.Unlock()
}

// systemPrompt is the system prompt of a turn starting now.
func (h *Harness) systemPrompt() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.system
}

// Instructions returns the instruction files in effect for a workspace folder: those that
// join the system prompt of its sessions' turns.
func (h *Harness) Instructions(workspace string) Instructions {
	return ReadInstructions(workspace, h.opts.Home)
}

// SetLimits changes the work budget and the ceiling of rounds of the turns started from now
// on (a turn running keeps the limits it started with). 0 or less means DefaultWorkRounds,
// DefaultMaxRounds.
func (h *Harness) SetLimits(workRounds, maxRounds int) {
	if workRounds <= 0 {
		workRounds = DefaultWorkRounds
	}
	if maxRounds <= 0 {
		maxRounds = DefaultMaxRounds
	}
	h.mu.Lock()
	h.workRounds, h.maxRounds = workRounds, maxRounds
	h.mu.Unlock()
}

// limits returns the limits of a turn starting now.
func (h *Harness) limits() (workRounds, maxRounds int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.workRounds, h.maxRounds
}

// errStopped and errClosing are the causes a turn's context is cancelled with; a tool sees
// them as its abort reason.
var (
	errStopped = errors.New("stopped by the user")
	errClosing = errors.New("the server is shutting down")
)

// New makes a harness and seals what a killed server left half-written (see Recover).
func New(ctx context.Context, opts Options) (*Harness, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("harness: Options.Store is required")
	case opts.Events == nil:
		return nil, errors.New("harness: Options.Events is required")
	case opts.Tools == nil:
		return nil, errors.New("harness: Options.Tools is required")
	case opts.Models == nil:
		return nil, errors.New("harness: Options.Models is required")
	case opts.WorkRounds < 0 || opts.MaxRounds < 0 || opts.MaxParallel < 0:
		return nil, fmt.Errorf("harness: WorkRounds (%d), MaxRounds (%d) and MaxParallel (%d) may not be negative",
			opts.WorkRounds, opts.MaxRounds, opts.MaxParallel)
	}
	if opts.WorkRounds == 0 {
		opts.WorkRounds = DefaultWorkRounds
	}
	if opts.MaxRounds == 0 {
		opts.MaxRounds = DefaultMaxRounds
	}
	if opts.MaxParallel == 0 {
		opts.MaxParallel = 8
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if strings.TrimSpace(opts.System) == "" {
		opts.System = DefaultSystem
	}
	h := &Harness{opts: opts, log: opts.Logger, busy: map[string]*turn{}, leases: map[string]Lease{}, facts: map[string]*tool.SessionFacts{},
		workRounds: opts.WorkRounds, maxRounds: opts.MaxRounds, system: opts.System}
	h.base, h.cancelBase = context.WithCancelCause(context.Background())
	if err := h.recover(ctx); err != nil {
		h.cancelBase(errClosing)
		return nil, err
	}
	return h, nil
}

// Start persists the user's message and runs a turn on it in the background; Wait or the
// turn.finished event tell when it ends. ErrBusy when the session has a turn running.
func (h *Harness) Start(ctx context.Context, sessionID string, in Input) (TurnInfo, error) {
	if err := checkInput(in); err != nil {
		return TurnInfo{}, fmt.Errorf("start a turn in session %s: %w", sessionID, err)
	}
	if err := h.reserve(ctx, sessionID); err != nil {
		return TurnInfo{}, err
	}
	return h.launch(ctx, sessionID, in)
}

// launch runs a turn on in, in a session reserve claimed for it; the session is released
// when the turn ends or fails to start. The next queued message (queue.go) follows the end.
func (h *Harness) launch(ctx context.Context, sessionID string, in Input) (TurnInfo, error) {
	t, err := h.prepare(ctx, sessionID, in)
	if err != nil {
		h.release(sessionID, nil)
		return TurnInfo{}, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.release(sessionID, nil)
		// The user's message is stored and the turn announced: say it ended. The next
		// turn answers the message.
		t.cancel(errClosing)
		if err := t.ev.commit(t.wctx, ops{t.closeTurn(TurnFinished{TurnID: t.id, Reason: ReasonInterrupted,
			Error: errClosing.Error(), Changed: Summarize(nil)})}); err != nil {
			h.log.Error("end a turn refused by Close", "session", sessionID, "turn", t.id, "error", err)
		}
		return TurnInfo{}, ErrClosed
	}
	h.busy[sessionID] = t
	h.wg.Add(1)
	h.mu.Unlock()
	h.watchLease(sessionID, t)
	go func() {
		defer h.wg.Done()
		// After release, so the session is free: a queued message, or the goal's next turn.
		defer h.afterTurn(sessionID, t)
		defer h.release(sessionID, t)
		t.run()
	}()
	return TurnInfo{ID: t.id, SessionID: sessionID, UserMessageID: t.userMsg.ID}, nil
}

// ErrBadInput is wrapped by Start's errors about the message itself (empty, or an image it
// cannot take); nothing is stored then.
var ErrBadInput = errors.New("the message cannot be sent")

// Limits of a message's images, beside store.MaxImageBytes per image.
const (
	MaxImages          = 10
	MaxImageTotalBytes = 20 << 20
	// MaxResources is the most resources one message may carry, each at most
	// store.MaxResourceBytes.
	MaxResources = 10
)

func checkInput(in Input) error {
	if strings.TrimSpace(in.Text) == "" && len(in.Images) == 0 && len(in.Resources) == 0 {
		return fmt.Errorf("%w: it is empty: send some text, an image or a resource", ErrBadInput)
	}
	if len(in.Resources) > MaxResources {
		return fmt.Errorf("%w: it has %d resources attached; attach at most %d", ErrBadInput, len(in.Resources), MaxResources)
	}
	for i, r := range in.Resources {
		if err := store.CheckResource(r.part()); err != nil {
			return fmt.Errorf("%w: resource %d: %w", ErrBadInput, i+1, err)
		}
	}
	if len(in.Images) > MaxImages {
		return fmt.Errorf("%w: it has %d images; send at most %d", ErrBadInput, len(in.Images), MaxImages)
	}
	total := 0
	for i, img := range in.Images {
		if err := store.CheckImage(img.MediaType, img.Data); err != nil {
			return fmt.Errorf("%w: image %d: %w", ErrBadInput, i+1, err)
		}
		total += len(img.Data)
	}
	if total > MaxImageTotalBytes {
		return fmt.Errorf("%w: its images are %d bytes in all, more than the %d MiB a message may carry; send fewer or smaller ones",
			ErrBadInput, total, MaxImageTotalBytes>>20)
	}
	return nil
}

// emitter returns what stores and publishes the session's writes and events. While the
// harness holds the session's lease, every transaction of the emitter is fenced by that
// acquisition of it (lease.go).
func (h *Harness) emitter(sessionID string) *emitter {
	e := &emitter{db: h.opts.Store, pub: h.opts.Events, sessionID: sessionID, log: h.log}
	h.mu.Lock()
	if l := h.leases[sessionID]; l != nil {
		e.fence = l.Fence
	}
	h.mu.Unlock()
	return e
}

// reserve claims the session for a turn or a restore: in memory, then, with Options.Leases,
// across instances.
func (h *Harness) reserve(ctx context.Context, sessionID string) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	if t, ok := h.busy[sessionID]; ok && (t == nil || !t.ended.Load()) {
		h.mu.Unlock()
		return fmt.Errorf("session %s: %w", sessionID, ErrBusy)
	}
	h.busy[sessionID] = nil
	if h.opts.Leases != nil {
		// Another instance may have run turns since: its facts are the store's.
		delete(h.facts, sessionID)
	}
	h.mu.Unlock()
	return h.claimLease(ctx, sessionID)
}

// release frees the session once its turn (t) or restore (nil) is over.
func (h *Harness) release(sessionID string, t *turn) {
	h.mu.Lock()
	var l Lease
	if h.busy[sessionID] == t {
		delete(h.busy, sessionID)
		l = h.leases[sessionID]
		delete(h.leases, sessionID)
	}
	h.mu.Unlock()
	if l != nil {
		l.Release()
	}
	if t != nil {
		close(t.done)
	}
}

// sessionFacts returns the session's facts, loaded from the store on first use and kept for
// the harness's life, so every turn of a conversation shares them; each Set is written to
// the store before it is visible, so a restarted server still has them (a todo list).
func (h *Harness) sessionFacts(ctx context.Context, sessionID string) (*tool.SessionFacts, error) {
	h.mu.Lock()
	f, ok := h.facts[sessionID]
	h.mu.Unlock()
	if ok {
		return f, nil
	}
	stored, err := h.opts.Store.SessionFacts(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	db := h.opts.Store
	f = tool.NewKeptSessionFacts(stored, func(key string, value json.RawMessage) error {
		// Not the call's context: a fact the tool set is kept even when the call is then stopped.
		return db.PutSessionFact(context.WithoutCancel(ctx), sessionID, key, value)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.facts[sessionID]; ok {
		return prev, nil // another turn loaded them first
	}
	h.facts[sessionID] = f
	return f, nil
}

// Stop cancels the session's running turn; it reports whether one was running. Calls in
// flight see their abort signal; the turn ends with reason "stopped". Between the turns of a
// goal, it stops the goal's evaluation (the goal ends "stopped").
func (h *Harness) Stop(sessionID string) bool {
	t := h.running(sessionID)
	if t == nil {
		return h.goals.stop(sessionID)
	}
	t.cancel(errStopped)
	return true
}

// Running reports whether the session has a turn running. A turn whose turn.finished is
// stored is not running any more, though its goroutine may still be tidying up.
func (h *Harness) Running(sessionID string) bool { return h.running(sessionID) != nil }

// running returns the session's turn while it runs: not a reservation (nil) nor a turn
// whose turn.finished is stored.
func (h *Harness) running(sessionID string) *turn {
	h.mu.Lock()
	t := h.busy[sessionID]
	h.mu.Unlock()
	if t == nil || t.ended.Load() {
		return nil
	}
	return t
}

// Wait returns once the session's running turn, if any, has finished (its turn.finished
// published), or with ctx's error.
func (h *Harness) Wait(ctx context.Context, sessionID string) error {
	h.mu.Lock()
	t := h.busy[sessionID]
	h.mu.Unlock()
	if t == nil {
		return nil
	}
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the turn of session %s: %w", sessionID, context.Cause(ctx))
	}
}

// Close stops every running turn (reason "interrupted") and waits for them to seal, or for
// ctx to end. Start fails with ErrClosed from then on.
func (h *Harness) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancelBase(errClosing)
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close the harness: turns still sealing: %w", context.Cause(ctx))
	}
}

// sealTimeout bounds the writes that seal a turn after it was stopped or the server is
// shutting down.
const sealTimeout = 15 * time.Second
