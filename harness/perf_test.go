package harness_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// With a publisher that stores writes with their events (BatchPublisher), a turn of two
// rounds is three commits: the user's message with turn.started; the first answer with
// its call started; the call's outcome, the last answer, the ledger and turn.finished.
// What is stored and told is the same as with a plain publisher. A publisher that refuses
// (a closed hub) loses nothing: the writes are stored on their own.
func TestBatchPublisherCommitsWritesWithTheirEvents(t *testing.T) {
	var calls atomic.Int64
	var refuse error
	f := newFixture(t, fixtureOptions{})
	restartWith := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		f.opts.Events = batchPublisher{Hub: f.hub, db: f.db, calls: &calls, refuse: refuse}
		var err error
		if f.h, err = harness.New(context.Background(), f.opts); err != nil {
			t.Fatal(err)
		}
	}
	restartWith()
	f.srv.Push(providertest.OpenAIToolCall("gpt-test", "call_1", "note", jsonArgs(map[string]any{"path": "b.txt", "text": "batched"})),
		providertest.OpenAIText("gpt-test", "Done."))
	calls.Store(0)
	_, fin := f.turn("write it")
	if fin.Reason != harness.ReasonDone || fin.Rounds != 2 || fin.Changed.Files != 1 {
		t.Fatalf("finished %+v", fin)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d commits for a turn of two rounds, want 3", n)
	}
	msgs := f.messages()
	if len(msgs) != 3 || msgs[1].Parts[0].Status != store.StatusComplete || !strings.Contains(msgs[1].Parts[0].Result, "b.txt") ||
		msgs[2].Content != "Done." || msgs[2].Status != store.StatusComplete {
		t.Fatalf("messages %+v", msgs)
	}
	if l, err := f.db.LedgerForMessage(context.Background(), msgs[2].ID); err != nil || len(l.Changes) != 1 {
		t.Fatalf("ledger %+v, %v", l, err)
	}
	want := []string{"turn.started", "message.created", "message.created", "part.updated", "part.updated", "message.created", "turn.finished"}
	var types []string
	for i, e := range f.events() {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		types = append(types, e.Type)
	}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	if open, err := f.db.OpenTurns(context.Background()); err != nil || len(open) != 0 {
		t.Fatalf("open turns after the turn: %+v, %v", open, err)
	}

	refuse = errors.New("publisher closed")
	restartWith()
	f.srv.Push(providertest.OpenAIText("gpt-test", "Still stored."))
	_, fin = f.turn("again")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	if msgs := f.messages(); len(msgs) != 5 || msgs[4].Content != "Still stored." {
		t.Fatalf("messages after a refusing publisher: %+v", msgs)
	}
}

// A call's outcome is committed with the turn's next write, and never waits on the model
// longer than the flush interval: while the next answer has not begun, the outcome is
// stored and told already.
func TestACallsOutcomeIsStoredWhileTheModelThinks(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.srv.Push(providertest.OpenAIToolCall("gpt-test", "call_1", "trivial", `{}`),
		providertest.NewOpenAIStream("gpt-test").Pause(3*time.Second).Text("late").Finish("stop").Done().Reply())
	info := f.start("go")
	// The outcome's part.updated comes while the second answer is still paused.
	e := f.waitEvent(harness.EventPartUpdated, `"status":"complete"`, `call_1`)
	for _, later := range f.events() {
		if later.Seq > e.Seq && later.Type == harness.EventMessageCreated {
			t.Fatalf("the outcome went out only with the next answer (event %d)", later.Seq)
		}
	}
	msgs := f.messages()
	if len(msgs) != 2 || msgs[1].Parts[0].Status != store.StatusComplete {
		t.Fatalf("the outcome is not stored while the model thinks: %+v", msgs)
	}
	if fin := f.wait(info); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
}

// pngBytes is a small valid-looking PNG (the signature is what is checked).
func pngBytes(fill byte) []byte {
	return append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{fill}, 300)...)
}

