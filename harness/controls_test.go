package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// roles says a transcript as role:content pairs.
func roles(msgs []store.Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role)+":"+m.Content)
	}
	return strings.Join(out, " | ")
}

// waitTurns waits until n turns have finished in the fixture's session and none runs. (A
// queued message is taken off the queue just before its turn starts, so "nothing queued and
// nothing running" alone may be seen in between.)
func (f *fixture) waitTurns(n int) {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		done := 0
		for _, e := range f.events() {
			if e.Type == harness.EventTurnFinished {
				done++
			}
		}
		if done >= n && !f.h.Running(f.session.ID) && len(f.h.Queue(f.session.ID)) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.t.Fatalf("%d turns did not finish; events: %s", n, f.eventTypes())
}

// Messages queued while a turn runs are sent, in order, each as the next turn once the one
// before it has ended; queue.changed says the queue after each change.
func TestQueuedMessagesSentWhenTheTurnEnds(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.srv.Push(providertest.NewOpenAIStream("gpt-test").Text("one").Pause(700 * time.Millisecond).Text(" done").Finish("stop").Done().Reply())
	f.srv.Push(providertest.OpenAIText("gpt-test", "two done"))
	f.srv.Push(providertest.OpenAIText("gpt-test", "three done"))
	ctx := context.Background()
	q, started, err := f.h.Enqueue(ctx, f.session.ID, harness.Input{Text: "first"})
	if err != nil || started == nil || q.ID != "" {
		t.Fatalf("an idle session's message is sent at once: %+v %+v %v", q, started, err)
	}
	second, started, err := f.h.Enqueue(ctx, f.session.ID, harness.Input{Text: "second"})
	if err != nil || started != nil || second.ID == "" {
		t.Fatalf("queue while the turn runs: %+v %+v %v", second, started, err)
	}
	third, _, err := f.h.Enqueue(ctx, f.session.ID, harness.Input{Text: "third"})
	if err != nil || third.ID == "" {
		t.Fatal(err)
	}
	if got := f.h.Queue(f.session.ID); len(got) != 2 || got[0].Text != "second" || got[1].Text != "third" {
		t.Fatalf("queue %+v", got)
	}
	f.waitTurns(3)
	want := "user:first | assistant:one done | user:second | assistant:two done | user:third | assistant:three done"
	if got := roles(f.messages()); got != want {
		t.Fatalf("transcript\n got %s\nwant %s", got, want)
	}
	var last harness.QueueChanged
	n := 0
	for _, e := range f.events() {
		if e.Type == harness.EventQueueChanged {
			n++
			_ = json.Unmarshal(e.Payload, &last)
		}
	}
	if n != 4 || len(last.Items) != 0 {
		t.Fatalf("%d queue.changed events, last %+v; want 4 ending empty", n, last)
	}
	// A queued message can be taken back before it is sent.
	f.srv.Push(providertest.NewOpenAIStream("gpt-test").Text("four").Pause(500 * time.Millisecond).Finish("stop").Done().Reply())
	if _, _, err := f.h.Enqueue(ctx, f.session.ID, harness.Input{Text: "fourth"}); err != nil {
		t.Fatal(err)
	}
	fifth, _, _ := f.h.Enqueue(ctx, f.session.ID, harness.Input{Text: "fifth"})
	if !f.h.Unqueue(ctx, f.session.ID, fifth.ID) || f.h.Unqueue(ctx, f.session.ID, fifth.ID) {
		t.Fatal("unqueue: the first removes it, the second finds nothing")
	}
	f.waitTurns(4)
	if got := roles(f.messages()); !strings.HasSuffix(got, "user:fourth | assistant:four") {
		t.Fatalf("after taking fifth back: %s", got)
	}
}

