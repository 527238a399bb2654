package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// A text-only turn: the answer streams into the store and out as events, in order, with
// seqs from 1 and no gaps, to a live subscriber as to the store; text waiting during a pause
// is flushed on its own; usage is recorded; the (empty) ledger is filed under the answer.
func TestTextOnlyTurn(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.srv.Push(providertest.NewOpenAIStream("gpt-test").Text("Hello").Text(", ").Pause(500*time.Millisecond).
		Text("world").Finish("stop").Usage(21, 3).Done().Reply())

	sub, err := f.hub.Subscribe(context.Background(), f.session.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	info, fin := f.turn("Hi there")

	if fin.Reason != harness.ReasonDone || fin.Rounds != 1 || fin.Error != "" || fin.Usage.InputTokens != 21 || fin.Usage.OutputTokens != 3 {
		t.Fatalf("finished %+v", fin)
	}
	msgs := f.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	user, ans := msgs[0], msgs[1]
	if user.ID != info.UserMessageID || user.Role != store.RoleUser || user.Content != "Hi there" || user.Status != store.StatusComplete {
		t.Fatalf("user message %+v", user)
	}
	if ans.Role != store.RoleAssistant || ans.Status != store.StatusComplete || ans.Finish != "stop" || ans.Content != "Hello, world" ||
		ans.TokensIn != 21 || ans.TokensOut != 3 || ans.Model != "gpt-test" || len(ans.Parts) != 1 {
		t.Fatalf("answer %+v", ans)
	}
	if p := ans.Parts[0]; p.Kind != store.PartText || p.Text != "Hello, world" || p.Status != store.StatusComplete {
		t.Fatalf("text part %+v", p)
	}
	if fin.MessageID != ans.ID {
		t.Fatalf("ledger message %s, answer %s", fin.MessageID, ans.ID)
	}
	if l, err := f.db.LedgerForMessage(context.Background(), ans.ID); err != nil || len(l.Changes) != 0 {
		t.Fatalf("ledger %+v %v", l, err)
	}

	// What the model was sent: the system prompt with the workspace, the user's text, tools.
	req := f.openaiRequest(0)
	if req.Model != "gpt-test" || len(req.Messages) != 2 || req.Messages[0].Role != "system" ||
		!strings.Contains(text(req.Messages[0].Content), "You are a test.") || !strings.Contains(text(req.Messages[0].Content), f.ws) ||
		req.Messages[1].Role != "user" || text(req.Messages[1].Content) != "Hi there" {
		t.Fatalf("request %+v", req)
	}
	var toolNames []string
	for _, tl := range req.Tools {
		toolNames = append(toolNames, tl.Function.Name)
	}
	if !slices.Contains(toolNames, "note") || !slices.Contains(toolNames, "probe") {
		t.Fatalf("tools offered %v", toolNames)
	}

	// Events: numbered from 1 without gaps, in the order the turn made them.
	evs := f.events()
	var types []string
	streamed := ""
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		types = append(types, e.Type)
		switch e.Type {
		case harness.EventMessageCreated:
			var me struct{ Message store.Message }
			_ = json.Unmarshal(e.Payload, &me)
			if me.Message.Role == store.RoleAssistant {
				streamed += me.Message.Parts[0].Text
			}
		case harness.EventPartDelta:
			var d harness.PartDelta
			_ = json.Unmarshal(e.Payload, &d)
			if d.MessageID != ans.ID || d.PartID != ans.Parts[0].ID {
				t.Fatalf("delta %+v", d)
			}
			streamed += d.Text
		}
	}
	if streamed != "Hello, world" {
		t.Fatalf("streamed %q", streamed)
	}
	want := []string{"turn.started", "message.created", "message.created", "part.delta", "part.updated", "message.updated", "turn.finished"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	// The pause made what had come go out (stored, then published) before "world" came.
	var created struct{ Message store.Message }
	_ = json.Unmarshal(evs[2].Payload, &created)
	if created.Message.Status != store.StatusStreaming || created.Message.Parts[0].Text != "Hello, " {
		t.Fatalf("the answer as first flushed: %+v", created.Message)
	}

	// A live subscriber got the same events in the same order.
	var live []store.Event
	timeout := time.After(10 * time.Second)
	for len(live) < len(evs) {
		select {
		case e, ok := <-sub.Events():
			if !ok {
				t.Fatalf("subscription ended: %v", sub.Err())
			}
			live = append(live, e)
		case <-timeout:
			t.Fatalf("live subscriber got %d of %d events", len(live), len(evs))
		}
	}
	for i := range evs {
		if live[i].Seq != evs[i].Seq || live[i].Type != evs[i].Type || string(live[i].Payload) != string(evs[i].Payload) {
			t.Fatalf("live event %d: %+v, stored %+v", i, live[i], evs[i])
		}
	}
}

// A tool call whose arguments arrive in pieces (Anthropic's input_json_delta) runs with the
// whole arguments; its result goes back to the model without the visualization; the file it
// wrote is on the turn's ledger, filed under the last answer, and counted in turn.finished.
func TestToolCallArgsSplitAcrossChunks(t *testing.T) {
	f := newFixture(t, fixtureOptions{flavor: providertest.Anthropic})
	f.srv.Push(
		// The pause lets the answer be stored before the call starts, so the call's part is
		// added to a stored answer.
		providertest.NewAnthropicStream("claude-test", 30).Text("Writing.").Pause(300*time.Millisecond).
			ToolUse("toolu_1", "note", "", `{"pa`, `th": "a.txt", "te`, `xt": "hello"}`).Stop("tool_use", 12).Reply(),
		providertest.AnthropicText("claude-test", "Done."),
	)
	_, fin := f.turn("Write hello to a.txt")
	if fin.Reason != harness.ReasonDone || fin.Rounds != 2 || fin.Usage.InputTokens != 40 || fin.Usage.OutputTokens != 13 {
		t.Fatalf("finished %+v", fin)
	}
	target := filepath.Join(f.ws, "a.txt")
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello" {
		t.Fatalf("a.txt: %q %v", b, err)
	}
	if fin.Changed.Files != 1 || fin.Changed.Failed != 0 || !slices.Equal(fin.Changed.Paths, []string{target}) {
		t.Fatalf("changed %+v", fin.Changed)
	}
	msgs := f.messages()
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	first, last := msgs[1], msgs[2]
	if len(first.Parts) != 2 || first.Parts[0].Text != "Writing." || first.Finish != "tool_calls" || first.TokensIn != 30 || first.TokensOut != 12 {
		t.Fatalf("first answer %+v", first)
	}
	call := first.Parts[1]
	if call.Kind != store.PartToolCall || call.CallID != "toolu_1" || call.ToolName != "note" || call.Args != `{"path": "a.txt", "text": "hello"}` ||
		call.Status != store.StatusComplete || !strings.Contains(call.Result, `"wrote":"a.txt"`) ||
		!strings.Contains(string(call.Visualization), "VIZ-FOR-PEOPLE-ONLY") || strings.Contains(call.Result, "VIZ") {
		t.Fatalf("call part %+v", call)
	}
	if fin.MessageID != last.ID || last.Content != "Done." {
		t.Fatalf("filed under %s; last answer %+v", fin.MessageID, last)
	}
	l, err := f.db.LedgerForMessage(context.Background(), last.ID)
	if err != nil || len(l.Changes) != 1 || l.Changes[0].Path != target || !l.Changes[0].OK || l.Changes[0].CallID != "toolu_1" || l.Changes[0].Before == nil {
		t.Fatalf("ledger %+v %v", l, err)
	}
	second := f.srv.Requests()[1]
	body := string(second.Body)
	if !strings.Contains(body, `"tool_result"`) || !strings.Contains(body, `"tool_use_id":"toolu_1"`) || !strings.Contains(body, `wrote`) {
		t.Fatalf("second request lacks the result: %s", body)
	}
	if strings.Contains(body, "VIZ-FOR-PEOPLE-ONLY") {
		t.Fatalf("the visualization reached the model: %s", body)
	}
	// The call's part went pending → running → complete, in that order, on the log.
	var statuses []store.Status
	for _, e := range f.events() {
		if e.Type == harness.EventPartUpdated || e.Type == harness.EventPartCreated || e.Type == harness.EventMessageCreated {
			var pe struct {
				Part    store.Part
				Message store.Message
			}
			_ = json.Unmarshal(e.Payload, &pe)
			for _, p := range append(pe.Message.Parts, pe.Part) {
				if p.CallID == "toolu_1" {
					statuses = append(statuses, p.Status)
				}
			}
		}
	}
	if !slices.Equal(statuses, []store.Status{store.StatusPending, store.StatusRunning, store.StatusComplete}) {
		t.Fatalf("call statuses on the log: %v", statuses)
	}
}