// Images a person sends are stored as image parts of their message and go to the model
// with it on that turn and on every later one, also after a restart (read back from the
// store). Images a provider would refuse are refused before anything is stored.
func TestImagesAreKeptAndSentOnLaterTurns(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	img := provider.Image{MediaType: "image/png", Data: pngBytes(7)}
	f.srv.Push(providertest.OpenAIText("gpt-test", "A cat."), providertest.OpenAIText("gpt-test", "Still a cat."),
		providertest.OpenAIText("gpt-test", "After the restart."))
	info, err := f.h.Start(context.Background(), f.session.ID, harness.Input{Text: "What is this?", Images: []provider.Image{img}})
	if err != nil {
		t.Fatal(err)
	}
	if fin := f.wait(info); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	user := f.messages()[0]
	if user.Content != "What is this?" || len(user.Parts) != 1 || user.Parts[0].Kind != store.PartImage ||
		user.Parts[0].MediaType != "image/png" || !bytes.Equal(user.Parts[0].Data, img.Data) {
		t.Fatalf("user message %+v", user)
	}
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img.Data)
	sent := func(i int) int {
		return strings.Count(string(f.srv.Requests()[i].Body), dataURL)
	}
	if n := sent(0); n != 1 {
		t.Fatalf("the image went %d times with its own turn", n)
	}
	// The event log names the image part without its bytes (they stay with the message).
	events, err := f.db.EventsAfter(context.Background(), f.session.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(img.Data)
	imageParts := 0
	for _, ev := range events {
		if strings.Contains(string(ev.Payload), b64) {
			t.Fatalf("event %s holds the image's bytes a second time", ev.Type)
		}
		if ev.Type == harness.EventMessageCreated {
			var p harness.MessageEvent
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			for _, part := range p.Message.Parts {
				if part.Kind == store.PartImage && part.MediaType == "image/png" && part.ID == user.Parts[0].ID {
					imageParts++
				}
			}
		}
	}
	if imageParts != 1 {
		t.Fatalf("message.created named the image part %d times, want 1", imageParts)
	}
	if _, fin := f.turn("And now?"); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	if n := sent(1); n != 1 {
		t.Fatalf("the image went %d times with the next turn", n)
	}
	// A new harness keeps no transcript: the image comes back from the store.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if f.h, err = harness.New(context.Background(), f.opts); err != nil {
		t.Fatal(err)
	}
	if _, fin := f.turn("Once more"); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	if n := sent(2); n != 1 {
		t.Fatalf("the image went %d times after the restart", n)
	}

	before := len(f.messages())
	big := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, store.MaxImageBytes)...)
	many := make([]provider.Image, harness.MaxImages+1)
	for i := range many {
		many[i] = img
	}
	for _, c := range []struct {
		in   harness.Input
		want string
	}{
		{harness.Input{Images: []provider.Image{{MediaType: "image/tiff", Data: img.Data}}}, `media type "image/tiff" is not`},
		{harness.Input{Images: []provider.Image{{MediaType: "image/jpeg", Data: img.Data}}}, "are not a image/jpeg image"},
		{harness.Input{Images: []provider.Image{{MediaType: "image/png", Data: big}}}, "more than the 5242880 (5 MiB) allowed"},
		{harness.Input{Text: "x", Images: many}, "send at most 10"},
		{harness.Input{Text: "  "}, "it is empty"},
	} {
		_, err := f.h.Start(context.Background(), f.session.ID, c.in)
		if !errors.Is(err, harness.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start refused with %v, want %q", err, c.want)
		}
	}
	if after := len(f.messages()); after != before {
		t.Fatalf("refused input stored %d messages", after-before)
	}
}