// Edit and resend: the conversation is cut back to before the edited message and goes on
// from the new text; with Restore, the files the cut turns wrote are put back first.
func TestResendEditedMessageRestoresFiles(t *testing.T) {
	f := newFixture(t, fixtureOptions{snapshots: true})
	note := filepath.Join(f.ws, "a.txt")
	f.srv.Push(providertest.OpenAIText("gpt-test", "hello"))
	f.turn("hi")
	f.srv.Push(providertest.OpenAIToolCall("gpt-test", "call_1", "note", jsonArgs(map[string]any{"path": note, "text": "written"})))
	f.srv.Push(providertest.OpenAIText("gpt-test", "wrote it"))
	info, _ := f.turn("write a.txt")
	if b, err := os.ReadFile(note); err != nil || string(b) != "written" {
		t.Fatalf("a.txt: %q %v", b, err)
	}
	f.srv.Push(providertest.OpenAIText("gpt-test", "not written"))
	res, err := f.h.Resend(context.Background(), f.session.ID, info.UserMessageID, harness.Input{Text: "do not write"},
		harness.ResendOptions{Restore: &undo.RestoreOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(res.Turn)
	if _, err := os.Stat(note); !os.IsNotExist(err) {
		t.Fatalf("a.txt is still there after Restore to here: %v", err)
	}
	if res.Cut.Count < 2 || res.Restored == nil || !res.Restored.Applied || len(res.Restored.Removed) != 1 {
		t.Fatalf("result %+v", res)
	}
	want := "user:hi | assistant:hello | user:do not write | assistant:not written"
	if got := roles(f.messages()); got != want {
		t.Fatalf("transcript\n got %s\nwant %s", got, want)
	}
	// What the model saw of the conversation: nothing of the cut turn.
	req := f.srv.Requests()
	body := string(req[len(req)-1].Body)
	if strings.Contains(body, "write a.txt") || strings.Contains(body, "wrote it") || !strings.Contains(body, "do not write") {
		t.Fatalf("the model was sent the cut turn: %s", body)
	}
	f.waitEvent(harness.EventMessagesCut, `"reason":"edit"`)
	// Only a person's message can be edited.
	msgs := f.messages()
	if _, err := f.h.Resend(context.Background(), f.session.ID, msgs[1].ID, harness.Input{Text: "x"}, harness.ResendOptions{}); !errors.Is(err, harness.ErrNotUserMessage) {
		t.Fatalf("resend of an answer: %v", err)
	}
}

// Regenerate answers the last user message again; Fork copies the conversation up to a
// message into a new session of the same workspace and leaves the original whole.
func TestRegenerateAndFork(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.srv.Push(providertest.OpenAIText("gpt-test", "A1"))
	f.turn("Q1")
	f.srv.Push(providertest.OpenAIText("gpt-test", "A2"))
	f.turn("Q2")
	f.srv.Push(providertest.OpenAIText("gpt-test", "A2 again"))
	res, err := f.h.Regenerate(context.Background(), f.session.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.wait(res.Turn)
	want := "user:Q1 | assistant:A1 | user:Q2 | assistant:A2 again"
	if got := roles(f.messages()); got != want {
		t.Fatalf("after regenerate\n got %s\nwant %s", got, want)
	}
	msgs := f.messages()
	fork, err := f.h.Fork(context.Background(), f.session.ID, msgs[1].ID, "fork of test")
	if err != nil {
		t.Fatal(err)
	}
	if fork.WorkspaceID != f.session.WorkspaceID || fork.ID == f.session.ID {
		t.Fatalf("fork %+v", fork)
	}
	forked, err := f.db.ListMessages(context.Background(), fork.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(forked); got != "user:Q1 | assistant:A1" {
		t.Fatalf("fork holds %s", got)
	}
	if forked[1].ID == msgs[1].ID || len(forked[1].Parts) != len(msgs[1].Parts) || forked[1].Parts[0].Text != "A1" {
		t.Fatalf("forked answer %+v", forked[1])
	}
	if got := roles(f.messages()); got != want {
		t.Fatalf("the original changed: %s", got)
	}
	// The fork goes on on its own.
	f.srv.Push(providertest.OpenAIText("gpt-test", "B2"))
	info, err := f.h.Start(context.Background(), fork.ID, harness.Input{Text: "Q2 in fork"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.h.Wait(ctx, info.SessionID); err != nil {
		t.Fatal(err)
	}
	forked, _ = f.db.ListMessages(context.Background(), fork.ID)
	if got := roles(forked); got != "user:Q1 | assistant:A1 | user:Q2 in fork | assistant:B2" {
		t.Fatalf("fork after its turn: %s", got)
	}
}
