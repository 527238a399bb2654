package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// restarted is a harness over a database (and undo store) as a restart finds them.
type restarted struct {
	db    *store.DB
	hub   *hub.Hub
	snaps *undo.Snapshots
	h     *harness.Harness
	opts  harness.Options
}

func restart(t *testing.T, f *fixture, dbPath, undoDir string) *restarted {
	t.Helper()
	ctx := context.Background()
	r := &restarted{}
	var err error
	if r.db, err = store.Open(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	r.hub = hub.New(hub.Options{Store: r.db})
	r.opts = f.opts
	r.opts.Store, r.opts.Events, r.opts.Askers, r.opts.Snapshots = r.db, r.hub, r.hub, nil
	if undoDir != "" {
		if r.snaps, err = undo.New(undo.Options{Dir: undoDir}); err != nil {
			t.Fatal(err)
		}
		r.opts.Snapshots = r.snaps
	}
	if r.h, err = harness.New(ctx, r.opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.close(t) })
	return r
}

func (r *restarted) close(t *testing.T) {
	if r.h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := r.h.Close(ctx); err != nil {
			t.Error(err)
		}
		r.h = nil
	}
	if r.hub != nil {
		r.hub.Close()
		r.hub = nil
	}
	if r.snaps != nil {
		_ = r.snaps.Close()
		r.snaps = nil
	}
	if r.db != nil {
		_ = r.db.Close()
		r.db = nil
	}
}

func lastFinished(t *testing.T, db *store.DB, sessionID string) (harness.TurnFinished, int64) {
	t.Helper()
	evs, err := db.EventsAfter(context.Background(), sessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == harness.EventTurnFinished {
			var fin harness.TurnFinished
			if err := json.Unmarshal(evs[i].Payload, &fin); err != nil {
				t.Fatal(err)
			}
			return fin, evs[len(evs)-1].Seq
		}
	}
	t.Fatal("no turn.finished")
	return harness.TurnFinished{}, 0
}