// A tool that widens its workspace (ctx.addWorkspacePath, approved by a person) widens it
// for good: the workspace's allowed paths keep the folder, clients hear workspace.updated,
// and a later turn's call writes there without asking. Narrowing lasts too.
func TestAToolWidensItsWorkspaceForGood(t *testing.T) {
	extra := filepath.Join(t.TempDir(), "extra")
	if err := os.MkdirAll(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	widen := `export const definition = { name: 'widen', description: 'Add or remove a workspace path.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, remove: { type: 'boolean' } }, required: ['path'] } };
export async function execute(input, ctx) {
  if (input.remove) await ctx.removeWorkspacePath(input.path); else await ctx.addWorkspacePath(input.path);
  return { success: true, result: { allowed: ctx.allowedPaths } };
}
`
	var asked atomic.Int64
	f := newFixture(t, fixtureOptions{tools: map[string]string{"widen": widen}})
	// A person who approves: the hub asks the unattended policy when no client is attached.
	f.hub.Close()
	f.hub = hub.New(hub.Options{Store: f.db, Unattended: func(string) tool.Asker {
		asked.Add(1)
		p, _ := ask.NewPolicy("high")
		return p
	}})
	f.opts.Events, f.opts.Askers = f.hub, f.hub
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.h, err = harness.New(context.Background(), f.opts); err != nil {
		t.Fatal(err)
	}

	target := filepath.Join(extra, "out.txt")
	f.srv.Push(providertest.OpenAIToolCall("gpt-test", "call_w", "widen", jsonArgs(map[string]any{"path": extra})),
		providertest.OpenAIText("gpt-test", "Widened."))
	if _, fin := f.turn("widen"); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	if res := f.messages()[1].Parts[0]; res.Status != store.StatusComplete || !strings.Contains(res.Result, extra) {
		t.Fatalf("widen call %+v", res)
	}
	ws, err := f.db.Workspace(context.Background(), f.session.WorkspaceID)
	if err != nil || !slices.Contains(ws.AllowedPaths, extra) {
		t.Fatalf("workspace after the call: %+v, %v", ws, err)
	}
	e := f.waitEvent(harness.EventWorkspaceUpdated, `"added":"`+extra+`"`, `"callId":"call_w"`)
	var wu harness.WorkspaceUpdated
	if err := json.Unmarshal(e.Payload, &wu); err != nil || !slices.Contains(wu.Workspace.AllowedPaths, extra) {
		t.Fatalf("workspace.updated %s (%v)", e.Payload, err)
	}
	if asked.Load() == 0 {
		t.Fatal("the widening was not asked for")
	}

	// The next turn's call writes there: no ask, the path is the workspace's now.
	asked.Store(0)
	f.srv.Push(providertest.OpenAIToolCall("gpt-test", "call_n", "note", jsonArgs(map[string]any{"path": target, "text": "outside"})),
		providertest.OpenAIText("gpt-test", "Written."))
	if _, fin := f.turn("write there"); fin.Reason != harness.ReasonDone || fin.Changed.Files != 1 {
		t.Fatalf("finished %+v", fin)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "outside" {
		t.Fatalf("%s: %q, %v", target, b, err)
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("writing in the widened workspace asked %d times", n)
	}

	f.srv.Push(providertest.OpenAIToolCall("gpt-test", "call_r", "widen", jsonArgs(map[string]any{"path": extra, "remove": true})),
		providertest.OpenAIText("gpt-test", "Narrowed."))
	if _, fin := f.turn("narrow"); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	if ws, err := f.db.Workspace(context.Background(), f.session.WorkspaceID); err != nil || slices.Contains(ws.AllowedPaths, extra) {
		t.Fatalf("workspace after narrowing: %+v, %v", ws, err)
	}
	f.waitEvent(harness.EventWorkspaceUpdated, `"removed":"`+extra+`"`)
}

// A server killed between two rounds leaves nothing unfinished among the messages (the
// call ended, the next answer had not begun), but the turn never said it finished: its
// open record makes the next start finish it, once.
func TestCrashBetweenRoundsFinishesTheTurn(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	user, err := f.db.AppendMessage(ctx, store.Message{SessionID: f.session.ID, Role: store.RoleUser, Content: "go"})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := f.db.AppendMessage(ctx, store.Message{SessionID: f.session.ID, Role: store.RoleAssistant, Finish: "tool_calls",
		TokensIn: 9, Parts: []store.Part{{Kind: store.PartToolCall, CallID: "call_1", ToolName: "trivial", Args: "{}",
			Status: store.StatusComplete, Result: `{"success":true}`}}})
	if err != nil {
		t.Fatal(err)
	}
	started, _ := json.Marshal(harness.TurnStarted{TurnID: "turn_between", UserMessageID: user.ID})
	if err := f.db.Batch(ctx, func(tx *store.Tx) error {
		if err := tx.OpenTurn(ctx, store.OpenTurn{SessionID: f.session.ID, TurnID: "turn_between", UserMessageID: user.ID}); err != nil {
			return err
		}
		_, err := tx.AppendEvents(ctx, f.session.ID, store.NewEvent{Type: harness.EventTurnStarted, Payload: started})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if un, err := f.db.UnfinishedMessages(ctx); err != nil || len(un) != 0 {
		t.Fatalf("unfinished %+v, %v", un, err)
	}
	for range 2 {
		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := f.h.Close(closeCtx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if f.h, err = harness.New(ctx, f.opts); err != nil {
			t.Fatal(err)
		}
	}
	var finished []harness.TurnFinished
	for _, e := range f.events() {
		if e.Type == harness.EventTurnFinished {
			var fin harness.TurnFinished
			_ = json.Unmarshal(e.Payload, &fin)
			finished = append(finished, fin)
		}
	}
	if len(finished) != 1 || finished[0].TurnID != "turn_between" || finished[0].Reason != harness.ReasonInterrupted ||
		finished[0].MessageID != ans.ID || finished[0].Rounds != 1 || finished[0].Usage.InputTokens != 9 {
		t.Fatalf("turn.finished %+v", finished)
	}
	if open, err := f.db.OpenTurns(ctx); err != nil || len(open) != 0 {
		t.Fatalf("still open: %+v, %v", open, err)
	}
	if _, err := f.db.LedgerForMessage(ctx, ans.ID); err != nil {
		t.Fatalf("ledger: %v", err)
	}
}

// scoped is an Invoker that offers a workspace's sessions only some of the host's tools.
type scoped struct {
	*host.Host
	only      string
	workspace string
	asked     []string
}

func (s *scoped) RegistryFor(workspaceID string) *tool.Registry {
	s.asked = append(s.asked, workspaceID)
	reg := tool.NewRegistry()
	if t, ok := s.Host.Registry().Lookup(s.only); ok {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	return reg
}

// A model is offered the tools its Invoker gives the session's workspace, when the Invoker
// can narrow them (the server leaves out other workspaces' MCP tools).
func TestModelIsOfferedTheWorkspacesTools(t *testing.T) {
	var sc *scoped
	f := newFixture(t, fixtureOptions{adjust: func(o *harness.Options) {
		sc = &scoped{Host: o.Tools.(*host.Host), only: "trivial"}
		o.Tools = sc
	}})
	if len(f.host.Registry().List()) < 2 {
		t.Fatalf("the fixture has %d tools; the test needs more than the one offered", len(f.host.Registry().List()))
	}
	f.srv.Push(providertest.OpenAIText("gpt-test", "Hi."))
	if _, fin := f.turn("hello"); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	req := f.openaiRequest(0)
	if len(req.Tools) != 1 || req.Tools[0].Function.Name != "trivial" {
		t.Fatalf("offered %+v, want only trivial", req.Tools)
	}
	if len(sc.asked) == 0 || sc.asked[0] != f.session.WorkspaceID {
		t.Fatalf("RegistryFor asked for %v, want the session's workspace %s", sc.asked, f.session.WorkspaceID)
	}
}

// Resources attached to a message are stored as resource parts and reach the model with
// it, on that turn and on later ones after a restart: text as a block of the message's text
// naming its server and URI, an image as an image, other bytes as a note that names them
// (never the bytes). Too many or too big is refused before
// anything is stored.
func TestResourcesReachTheModel(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	img := pngBytes(9)
	blob := []byte{0xde, 0xad, 0xbe, 0xef, 0, 1}
	in := harness.Input{Text: "Summarize these.", Resources: []harness.Resource{
		{ResourceInfo: store.ResourceInfo{Server: "docs", URI: "note://readme"}, MimeType: "text/markdown", Text: "# Hello\nworld"},
		{ResourceInfo: store.ResourceInfo{Server: "docs", URI: "img://logo"}, MimeType: "image/png", Blob: img},
		{ResourceInfo: store.ResourceInfo{Server: "docs", URI: "bin://core"}, MimeType: "application/octet-stream", Blob: blob},
	}}
	f.srv.Push(providertest.OpenAIText("gpt-test", "Done."), providertest.OpenAIText("gpt-test", "Again."),
		providertest.OpenAIText("gpt-test", "Later."))
	info, err := f.h.Start(context.Background(), f.session.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	if fin := f.wait(info); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	user := f.messages()[0]
	if len(user.Parts) != 3 || user.Parts[0].Kind != store.PartResource || user.Parts[0].Text != "# Hello\nworld" ||
		user.Parts[0].Args != `{"server":"docs","uri":"note://readme"}` || !bytes.Equal(user.Parts[2].Data, blob) {
		t.Fatalf("user message %+v", user)
	}
	check := func(i int) {
		t.Helper()
		var req struct {
			Messages []struct {
				Role    string
				Content json.RawMessage
			}
		}
		if err := f.srv.Requests()[i].Decode(&req); err != nil {
			t.Fatal(err)
		}
		var content string
		for _, m := range req.Messages {
			if m.Role == "user" && strings.Contains(string(m.Content), "Summarize these.") {
				content = string(m.Content)
			}
		}
		for _, want := range []string{
			`<resource server=\"docs\" uri=\"note://readme\" mimeType=\"text/markdown\">\n# Hello\nworld\n</resource>`,
			`uri=\"img://logo\" mimeType=\"image/png\" /> (the image below)`,
			"data:image/png;base64," + base64.StdEncoding.EncodeToString(img),
			`uri=\"bin://core\" mimeType=\"application/octet-stream\" /> (6 bytes of binary data`,
		} {
			if !strings.Contains(content, want) {
				t.Fatalf("request %d: the user message lacks %s:\n%s", i, want, content)
			}
		}
		if strings.Contains(content, base64.StdEncoding.EncodeToString(blob)) {
			t.Fatalf("request %d: the binary resource's bytes went to the model", i)
		}
	}
	check(0)
	// A new harness keeps no transcript: the resources come back from the store.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if f.h, err = harness.New(context.Background(), f.opts); err != nil {
		t.Fatal(err)
	}
	if _, fin := f.turn("And now?"); fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	check(1)

	before := len(f.messages())
	many := make([]harness.Resource, harness.MaxResources+1)
	for i := range many {
		many[i] = in.Resources[0]
	}
	huge := harness.Resource{ResourceInfo: store.ResourceInfo{Server: "docs", URI: "note://huge"}, Text: strings.Repeat("x", store.MaxResourceBytes+1)}
	for _, c := range []struct {
		in   harness.Input
		want string
	}{
		{harness.Input{Text: "x", Resources: many}, "attach at most 10"},
		{harness.Input{Resources: []harness.Resource{huge}}, "resource note://huge of MCP server docs is 1048577 bytes"},
		{harness.Input{Resources: []harness.Resource{{MimeType: "text/plain", Text: "x"}}}, "naming the server and the uri"},
	} {
		_, err := f.h.Start(context.Background(), f.session.ID, c.in)
		if !errors.Is(err, harness.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start refused with %v, want %q", err, c.want)
		}
	}
	if after := len(f.messages()); after != before {
		t.Fatalf("refused input stored %d messages", after-before)
	}
}
