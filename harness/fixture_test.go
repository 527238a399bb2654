package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/undo"
)

// Tools the tests use, as tool.js files written into the host's tools folder.
var testTools = map[string]string{
	// note writes a file through ctx.fs (so the ledger records it) and returns a
	// visualization that must never reach the model.
	"note": `export const definition = { name: 'note', description: 'Write a note file.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } }, required: ['path', 'text'] } };
export async function execute(input, ctx) {
  await ctx.fs.writeFile(input.path, input.text);
  return { success: true, result: { wrote: input.path }, visualization: { type: 'none', message: 'VIZ-FOR-PEOPLE-ONLY' } };
}
`,
	// probe meets other calls at a barrier folder: it adds its file, then waits until n
	// files are there (met) or waitMs passed (not met).
	"probe": barrierTool("probe", "annotations: { readOnlyHint: true },"),
	// probe_rw is the same tool without the read-only hint.
	"probe_rw": barrierTool("probe_rw", ""),
	// slow waits to be stopped and writes down the abort reason it saw.
	"slow": `import fs from 'node:fs';
export const definition = { name: 'slow', description: 'Wait until stopped.', timeout: 60000,
  inputSchema: { type: 'object', properties: { marker: { type: 'string' }, write: { type: 'string' } }, required: ['marker'] } };
export async function execute(input, ctx) {
  if (input.write) fs.writeFileSync(input.write, 'written before the wait');
  fs.writeFileSync(input.marker + '.started', 'yes');
  const seen = await new Promise((res) => {
    const t = setTimeout(() => res('timer'), 30000);
    ctx.abortSignal.addEventListener('abort', () => { clearTimeout(t); res('abort: ' + String(ctx.abortSignal.reason?.message ?? ctx.abortSignal.reason)); });
  });
  fs.writeFileSync(input.marker, seen);
  return { success: false, error: 'saw ' + seen };
}
`,
	// shell_write changes files the way a shell command would: behind ctx.fs's back.
	"shell_write": `import fs from 'node:fs';
export const definition = { name: 'shell_write', description: 'Write files directly.',
  inputSchema: { type: 'object', properties: { files: { type: 'object', additionalProperties: { type: 'string' } }, remove: { type: 'array', items: { type: 'string' } } }, required: ['files'] } };
export async function execute(input) {
  for (const [p, text] of Object.entries(input.files)) fs.writeFileSync(p, text);
  for (const p of input.remove ?? []) fs.rmSync(p);
  return { success: true, result: { wrote: Object.keys(input.files).length } };
}
`,
	// ask_user is interactive: it stands for a tool that waits on a person.
	"ask_user": `export const definition = { name: 'ask_user', description: 'Ask the user a question.', interactive: true,
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } } };
export async function execute(input) { return { success: true, result: { answer: 'yes' } }; }
`,
	// summarize asks the session's model through ctx.llm.
	"summarize": `export const definition = { name: 'summarize', description: 'Summarize with the model.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } };
export async function execute(input, ctx) {
  const summary = await ctx.llm.generateText({ prompt: 'Summarize: ' + input.text });
  return { success: true, result: { summary } };
}
`,
	"trivial": `export const definition = { name: 'trivial', description: 'Returns ok.', inputSchema: { type: 'object', properties: { n: { type: 'number' } } } };
export async function execute(input) { return { success: true, result: { ok: true } }; }
`,
}

func barrierTool(name, extra string) string {
	return fmt.Sprintf(`import fs from 'node:fs';
import path from 'node:path';
export const definition = { name: %q, description: 'Meet other calls at a barrier.', %s
  inputSchema: { type: 'object', properties: { dir: { type: 'string' }, id: { type: 'string' }, n: { type: 'number' }, waitMs: { type: 'number' } }, required: ['dir', 'id', 'n'] } };
export async function execute(input) {
  fs.mkdirSync(input.dir, { recursive: true });
  fs.writeFileSync(path.join(input.dir, input.id), '');
  const until = Date.now() + (input.waitMs ?? 20000);
  while (Date.now() < until) {
    if (fs.readdirSync(input.dir).length >= input.n) return { success: true, result: { met: true, id: input.id } };
    await new Promise((r) => setTimeout(r, 5));
  }
  return { success: true, result: { met: false, id: input.id } };
}
`, name, extra)
}