// A server killed in the middle of a tool call: the database and the undo store, copied
// while the call runs, are what a kill -9 leaves. The next start seals the call, says the
// turn finished "interrupted", files its ledger from the snapshot (a file the tool wrote
// before the crash is on it) — and does nothing of that twice. The session goes on, and
// Restore to here removes the file.
func TestCrashMidCallIsSealedAtTheNextStart(t *testing.T) {
	f := newFixture(t, fixtureOptions{snapshots: true})
	marker := filepath.Join(f.root, "slow-marker")
	written := filepath.Join(f.ws, "half.txt")
	f.srv.Push(providertest.NewOpenAIStream("gpt-test").Text("Working.").
		ToolCall(0, "call_slow", "slow", jsonArgs(map[string]any{"marker": marker, "write": written})).
		Finish("tool_calls").Usage(7, 3).Done().Reply())
	info := f.start("work")
	waitFile(t, marker+".started")

	image := filepath.Join(f.root, "image")
	if err := os.MkdirAll(image, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{f.dbPath, f.dbPath + "-wal", filepath.Join(f.root, "undo")} {
		if out, err := exec.Command("cp", "-a", src, image).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v %s", src, err, out)
		}
	}
	// The original server goes on to its end in its own database; the image stays as copied.
	f.h.Stop(f.session.ID)
	f.wait(info)

	r := restart(t, f, filepath.Join(image, "jean2.db"), filepath.Join(image, "undo"))
	ctx := context.Background()
	msgs, err := r.db.ListMessages(ctx, f.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	ans := msgs[1]
	call := ans.Parts[1]
	if ans.Status != store.StatusComplete || ans.Parts[0].Text != "Working." || call.Status != store.StatusError ||
		!strings.Contains(call.Result, "interrupted: the server stopped during this turn") {
		t.Fatalf("answer after the restart %+v", ans)
	}
	fin, lastSeq := lastFinished(t, r.db, f.session.ID)
	if fin.TurnID != info.ID || fin.Reason != harness.ReasonInterrupted || fin.MessageID != ans.ID || fin.Rounds != 1 ||
		fin.Usage.InputTokens != 7 || fin.Changed.Files != 1 || fin.Changed.Paths[0] != written {
		t.Fatalf("finished %+v", fin)
	}
	l, err := r.db.LedgerForMessage(ctx, ans.ID)
	if err != nil || len(l.Changes) != 1 || l.Changes[0].Path != written {
		t.Fatalf("ledger %+v %v", l, err)
	}

	// A second start finds nothing to seal and files nothing twice.
	r.close(t)
	r = restart(t, f, filepath.Join(image, "jean2.db"), filepath.Join(image, "undo"))
	if _, seq := lastFinished(t, r.db, f.session.ID); seq != lastSeq {
		t.Fatalf("the second start published again: seq %d → %d", lastSeq, seq)
	}
	if ls, err := r.db.ListLedgers(ctx, f.session.ID); err != nil || len(ls) != 1 {
		t.Fatalf("ledgers %+v %v", ls, err)
	}

	// The session goes on, and the model sees what became of the call.
	f.srv.Push(providertest.OpenAIText("gpt-test", "back"))
	next, err := r.h.Start(ctx, f.session.ID, harness.Input{Text: "go on"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.h.Wait(ctx, f.session.ID); err != nil {
		t.Fatal(err)
	}
	if fin, _ := lastFinished(t, r.db, f.session.ID); fin.TurnID != next.ID || fin.Reason != harness.ReasonDone {
		t.Fatalf("next turn %+v", fin)
	}
	reqs := f.srv.Requests()
	body := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(body, `"tool_call_id":"call_slow"`) || !strings.Contains(body, "interrupted: the server stopped during this turn") {
		t.Fatalf("request after the restart: %s", body)
	}

	// Restore to here: the file the interrupted turn wrote goes.
	if _, err := os.Stat(written); err != nil {
		t.Fatal(err)
	}
	report, err := r.h.Restore(ctx, f.session.ID, info.UserMessageID, undo.RestoreOptions{})
	if err != nil {
		t.Fatalf("restore: %v (%+v)", err, report)
	}
	if _, err := os.Stat(written); !os.IsNotExist(err) {
		t.Fatalf("%s is still there after the restore (%+v)", written, report)
	}
}

// A server killed in the middle of an answer leaves it streaming, its text part streaming
// and a call pending; the next start seals them (keeping the text), finishes the turn, and
// the next turn sends the model the text and the sealed call.
func TestCrashMidAnswerIsSealedAtTheNextStart(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	user, err := f.db.AppendMessage(ctx, store.Message{SessionID: f.session.ID, Role: store.RoleUser, Content: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	// What the harness stores when a turn starts: the turn's open record and turn.started.
	started, _ := json.Marshal(harness.TurnStarted{TurnID: "turn_crashed", UserMessageID: user.ID})
	if err := f.db.Batch(ctx, func(tx *store.Tx) error {
		if err := tx.OpenTurn(ctx, store.OpenTurn{SessionID: f.session.ID, TurnID: "turn_crashed", UserMessageID: user.ID}); err != nil {
			return err
		}
		_, err := tx.AppendEvents(ctx, f.session.ID, store.NewEvent{Type: harness.EventTurnStarted, Payload: started})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ans, err := f.db.AppendMessage(ctx, store.Message{SessionID: f.session.ID, Role: store.RoleAssistant, Status: store.StatusStreaming,
		TokensIn: 5, Parts: []store.Part{
			{Kind: store.PartText, Status: store.StatusStreaming, Text: "Half a sen"},
			{Kind: store.PartToolCall, Status: store.StatusPending, ToolName: "note", CallID: "call_p"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.h.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	if f.h, err = harness.New(ctx, f.opts); err != nil {
		t.Fatal(err)
	}
	m, err := f.db.Message(ctx, ans.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != store.StatusError || m.Error != "interrupted: the server stopped during this turn" ||
		m.Parts[0].Text != "Half a sen" || m.Parts[0].Status != store.StatusError ||
		m.Parts[1].Status != store.StatusError || !strings.Contains(m.Parts[1].Result, "interrupted") {
		t.Fatalf("sealed %+v", m)
	}
	fin, lastSeq := lastFinished(t, f.db, f.session.ID)
	if fin.TurnID != "turn_crashed" || fin.Reason != harness.ReasonInterrupted || fin.MessageID != ans.ID || fin.Rounds != 1 || fin.Usage.InputTokens != 5 {
		t.Fatalf("finished %+v", fin)
	}
	if _, err := f.db.LedgerForMessage(ctx, ans.ID); err != nil {
		t.Fatalf("ledger: %v", err)
	}
	// Once is enough.
	if err := f.h.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	if f.h, err = harness.New(ctx, f.opts); err != nil {
		t.Fatal(err)
	}
	if _, seq := lastFinished(t, f.db, f.session.ID); seq != lastSeq {
		t.Fatalf("sealed twice: seq %d → %d", lastSeq, seq)
	}

	f.srv.Push(providertest.OpenAIText("gpt-test", "again"))
	if _, fin := f.turn("go on"); fin.Reason != harness.ReasonDone {
		t.Fatalf("next turn %+v", fin)
	}
	req := f.openaiRequest(0)
	var sawText, sawResult bool
	for _, msg := range req.Messages {
		if msg.Role == "assistant" && text(msg.Content) == "Half a sen" && len(msg.ToolCalls) == 1 && msg.ToolCalls[0].Function.Arguments == "{}" {
			sawText = true
		}
		if msg.Role == "tool" && msg.ToolCallID == "call_p" && strings.Contains(text(msg.Content), "interrupted") {
			sawResult = true
		}
	}
	if !sawText || !sawResult {
		t.Fatalf("request %+v", req.Messages)
	}
}

// With undo snapshots, changes made behind ctx.fs's back (as a shell command makes them)
// join the ledger beside ctx.fs's; Restore to here puts every file back byte for byte
// (modified, created, removed), refuses while a file was changed outside jean2 since
// (unless forced), changes nothing on a dry run, and waits for no turn: ErrBusy while one
// runs.
func TestSnapshotsAndRestoreToHere(t *testing.T) {
	f := newFixture(t, fixtureOptions{snapshots: true})
	ctx := context.Background()
	existing, gone, created, noted := filepath.Join(f.ws, "existing.txt"), filepath.Join(f.ws, "gone.txt"),
		filepath.Join(f.ws, "new.txt"), filepath.Join(f.ws, "noted.txt")
	if err := os.WriteFile(existing, []byte("before\n\x00binary"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gone, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.srv.Push(
		providertest.OpenAIToolCall("gpt-test", "call_sh", "shell_write", jsonArgs(map[string]any{
			"files": map[string]string{existing: "after", created: "new"}, "remove": []string{gone}})),
		providertest.OpenAIToolCall("gpt-test", "call_note", "note", `{"path":"noted.txt","text":"via ctx.fs"}`),
		providertest.OpenAIText("gpt-test", "done"),
	)
	info, fin := f.turn("change things")
	if fin.Reason != harness.ReasonDone || fin.Changed.Files != 4 {
		t.Fatalf("finished %+v", fin)
	}
	l, err := f.db.LedgerForMessage(ctx, fin.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, c := range l.Changes {
		paths[c.Path] = true
	}
	for _, p := range []string{existing, gone, created, noted} {
		if !paths[p] {
			t.Fatalf("%s is not on the ledger %+v", p, l.Changes)
		}
	}

	// A dry run changes nothing and publishes nothing.
	before := len(f.events())
	if _, err := f.h.Restore(ctx, f.session.ID, info.UserMessageID, undo.RestoreOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "after" || len(f.events()) != before {
		t.Fatalf("the dry run changed something: %q", b)
	}
	// Changed outside jean2 since: refused, naming the file, unless forced.
	if err := os.WriteFile(existing, []byte("edited by hand"), 0o640); err != nil {
		t.Fatal(err)
	}
	report, err := f.h.Restore(ctx, f.session.ID, info.UserMessageID, undo.RestoreOptions{})
	if !errors.Is(err, undo.ErrRefused) || len(report.Conflicts) != 1 || report.Conflicts[0].Path != existing {
		t.Fatalf("restore over an outside change: %v %+v", err, report)
	}
	if _, err := f.h.Restore(ctx, f.session.ID, info.UserMessageID, undo.RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "before\n\x00binary" {
		t.Fatalf("existing.txt %q %v", b, err)
	}
	if st, _ := os.Stat(existing); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", st.Mode())
	}
	if b, err := os.ReadFile(gone); err != nil || string(b) != "keep me" {
		t.Fatalf("gone.txt %q %v", b, err)
	}
	for _, p := range []string{created, noted} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", p, err)
		}
	}
	f.waitEvent(harness.EventRestoreDone, info.UserMessageID)

	// No restore while a turn runs.
	marker := filepath.Join(f.root, "slow-marker")
	f.srv.Push(providertest.OpenAIToolCall("gpt-test", "call_slow", "slow", jsonArgs(map[string]any{"marker": marker})))
	running := f.start("wait")
	waitFile(t, marker+".started")
	if _, err := f.h.Restore(ctx, f.session.ID, info.UserMessageID, undo.RestoreOptions{}); !errors.Is(err, harness.ErrBusy) {
		t.Fatalf("restore during a turn: %v", err)
	}
	f.h.Stop(f.session.ID)
	f.wait(running)
}