// Two calls in one answer (their argument pieces interleaved) of a tool that is not
// read-only run one after the other, in stream order: the first cannot meet the second at
// the barrier, the second finds the first's file there. Their results go back in order.
func TestCallsOfOneAnswerRunInStreamOrder(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	dir := filepath.Join(f.root, "barrier")
	a := jsonArgs(map[string]any{"dir": dir, "id": "first", "n": 2, "waitMs": 1500})
	b := jsonArgs(map[string]any{"dir": dir, "id": "second", "n": 2, "waitMs": 1500})
	f.srv.Push(
		providertest.NewOpenAIStream("gpt-test").Text("Both.").
			ToolCall(0, "call_a", "probe_rw", "").ToolCall(1, "call_b", "probe_rw", "").
			ToolArgs(1, b[:10]).ToolArgs(0, a[:7]).ToolArgs(0, a[7:]).ToolArgs(1, b[10:]).
			Finish("tool_calls").Usage(5, 5).Done().Reply(),
		providertest.OpenAIText("gpt-test", "ok"),
	)
	_, fin := f.turn("go")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	parts := f.messages()[1].Parts
	if len(parts) != 3 || parts[1].CallID != "call_a" || parts[2].CallID != "call_b" || parts[1].Args != a || parts[2].Args != b {
		t.Fatalf("parts %+v", parts)
	}
	if !strings.Contains(parts[1].Result, `"met":false`) || !strings.Contains(parts[2].Result, `"met":true`) {
		t.Fatalf("not one after the other: first %s, second %s", parts[1].Result, parts[2].Result)
	}
	req := f.openaiRequest(1)
	n := len(req.Messages)
	if n < 4 || req.Messages[n-3].Role != "assistant" || len(req.Messages[n-3].ToolCalls) != 2 ||
		req.Messages[n-2].ToolCallID != "call_a" || req.Messages[n-1].ToolCallID != "call_b" {
		t.Fatalf("second request %+v", req)
	}
}