// fixture is a store, a hub, a host with the test tools, a fake model server and a
// harness over them, with one workspace and one session.
type fixture struct {
	t       testing.TB
	root    string
	ws      string
	dbPath  string
	db      *store.DB
	hub     *hub.Hub
	host    *host.Host
	snaps   *undo.Snapshots
	srv     *providertest.Server
	prov    provider.Provider
	opts    harness.Options
	h       *harness.Harness
	session store.Session
	model   string
}

type fixtureOptions struct {
	flavor    providertest.Flavor
	snapshots bool              // undo snapshots in root/undo
	dbDir     string            // the database's folder, when not the test's temporary folder
	tools     map[string]string // more tools, beside testTools
	builtins  []tool.Tool       // built-in tools of the host
	adjust    func(*harness.Options)
	// providerIdle, when set, is the fake provider's idle timeout.
	providerIdle time.Duration
	// window is the context window the models report (0: unknown).
	window int
}

// staticModels resolves every session to one provider.
type staticModels struct {
	p      provider.Provider
	model  string
	window int
}

func (m staticModels) ContextWindow(_, _ string) int { return m.window }

func (m staticModels) Model(_ context.Context, _, model string) (provider.Provider, string, error) {
	if model == "" {
		model = m.model
	}
	return m.p, model, nil
}