// Consecutive calls of a read-only tool run together: both are in flight at once, which the
// barrier proves (each waits for the other's file), whatever the timing.
func TestReadOnlyCallsRunInParallel(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	dir := filepath.Join(f.root, "barrier")
	f.srv.Push(
		providertest.NewOpenAIStream("gpt-test").
			ToolCall(0, "call_a", "probe", jsonArgs(map[string]any{"dir": dir, "id": "a", "n": 2})).
			ToolCall(1, "call_b", "probe", jsonArgs(map[string]any{"dir": dir, "id": "b", "n": 2})).
			Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("gpt-test", "ok"),
	)
	_, fin := f.turn("go")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	parts := f.messages()[1].Parts
	for _, p := range parts {
		if !strings.Contains(p.Result, `"met":true`) {
			t.Fatalf("call %s did not meet the other: %s", p.CallID, p.Result)
		}
	}
}

// scriptCalls answers every harness request with a call of tool (unique ids).
func scriptCalls(f *fixture, ids *seqIDs, tool string) {
	f.srv.Respond(func(providertest.Request) providertest.Reply {
		return providertest.OpenAIToolCall("gpt-test", ids.next(), tool, "{}")
	})
}

// The work budget ends a turn after that many rounds of work; their results are kept and
// the ledger is filed under the last answer.
func TestBudgetEndsTheTurn(t *testing.T) {
	f := newFixture(t, fixtureOptions{adjust: func(o *harness.Options) { o.WorkRounds = 2 }})
	scriptCalls(f, &seqIDs{}, "trivial")
	_, fin := f.turn("loop")
	if fin.Reason != harness.ReasonBudget || fin.Rounds != 2 || !strings.Contains(fin.Error, "work budget of 2 rounds") {
		t.Fatalf("finished %+v", fin)
	}
	if n := len(f.srv.Requests()); n != 2 {
		t.Fatalf("%d model calls", n)
	}
	msgs := f.messages()
	last := msgs[len(msgs)-1]
	if fin.MessageID != last.ID || last.Parts[0].Status != store.StatusComplete {
		t.Fatalf("last answer %+v, filed under %s", last, fin.MessageID)
	}
	if _, err := f.db.LedgerForMessage(context.Background(), last.ID); err != nil {
		t.Fatal(err)
	}
}

// Rounds made only of interactive calls do not spend the budget: with a budget of one, two
// interactive rounds and then one of work make three rounds.
func TestInteractiveRoundsDoNotSpendTheBudget(t *testing.T) {
	f := newFixture(t, fixtureOptions{adjust: func(o *harness.Options) { o.WorkRounds = 1 }})
	f.srv.Push(
		providertest.OpenAIToolCall("gpt-test", "c1", "ask_user", `{"q":"which?"}`),
		providertest.OpenAIToolCall("gpt-test", "c2", "ask_user", `{"q":"sure?"}`),
		providertest.OpenAIToolCall("gpt-test", "c3", "trivial", `{}`),
	)
	_, fin := f.turn("go")
	if fin.Reason != harness.ReasonBudget || fin.Rounds != 3 {
		t.Fatalf("finished %+v", fin)
	}
	if f.srv.Pending() != 0 || len(f.srv.Requests()) != 3 {
		t.Fatalf("%d requests, %d replies left", len(f.srv.Requests()), f.srv.Pending())
	}
}

// SetLimits applies to the turns started after it: a budget of one round, then the
// defaults again.
func TestSetLimitsAppliesToLaterTurns(t *testing.T) {
	f := newFixture(t, fixtureOptions{adjust: func(o *harness.Options) { o.WorkRounds = 3 }})
	scriptCalls(f, &seqIDs{}, "trivial")
	f.h.SetLimits(1, 0)
	if _, fin := f.turn("loop"); fin.Reason != harness.ReasonBudget || fin.Rounds != 1 || !strings.Contains(fin.Error, "budget of 1 rounds") {
		t.Fatalf("finished %+v", fin)
	}
	f.h.SetLimits(2, 1)
	if _, fin := f.turn("loop"); fin.Reason != harness.ReasonCeiling || fin.Rounds != 1 {
		t.Fatalf("finished %+v", fin)
	}
	f.h.SetLimits(0, 0) // the defaults: 5 rounds of work
	if _, fin := f.turn("loop"); fin.Reason != harness.ReasonBudget || fin.Rounds != harness.DefaultWorkRounds {
		t.Fatalf("finished %+v", fin)
	}
}

// The ceiling ends a turn whose rounds never spend the budget.
func TestCeilingEndsTheTurn(t *testing.T) {
	f := newFixture(t, fixtureOptions{adjust: func(o *harness.Options) { o.MaxRounds = 3 }})
	scriptCalls(f, &seqIDs{}, "ask_user")
	_, fin := f.turn("ask away")
	if fin.Reason != harness.ReasonCeiling || fin.Rounds != 3 || !strings.Contains(fin.Error, "ceiling of 3 rounds") {
		t.Fatalf("finished %+v", fin)
	}
	if n := len(f.srv.Requests()); n != 3 {
		t.Fatalf("%d model calls", n)
	}
}

// Stop in the middle of a long call: the tool sees its abort signal (with the reason), the
// call's part is sealed, the turn ends "stopped", and the next turn works and shows the
// model what became of the call.
func TestStopDuringALongCall(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	marker := filepath.Join(f.root, "slow-marker")
	f.srv.Push(
		providertest.NewOpenAIStream("gpt-test").ToolCall(0, "call_slow", "slow", jsonArgs(map[string]any{"marker": marker})).
			ToolCall(1, "call_after", "note", `{"path":"never.txt","text":"x"}`).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("gpt-test", "fine"),
	)
	info := f.start("wait")
	waitFile(t, marker+".started")
	if !f.h.Running(f.session.ID) || !f.h.Stop(f.session.ID) {
		t.Fatal("the turn was not running")
	}
	fin := f.wait(info)
	if fin.Reason != harness.ReasonStopped || !strings.Contains(fin.Error, "stopped by the user") {
		t.Fatalf("finished %+v", fin)
	}
	if f.h.Running(f.session.ID) || f.h.Stop(f.session.ID) {
		t.Fatal("still running after the turn finished")
	}
	seen, err := os.ReadFile(marker)
	// The worker tells the tool "The call was stopped"; the cause is on the call's result.
	if err != nil || !strings.HasPrefix(string(seen), "abort: ") {
		t.Fatalf("the tool saw %q (%v)", seen, err)
	}
	parts := f.messages()[1].Parts
	if parts[0].Status != store.StatusError || !strings.Contains(parts[0].Result, "stopped by the user") {
		t.Fatalf("slow part %+v", parts[0])
	}
	if parts[1].Status != store.StatusError || !strings.Contains(parts[1].Error, "stopped before this call ran") {
		t.Fatalf("the call after the stop %+v", parts[1])
	}
	if _, err := os.Stat(filepath.Join(f.ws, "never.txt")); !os.IsNotExist(err) {
		t.Fatalf("a call after the stop ran: %v", err)
	}
	_, fin = f.turn("go on")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("next turn %+v", fin)
	}
	req := f.openaiRequest(1)
	var results []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			results = append(results, m.ToolCallID+"="+text(m.Content))
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], "call_slow=") || !strings.Contains(results[1], "stopped before this call ran") {
		t.Fatalf("results sent %q", results)
	}
}