func newFixture(t testing.TB, fo fixtureOptions) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, root: root, ws: filepath.Join(root, "ws"), dbPath: filepath.Join(root, "jean2.db")}
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if fo.dbDir != "" {
		dir, err := os.MkdirTemp(fo.dbDir, "jean2-harness-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		f.dbPath = filepath.Join(dir, "jean2.db")
	}
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	all := maps.Clone(testTools)
	maps.Copy(all, fo.tools)
	for name, src := range all {
		dir := filepath.Join(layout.Tools, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	f.db, err = store.Open(ctx, f.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	f.host, err = host.New(ctx, host.Options{Layout: layout, ServerEnv: []string{"PATH=/usr/bin:/bin"},
		IdleTimeout: time.Minute, KillGrace: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), Builtins: fo.builtins})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range f.host.Tools() {
		if e.Status != host.StatusOK {
			t.Fatalf("tool %s did not load: %+v", e.Name, e)
		}
	}
	kind := provider.KindOpenAI
	f.model = "gpt-test"
	if fo.flavor == providertest.Anthropic {
		f.srv, kind, f.model = providertest.NewAnthropic(t), provider.KindAnthropic, "claude-test"
	} else {
		f.srv = providertest.NewOpenAI(t)
	}
	f.srv.Key = "sk-test"
	f.prov, err = provider.New(provider.Config{Name: "fake", Kind: kind, BaseURL: f.srv.BaseURL(), APIKey: "sk-test", MaxTokens: 1024, IdleTimeout: fo.providerIdle},
		&provider.Options{Retry: provider.Retry{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	f.hub = hub.New(hub.Options{Store: f.db})
	w, err := f.db.CreateWorkspace(ctx, store.Workspace{Path: f.ws})
	if err != nil {
		t.Fatal(err)
	}
	f.session, err = f.db.CreateSession(ctx, store.Session{WorkspaceID: w.ID, Provider: "fake", Model: f.model})
	if err != nil {
		t.Fatal(err)
	}
	f.opts = harness.Options{Store: f.db, Events: f.hub, Askers: f.hub, Tools: f.host,
		Models: staticModels{p: f.prov, model: f.model, window: fo.window}, System: "You are a test."}
	if fo.snapshots {
		f.snaps, err = undo.New(undo.Options{Dir: filepath.Join(root, "undo")})
		if err != nil {
			t.Fatal(err)
		}
		f.opts.Snapshots = f.snaps
	}
	if fo.adjust != nil {
		fo.adjust(&f.opts)
	}
	f.h, err = harness.New(ctx, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}

func (f *fixture) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if f.h != nil {
		if err := f.h.Close(ctx); err != nil {
			f.t.Errorf("close harness: %v", err)
		}
	}
	f.hub.Close()
	if f.snaps != nil {
		_ = f.snaps.Close()
	}
	_ = f.host.Close(ctx)
	_ = f.db.Close()
}

// turn starts a turn with text and waits for it to finish; it returns the turn and how it
// finished.
func (f *fixture) turn(text string) (harness.TurnInfo, harness.TurnFinished) {
	f.t.Helper()
	info := f.start(text)
	return info, f.wait(info)
}

func (f *fixture) start(text string) harness.TurnInfo {
	f.t.Helper()
	info, err := f.h.Start(context.Background(), f.session.ID, harness.Input{Text: text})
	if err != nil {
		f.t.Fatalf("start: %v", err)
	}
	return info
}

func (f *fixture) wait(info harness.TurnInfo) harness.TurnFinished {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.h.Wait(ctx, info.SessionID); err != nil {
		f.t.Fatal(err)
	}
	var fin harness.TurnFinished
	found := false
	for _, e := range f.events() {
		if e.Type != harness.EventTurnFinished {
			continue
		}
		var tf harness.TurnFinished
		if err := json.Unmarshal(e.Payload, &tf); err != nil {
			f.t.Fatal(err)
		}
		if tf.TurnID == info.ID {
			fin, found = tf, true
		}
	}
	if !found {
		f.t.Fatalf("no turn.finished for turn %s; events: %s", info.ID, f.eventTypes())
	}
	return fin
}

func (f *fixture) events() []store.Event {
	f.t.Helper()
	evs, err := f.db.EventsAfter(context.Background(), f.session.ID, 0, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return evs
}

func (f *fixture) eventTypes() string {
	var out []string
	for _, e := range f.events() {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}

// waitEvent waits until an event of typ whose payload contains all of subs is in the log.
func (f *fixture) waitEvent(typ string, subs ...string) store.Event {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
	next:
		for _, e := range f.events() {
			if e.Type != typ {
				continue
			}
			for _, s := range subs {
				if !strings.Contains(string(e.Payload), s) {
					continue next
				}
			}
			return e
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.t.Fatalf("no %s event with %q; events: %s", typ, subs, f.eventTypes())
	return store.Event{}
}

func (f *fixture) messages() []store.Message {
	f.t.Helper()
	msgs, err := f.db.ListMessages(context.Background(), f.session.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return msgs
}

// oaiRequest is what the tests read of an OpenAI chat-completions request.
type oaiRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (f *fixture) openaiRequest(i int) oaiRequest {
	f.t.Helper()
	reqs := f.srv.Requests()
	if i >= len(reqs) {
		f.t.Fatalf("request %d of %d", i, len(reqs))
	}
	var r oaiRequest
	if err := reqs[i].Decode(&r); err != nil {
		f.t.Fatal(err)
	}
	return r
}

// text is a message's content as a string (OpenAI sends a string or an array of parts).
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// seqIDs makes unique call ids for scripted replies.
type seqIDs struct{ n atomic.Int64 }

func (s *seqIDs) next() string { return fmt.Sprintf("call_%03d", s.n.Add(1)) }

// jsonArgs renders a call's arguments.
func jsonArgs(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// batchPublisher is a harness.BatchPublisher over a hub that cannot store writes with its
// events itself: PublishWith stores the writes and the events in one transaction, as
// hub.PublishWith is to, but hands nothing to the hub's live subscribers (the tests and
// benchmarks using it read the events from the store). refuse makes PublishWith fail
// before writing, as a closed hub does.
type batchPublisher struct {
	*hub.Hub
	db     *store.DB
	refuse error
	calls  *atomic.Int64
}

func (b batchPublisher) PublishWith(ctx context.Context, sessionID string, write func(*store.Tx) ([]store.NewEvent, error)) ([]store.Event, error) {
	if b.calls != nil {
		b.calls.Add(1)
	}
	if b.refuse != nil {
		return nil, b.refuse
	}
	var out []store.Event
	err := b.db.Batch(ctx, func(tx *store.Tx) error {
		evs, err := write(tx)
		if err != nil {
			return err
		}
		out, err = tx.AppendEvents(ctx, sessionID, evs...)
		return err
	})
	return out, err
}

var _ harness.BatchPublisher = batchPublisher{}