// Stop while the answer streams: what streamed stays (the model sees it next time), the
// call it had begun is sealed as never run, and the turn ends "stopped".
func TestStopMidAnswerKeepsWhatStreamed(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.srv.Push(
		providertest.NewOpenAIStream("gpt-test").Text("Let me think").ToolCall(0, "call_half", "note", `{"pa`).
			Pause(20*time.Second).ToolArgs(0, `th":"x"}`).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("gpt-test", "ok"),
	)
	info := f.start("think")
	f.waitEvent(harness.EventMessageCreated, "Let me think")
	if !f.h.Stop(f.session.ID) {
		t.Fatal("not running")
	}
	fin := f.wait(info)
	if fin.Reason != harness.ReasonStopped {
		t.Fatalf("finished %+v", fin)
	}
	ans := f.messages()[1]
	if ans.Status != store.StatusError || ans.Error != "stopped by the user" || ans.Parts[0].Text != "Let me think" ||
		ans.Parts[0].Status != store.StatusComplete || ans.Parts[1].Status != store.StatusError ||
		!strings.Contains(ans.Parts[1].Error, "stopped before this call ran") || fin.MessageID != ans.ID {
		t.Fatalf("answer %+v", ans)
	}
	if _, fin := f.turn("go on"); fin.Reason != harness.ReasonDone {
		t.Fatalf("next turn %+v", fin)
	}
	req := f.openaiRequest(1)
	if n := len(req.Messages); n != 5 || text(req.Messages[2].Content) != "Let me think" || req.Messages[3].ToolCallID != "call_half" {
		t.Fatalf("request after the stop %+v", req.Messages)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// Arguments that do not parse never run; the model gets an error it can act on, and its
// call is sent back with "{}" arguments.
func TestUnparseableArgumentsNeverRun(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.srv.Push(
		providertest.OpenAIToolCall("gpt-test", "call_bad", "note", `{"path": "x.txt", "text": `),
		providertest.OpenAIText("gpt-test", "oops"),
	)
	_, fin := f.turn("go")
	if fin.Reason != harness.ReasonDone || fin.Rounds != 2 {
		t.Fatalf("finished %+v", fin)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "x.txt")); !os.IsNotExist(err) {
		t.Fatalf("the call ran: %v", err)
	}
	p := f.messages()[1].Parts[0]
	if p.Status != store.StatusError || !strings.Contains(p.Error, "arguments are not valid JSON") ||
		!strings.Contains(p.Error, "send an object matching the schema") || p.Args != `{"path": "x.txt", "text": ` {
		t.Fatalf("part %+v", p)
	}
	req := f.openaiRequest(1)
	n := len(req.Messages)
	if req.Messages[n-2].ToolCalls[0].Function.Arguments != "{}" || !strings.Contains(text(req.Messages[n-1].Content), "arguments are not valid JSON") {
		t.Fatalf("second request %+v", req.Messages[n-2:])
	}
}

// An error in the middle of the answer drops it: it stays for people, marked, never reaches
// the model; the turn ends with reason error and says what happened; the next turn works.
func TestStreamErrorMidRoundDropsTheAnswer(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.srv.Push(
		providertest.NewOpenAIStream("gpt-test").Text("Partial answ").ToolCall(0, "call_x", "note", `{"path":`).
			Error("server_error", "The server had an error while processing your request.").Reply(),
		providertest.OpenAIText("gpt-test", "second try"),
	)
	_, fin := f.turn("first")
	if fin.Reason != harness.ReasonError || !strings.Contains(fin.Error, "broke off") || !strings.Contains(fin.Error, "The server had an error") {
		t.Fatalf("finished %+v", fin)
	}
	msgs := f.messages()
	ans := msgs[1]
	if ans.Status != store.StatusError || ans.Finish != "dropped" || !strings.Contains(ans.Error, "dropped") ||
		ans.Parts[0].Text != "Partial answ" || ans.Parts[1].Status != store.StatusError {
		t.Fatalf("dropped answer %+v", ans)
	}
	if fin.MessageID != ans.ID {
		t.Fatalf("filed under %s, not the only answer %s", fin.MessageID, ans.ID)
	}
	_, fin = f.turn("again")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("next turn %+v", fin)
	}
	body := string(f.srv.Requests()[1].Body)
	if strings.Contains(body, "Partial answ") || strings.Contains(body, "call_x") {
		t.Fatalf("the dropped answer reached the model: %s", body)
	}
	req := f.openaiRequest(1)
	if n := len(req.Messages); n != 3 || text(req.Messages[1].Content) != "first" || text(req.Messages[2].Content) != "again" {
		t.Fatalf("second request %+v", req.Messages)
	}
}

// A length cut-off in the middle of a call's arguments: the call does not run, the model
// is told, and the turn goes on (the calls decide, not the finish reason).
func TestLengthCutOffMidArguments(t *testing.T) {
	f := newFixture(t, fixtureOptions{flavor: providertest.Anthropic})
	f.srv.Push(
		providertest.NewAnthropicStream("claude-test", 9).ToolUse("toolu_cut", "note", `{"path":"cut.txt","te`).Stop("max_tokens", 1024).Reply(),
		providertest.AnthropicText("claude-test", "I was cut off."),
	)
	_, fin := f.turn("write a lot")
	if fin.Reason != harness.ReasonDone || fin.Rounds != 2 {
		t.Fatalf("finished %+v", fin)
	}
	ans := f.messages()[1]
	if ans.Finish != "length" || ans.Parts[0].Status != store.StatusError || !strings.Contains(ans.Parts[0].Error, "arguments are not valid JSON") {
		t.Fatalf("answer %+v", ans)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "cut.txt")); !os.IsNotExist(err) {
		t.Fatalf("the cut call ran: %v", err)
	}
}

// Before the model call the transcript is repaired: a call left without a result is sealed
// (in the request and in the store), a second result of a call and a second call with the
// same id are dropped.
func TestRepairBeforeEveryModelCall(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	if _, err := f.db.AppendMessage(ctx, store.Message{SessionID: f.session.ID, Role: store.RoleUser, Content: "earlier"}); err != nil {
		t.Fatal(err)
	}
	old, err := f.db.AppendMessage(ctx, store.Message{SessionID: f.session.ID, Role: store.RoleAssistant, Status: store.StatusComplete,
		Parts: []store.Part{
			{Kind: store.PartToolCall, ToolName: "note", CallID: "call_orphan", Args: `{"path":"o.txt","text":"x"}`, Status: store.StatusRunning},
			{Kind: store.PartToolCall, ToolName: "trivial", CallID: "call_done", Args: `{}`, Status: store.StatusComplete, Result: `{"success":true,"result":"FIRST"}`},
			{Kind: store.PartToolCall, ToolName: "trivial", CallID: "call_done", Args: `{}`, Status: store.StatusComplete, Result: `{"success":true,"result":"TWIN"}`},
			{Kind: store.PartToolResult, CallID: "call_done", Status: store.StatusComplete, Result: `{"success":true,"result":"SECOND"}`},
			{Kind: store.PartToolResult, CallID: "call_nowhere", Status: store.StatusComplete, Result: `{"success":true}`},
		}})
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Push(providertest.OpenAIText("gpt-test", "ok"))
	_, fin := f.turn("now")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	req := f.openaiRequest(0)
	var roles []string
	results := map[string][]string{}
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
		if m.Role == "tool" {
			results[m.ToolCallID] = append(results[m.ToolCallID], text(m.Content))
		}
		if m.Role == "assistant" && len(m.ToolCalls) != 2 {
			t.Fatalf("calls sent %+v", m.ToolCalls)
		}
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "tool", "tool", "user"}) {
		t.Fatalf("roles %v", roles)
	}
	if len(results) != 2 || len(results["call_orphan"]) != 1 || !strings.Contains(results["call_orphan"][0], "interrupted") ||
		len(results["call_done"]) != 1 || !strings.Contains(results["call_done"][0], "FIRST") {
		t.Fatalf("results %v", results)
	}
	m, err := f.db.Message(ctx, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Parts[0]; p.Status != store.StatusError || !strings.Contains(p.Result, "interrupted") {
		t.Fatalf("the orphan was not sealed in the store: %+v", p)
	}
	f.waitEvent(harness.EventPartUpdated, "call_orphan", "interrupted")
}

// ctx.llm in a tool call goes to the session's provider and model.
func TestCtxLLMUsesTheSessionsModel(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ses := f.session
	ses.Model = "gpt-session-model"
	if _, err := f.db.UpdateSession(context.Background(), ses); err != nil {
		t.Fatal(err)
	}
	f.srv.Push(
		providertest.OpenAIToolCall("gpt-session-model", "call_sum", "summarize", `{"text":"a long story"}`),
		providertest.OpenAIText("gpt-session-model", "SHORT", " VERSION"),
		providertest.OpenAIText("gpt-session-model", "Here it is."),
	)
	_, fin := f.turn("summarize it")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	p := f.messages()[1].Parts[0]
	if p.Status != store.StatusComplete || !strings.Contains(p.Result, "SHORT VERSION") {
		t.Fatalf("call %+v", p)
	}
	llmReq := f.openaiRequest(1)
	if llmReq.Model != "gpt-session-model" || len(llmReq.Tools) != 0 || !strings.Contains(text(llmReq.Messages[len(llmReq.Messages)-1].Content), "Summarize: a long story") {
		t.Fatalf("ctx.llm request %+v", llmReq)
	}
	if r := f.openaiRequest(0); r.Model != "gpt-session-model" {
		t.Fatalf("turn request model %s", r.Model)
	}
}

// One turn per session; Close interrupts a running turn, seals it, and refuses new ones.
func TestBusyAndClose(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	marker := filepath.Join(f.root, "slow-marker")
	f.srv.Push(providertest.OpenAIToolCall("gpt-test", "call_slow", "slow", jsonArgs(map[string]any{"marker": marker})))
	info := f.start("wait")
	waitFile(t, marker+".started")
	if _, err := f.h.Start(context.Background(), f.session.ID, harness.Input{Text: "again"}); !errors.Is(err, harness.ErrBusy) {
		t.Fatalf("second start: %v", err)
	}
	if _, err := f.h.Start(context.Background(), f.session.ID, harness.Input{Text: "  "}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty message: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	fin := f.wait(info)
	if fin.Reason != harness.ReasonInterrupted || !strings.Contains(fin.Error, "shutting down") {
		t.Fatalf("finished %+v", fin)
	}
	if p := f.messages()[1].Parts[0]; p.Status != store.StatusError || !strings.Contains(p.Result, "shutting down") {
		t.Fatalf("part %+v", p)
	}
	if _, err := f.h.Start(context.Background(), f.session.ID, harness.Input{Text: "after"}); !errors.Is(err, harness.ErrClosed) {
		t.Fatalf("start after close: %v", err)
	}
	if n := len(f.messages()); n != 2 {
		t.Fatalf("%d messages: a refused start stored something", n)
	}
}

// A subscriber that sees turn.finished finds the session free: Running says no, Stop has
// nothing to stop and the next turn starts at once (a client sends its next message on
// turn.finished; it used to be refused as busy while the turn's goroutine tidied up).
func TestTurnFinishedFreesTheSession(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for range 20 {
		f.srv.Push(providertest.NewOpenAIStream("gpt-test").Text("ok").Finish("stop").Usage(1, 1).Done().Reply())
	}
	sub, err := f.hub.Subscribe(context.Background(), f.session.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	timeout := time.After(60 * time.Second)
	for i := range 20 {
		if _, err := f.h.Start(context.Background(), f.session.ID, harness.Input{Text: fmt.Sprintf("turn %d", i)}); err != nil {
			t.Fatalf("turn %d started right after the previous turn.finished: %v", i, err)
		}
	wait:
		for {
			select {
			case e := <-sub.Events():
				if e.Type != harness.EventTurnFinished {
					continue
				}
				if f.h.Running(f.session.ID) || f.h.Stop(f.session.ID) {
					t.Fatalf("turn %d: the session still runs a turn after its turn.finished", i)
				}
				break wait
			case <-timeout:
				t.Fatalf("turn %d did not finish", i)
			}
		}
	}
}
