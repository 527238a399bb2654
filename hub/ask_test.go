package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

var deployCall = ask.Call{Tool: "deploy", CallID: "call_1", ToolVersion: "v1"}

func selectAsk() tool.Ask {
	return tool.Ask{Type: tool.AskSingleSelect, Target: "human", Question: "Which environment?", Options: []tool.Option{
		{Label: "Staging", Value: json.RawMessage(`"staging"`)}, {Label: "Production", Value: json.RawMessage(`"prod"`)},
	}}
}

func permissionAsk(risk string) tool.Ask {
	return tool.Ask{Type: tool.AskPermission, Question: "Run the migration?", Risk: risk, Resource: "database"}
}

// answer is what a tool's ask came back with.
type answer struct {
	value    json.RawMessage
	decision ask.Decision
	err      error
}

// askAsync puts q to the session's asker from a goroutine, as a tool call does.
func (f *fixture) askAsync(ctx context.Context, q tool.Ask) <-chan answer {
	out := make(chan answer, 1)
	ctx = ask.ContextWithCall(ctx, deployCall)
	go func() {
		v, err := f.hub.Asker(f.sid).Ask(ctx, q)
		out <- answer{value: v, err: err}
	}()
	return out
}

func (f *fixture) askPermissionAsync(ctx context.Context, q tool.Ask) <-chan answer {
	out := make(chan answer, 1)
	ctx = ask.ContextWithCall(ctx, deployCall)
	go func() {
		d, err := f.hub.Asker(f.sid).(ask.PermissionAsker).AskPermission(ctx, q)
		out <- answer{decision: d, err: err}
	}()
	return out
}

func wait(t testing.TB, c <-chan answer) answer {
	t.Helper()
	select {
	case a := <-c:
		return a
	case <-time.After(waitLimit):
		t.Fatal("the ask never returned")
		return answer{}
	}
}

// nextOfType reads sub until an event of type typ and decodes its payload into v.
func nextOfType(t testing.TB, sub *Subscription, typ string, v any) store.Event {
	t.Helper()
	for {
		ev := receive(t, sub, 1)[0]
		if ev.Type != typ {
			continue
		}
		if err := json.Unmarshal(ev.Payload, v); err != nil {
			t.Fatalf("%s payload %s: %v", typ, ev.Payload, err)
		}
		return ev
	}
}

func (f *fixture) attach() *Subscription {
	f.t.Helper()
	sub, err := f.hub.Subscribe(context.Background(), f.sid, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(sub.Close)
	return sub
}

func pendingOf(t testing.TB, sub *Subscription) PendingAsk {
	t.Helper()
	var p AskPendingPayload
	nextOfType(t, sub, EventAskPending, &p)
	return p.Ask
}

func resolvedOf(t testing.TB, sub *Subscription) AskResolvedPayload {
	t.Helper()
	var r AskResolvedPayload
	nextOfType(t, sub, EventAskResolved, &r)
	return r
}

// An attached client sees ask.pending, answers it, and the tool gets the answer; the
// resolution is published; a second answer finds nothing.
func TestAskAnswered(t *testing.T) {
	f := newFixture(t, Options{})
	sub := f.attach()
	ctx := context.Background()
	got := f.askAsync(ctx, selectAsk())

	p := pendingOf(t, sub)
	if p.ID == "" || p.SessionID != f.sid || p.CallID != "call_1" || p.Tool != "deploy" || p.Ask.Question != "Which environment?" ||
		p.CreatedAt.IsZero() || p.ExpiresAt.Sub(p.CreatedAt) != DefaultAskTimeout {
		t.Fatalf("pending ask %+v", p)
	}
	if list := f.hub.Pending(f.sid); len(list) != 1 || list[0].ID != p.ID {
		t.Fatalf("Pending = %+v", list)
	}
	if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(` "staging" `)); err != nil {
		t.Fatal(err)
	}
	a := wait(t, got)
	if a.err != nil || string(a.value) != `"staging"` {
		t.Fatalf("the tool got %s, %v", a.value, a.err)
	}
	r := resolvedOf(t, sub)
	if r.AskID != p.ID || r.CallID != "call_1" || r.Outcome != OutcomeAnswered || string(r.Answer) != `"staging"` || r.Error != "" {
		t.Fatalf("resolved %+v", r)
	}
	if list := f.hub.Pending(f.sid); len(list) != 0 {
		t.Fatalf("still pending: %+v", list)
	}
	if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(`"prod"`)); !errors.Is(err, ErrNoSuchAsk) {
		t.Fatalf("second answer: %v", err)
	}
	if err := f.hub.Answer(ctx, "ses_unknown", p.ID, json.RawMessage(`"prod"`)); !errors.Is(err, ErrNoSuchAsk) {
		t.Fatalf("answer in an unknown session: %v", err)
	}
}

// Many clients answer at once: exactly one answer wins, the tool gets that one, the others
// get ErrNoSuchAsk, and one ask.resolved is published.
func TestFirstAnswerWins(t *testing.T) {
	f := newFixture(t, Options{})
	sub := f.attach()
	ctx := context.Background()
	got := f.askAsync(ctx, selectAsk())
	p := pendingOf(t, sub)

	answers := []string{`"staging"`, `"prod"`, `"staging"`, `"prod"`, `"prod"`, `"staging"`, `"prod"`, `"staging"`}
	errs := make([]error, len(answers))
	var wg sync.WaitGroup
	for i, a := range answers {
		wg.Go(func() { errs[i] = f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(a)) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("answers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, ErrNoSuchAsk):
			t.Fatalf("answer %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no answer won")
	}
	if a := wait(t, got); a.err != nil || string(a.value) != answers[winner] {
		t.Fatalf("the tool got %s, %v; the winner answered %s", a.value, a.err, answers[winner])
	}
	if r := resolvedOf(t, sub); string(r.Answer) != answers[winner] {
		t.Fatalf("resolved %+v", r)
	}
	evs, err := f.db.EventsAfter(ctx, f.sid, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	resolved := 0
	for _, ev := range evs {
		if ev.Type == EventAskResolved {
			resolved++
		}
	}
	if resolved != 1 {
		t.Fatalf("%d ask.resolved events, want 1", resolved)
	}
}

// Answers of the wrong shape, empty or huge are refused with ask.ErrInvalidAnswer and the
// ask stays pending for a right one.
func TestInvalidAnswerKeepsAskPending(t *testing.T) {
	f := newFixture(t, Options{})
	sub := f.attach()
	ctx := context.Background()
	got := f.askAsync(ctx, selectAsk())
	p := pendingOf(t, sub)

	huge := make([]byte, MaxAnswerBytes+10)
	huge[0], huge[len(huge)-1] = '"', '"'
	for i := 1; i < len(huge)-1; i++ {
		huge[i] = 'a'
	}
	for name, bad := range map[string]string{
		"not an option": `"qa"`, "not JSON": `{nope`, "empty": ``, "blank": "  \n", "null": `null`, "huge": string(huge),
	} {
		err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(bad))
		if !errors.Is(err, ask.ErrInvalidAnswer) {
			t.Fatalf("%s: %v, want ErrInvalidAnswer", name, err)
		}
		if !strings.Contains(err.Error(), p.ID) {
			t.Errorf("%s: the error does not name the ask: %v", name, err)
		}
		if len(f.hub.Pending(f.sid)) != 1 {
			t.Fatalf("%s: the ask is no longer pending", name)
		}
	}
	err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(`"qa"`))
	if !strings.Contains(err.Error(), `expected one of the option values "staging", "prod"`) {
		t.Fatalf("the error does not say what a right answer is: %v", err)
	}
	select {
	case a := <-got:
		t.Fatalf("the tool returned on a refused answer: %+v", a)
	default:
	}
	if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(`"prod"`)); err != nil {
		t.Fatal(err)
	}
	if a := wait(t, got); a.err != nil || string(a.value) != `"prod"` {
		t.Fatalf("the tool got %s, %v", a.value, a.err)
	}
}

// Every ask type's answer reaches the tool in the shape the type promises; the permission
// duration comes through AskPermission.
func TestAskTypes(t *testing.T) {
	f := newFixture(t, Options{})
	sub := f.attach()
	ctx := context.Background()
	two := 2
	cases := []struct {
		q           tool.Ask
		answer, got string
	}{
		{tool.Ask{Type: tool.AskText, Question: "Branch?", DefaultValue: json.RawMessage(`"main"`)}, `""`, `"main"`},
		{tool.Ask{Type: tool.AskText, Question: "Branch?"}, `"feature/x"`, `"feature/x"`},
		{tool.Ask{Type: tool.AskConfirm, Question: "Sure?"}, `false`, `false`},
		{tool.Ask{Type: tool.AskMultiSelect, Question: "Which?", Max: &two, Options: []tool.Option{
			{Label: "A", Value: json.RawMessage(`"a"`)}, {Label: "B", Value: json.RawMessage(`"b"`)}, {Label: "C"}}}, `["C", "a"]`, `["C","a"]`},
		{tool.Ask{Type: tool.AskForm, Question: "Deploy", Questions: []tool.Ask{
			{Type: tool.AskConfirm, Question: "Migrate?"}, {Type: tool.AskText, Question: "Tag?"}}},
			`{"type":"form","answers":[{"question":"Tag?","answer":"v2"},{"question":"Migrate?","answer":true}]}`,
			`{"type":"form","answers":[{"question":"Migrate?","answer":true},{"question":"Tag?","answer":"v2"}]}`},
		{tool.Ask{Type: tool.AskClientCapability, Target: "client", Capability: "clipboard"}, `{"text":"hi"}`, `{"text":"hi"}`},
		{permissionAsk("low"), `true`, `true`},
		{permissionAsk("low"), `{"granted":false}`, `false`},
	}
	for _, c := range cases {
		got := f.askAsync(ctx, c.q)
		p := pendingOf(t, sub)
		if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(c.answer)); err != nil {
			t.Fatalf("%s: %v", c.q.Type, err)
		}
		if a := wait(t, got); a.err != nil || string(a.value) != c.got {
			t.Fatalf("%s answered %s: the tool got %s, %v; want %s", c.q.Type, c.answer, a.value, a.err, c.got)
		}
	}

	perms := []struct {
		answer string
		want   ask.Decision
	}{
		{`true`, ask.Decision{Granted: true, Duration: tool.DurationOnce}},
		{`false`, ask.Decision{}},
		{`{"granted":true,"duration":"workspace"}`, ask.Decision{Granted: true, Duration: tool.DurationWorkspace}},
		{`{"granted":true,"duration":"session"}`, ask.Decision{Granted: true, Duration: tool.DurationSession}},
		{`{"granted":true}`, ask.Decision{Granted: true, Duration: tool.DurationOnce}},
		{`{"granted":false,"duration":"workspace"}`, ask.Decision{}},
	}
	for _, c := range perms {
		got := f.askPermissionAsync(ctx, permissionAsk("high"))
		p := pendingOf(t, sub)
		for _, bad := range []string{`{"granted":true,"duration":"forever"}`, `"yes"`, `{"duration":"once"}`} {
			if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(bad)); !errors.Is(err, ask.ErrInvalidAnswer) {
				t.Fatalf("permission answered %s: %v", bad, err)
			}
		}
		if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(c.answer)); err != nil {
			t.Fatal(err)
		}
		if a := wait(t, got); a.err != nil || a.decision != c.want {
			t.Fatalf("permission answered %s: %+v, %v; want %+v", c.answer, a.decision, a.err, c.want)
		}
	}
	if _, err := f.hub.Asker(f.sid).(ask.PermissionAsker).AskPermission(ctx, selectAsk()); err == nil {
		t.Fatal("AskPermission took a select ask")
	}
}

// An ask nobody answers ends after the ask timeout with an error the tool can show, and a
// published timeout; an answer after that finds nothing.
func TestAskTimeout(t *testing.T) {
	f := newFixture(t, Options{AskTimeout: 50 * time.Millisecond})
	sub := f.attach()
	ctx := context.Background()
	got := f.askAsync(ctx, selectAsk())
	p := pendingOf(t, sub)
	if d := p.ExpiresAt.Sub(p.CreatedAt); d != 50*time.Millisecond {
		t.Fatalf("expires after %s", d)
	}
	a := wait(t, got)
	if !errors.Is(a.err, ErrAskTimeout) || !strings.Contains(a.err.Error(), "no answer came within the ask timeout") ||
		!strings.Contains(a.err.Error(), "Which environment?") {
		t.Fatalf("the tool got %s, %v", a.value, a.err)
	}
	r := resolvedOf(t, sub)
	if r.AskID != p.ID || r.Outcome != OutcomeTimeout || r.Answer != nil || r.Error == "" {
		t.Fatalf("resolved %+v", r)
	}
	if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(`"prod"`)); !errors.Is(err, ErrNoSuchAsk) {
		t.Fatalf("answer after the timeout: %v", err)
	}

	// A changed timeout applies to the next ask.
	f.hub.SetAskTimeout(time.Hour)
	got = f.askAsync(ctx, selectAsk())
	p = pendingOf(t, sub)
	if d := p.ExpiresAt.Sub(p.CreatedAt); d != time.Hour {
		t.Fatalf("after SetAskTimeout(1h) the ask expires after %s", d)
	}
	f.hub.SetAskTimeout(0)
	if d := time.Duration(f.hub.askTimeout.Load()); d != DefaultAskTimeout {
		t.Fatalf("SetAskTimeout(0) set %s", d)
	}
	if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(`"prod"`)); err != nil {
		t.Fatal(err)
	}
	if a := wait(t, got); a.err != nil {
		t.Fatal(a.err)
	}
}

// Cancelling the call's context (the turn's Stop) ends the ask: the tool gets the context's
// error and the cancellation is published.
func TestAskCancelled(t *testing.T) {
	f := newFixture(t, Options{})
	sub := f.attach()
	ctx, cancel := context.WithCancel(context.Background())
	got := f.askPermissionAsync(ctx, permissionAsk("medium"))
	p := pendingOf(t, sub)
	cancel()
	if a := wait(t, got); !errors.Is(a.err, context.Canceled) || a.decision.Granted {
		t.Fatalf("the tool got %+v, %v", a.decision, a.err)
	}
	if r := resolvedOf(t, sub); r.AskID != p.ID || r.Outcome != OutcomeCancelled {
		t.Fatalf("resolved %+v", r)
	}
	if len(f.hub.Pending(f.sid)) != 0 {
		t.Fatal("a cancelled ask is still pending")
	}
}

// With nobody attached the session's policy decides, and the decision is published with the
// ask it decided: by default permissions are denied and questions refused.
func TestPolicyDecidesWhenNobodyIsAttached(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})

	a := wait(t, f.askPermissionAsync(ctx, permissionAsk("low")))
	if a.err != nil || a.decision.Granted {
		t.Fatalf("default policy on a permission: %+v, %v", a.decision, a.err)
	}
	a = wait(t, f.askAsync(ctx, permissionAsk("low")))
	if a.err != nil || string(a.value) != "false" {
		t.Fatalf("default policy on a permission through Ask: %s, %v", a.value, a.err)
	}
	a = wait(t, f.askAsync(ctx, selectAsk()))
	if !errors.Is(a.err, tool.ErrNoOneToAsk) {
		t.Fatalf("default policy on a question: %v", a.err)
	}
	if len(f.hub.Pending(f.sid)) != 0 {
		t.Fatal("a policy decision left an ask pending")
	}

	sub, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rs []AskResolvedPayload
	for range 3 {
		rs = append(rs, resolvedOf(t, sub))
	}
	sub.Close()
	if r := rs[0]; r.Outcome != OutcomePolicy || r.AskID == "" || r.CallID != "call_1" || r.Tool != "deploy" || r.Ask == nil ||
		r.Ask.Question != "Run the migration?" || string(r.Answer) != `{"granted":false}` {
		t.Fatalf("policy permission resolved %+v", r)
	}
	if r := rs[2]; r.Outcome != OutcomePolicy || r.Answer != nil || !strings.Contains(r.Error, "no person or client is attached") {
		t.Fatalf("policy question resolved %+v", r)
	}

	// A configured policy grants up to its risk level; an unattended asker answering questions
	// has its answers checked like a person's.
	medium, err := ask.NewPolicy("medium")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var decidedFor []string
	g := newFixture(t, Options{Unattended: func(sid string) tool.Asker {
		mu.Lock()
		decidedFor = append(decidedFor, sid)
		mu.Unlock()
		return medium
	}})
	a = wait(t, g.askPermissionAsync(ctx, permissionAsk("low")))
	if a.err != nil || a.decision != (ask.Decision{Granted: true, Duration: tool.DurationOnce}) {
		t.Fatalf("medium policy on a low risk: %+v, %v", a.decision, a.err)
	}
	a = wait(t, g.askPermissionAsync(ctx, permissionAsk("critical")))
	if a.err != nil || a.decision.Granted {
		t.Fatalf("medium policy on a critical risk: %+v, %v", a.decision, a.err)
	}
	mu.Lock()
	if len(decidedFor) != 2 || decidedFor[0] != g.sid || decidedFor[1] != g.sid {
		t.Fatalf("Unattended was asked for sessions %v, want %s twice", decidedFor, g.sid)
	}
	mu.Unlock()

	wrong := newFixture(t, Options{Unattended: func(string) tool.Asker {
		return tool.AskerFunc(func(context.Context, tool.Ask) (json.RawMessage, error) { return json.RawMessage(`"qa"`), nil })
	}})
	a = wait(t, wrong.askAsync(ctx, selectAsk()))
	if !errors.Is(a.err, ask.ErrInvalidAnswer) {
		t.Fatalf("a policy's wrong answer: %s, %v", a.value, a.err)
	}
}

// A pending ask belongs to the session, not to a client: all clients leaving does not end it,
// and a client that comes back (a page reload) finds it and answers it.
func TestAskSurvivesDetachAndReattach(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	first, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := f.askAsync(ctx, selectAsk())
	p := pendingOf(t, first)
	first.Close()
	if f.hub.Attached(f.sid) != 0 {
		t.Fatal("still attached")
	}
	if list := f.hub.Pending(f.sid); len(list) != 1 || list[0].ID != p.ID {
		t.Fatalf("after every client left, Pending = %+v", list)
	}
	select {
	case a := <-got:
		t.Fatalf("the ask ended when the client left: %+v", a)
	default:
	}

	again := f.attach() // a reload: the replay shows the pending ask again
	if again := pendingOf(t, again); again.ID != p.ID {
		t.Fatalf("the replay shows ask %s, want %s", again.ID, p.ID)
	}
	if err := f.hub.Answer(ctx, f.sid, p.ID, json.RawMessage(`"prod"`)); err != nil {
		t.Fatal(err)
	}
	if a := wait(t, got); a.err != nil || string(a.value) != `"prod"` {
		t.Fatalf("the tool got %s, %v", a.value, a.err)
	}
}

// Asks a session may hold at once are limited; malformed asks, unknown sessions and calls
// without a session are refused with errors that say so.
func TestAskLimitsAndValidation(t *testing.T) {
	f := newFixture(t, Options{MaxPendingAsks: 2})
	sub := f.attach()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := []<-chan answer{f.askAsync(ctx, selectAsk()), f.askAsync(ctx, selectAsk())}
	pendingOf(t, sub)
	pendingOf(t, sub)
	a := wait(t, f.askAsync(ctx, selectAsk()))
	if !errors.Is(a.err, ErrTooManyAsks) || !strings.Contains(a.err.Error(), "already has 2 asks waiting") {
		t.Fatalf("third ask: %v", a.err)
	}
	cancel()
	for _, w := range waiting {
		if a := wait(t, w); !errors.Is(a.err, context.Canceled) {
			t.Fatalf("cancelled ask: %v", a.err)
		}
	}

	bg := context.Background()
	a = wait(t, f.askAsync(bg, tool.Ask{Type: tool.AskSingleSelect, Question: "Which?"}))
	if !errors.Is(a.err, ask.ErrInvalidAsk) || !strings.Contains(a.err.Error(), "has no options") || !strings.Contains(a.err.Error(), "deploy") {
		t.Fatalf("an ask without options: %v", a.err)
	}
	if _, err := f.hub.Asker("ses_missing").Ask(bg, selectAsk()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an ask of an unknown session: %v", err)
	}
	if _, err := f.hub.Asker("").Ask(bg, selectAsk()); err == nil || !strings.Contains(err.Error(), "no session") {
		t.Fatalf("an ask of no session: %v", err)
	}
	if n := len(f.hub.Pending(f.sid)); n != 0 {
		t.Fatalf("%d asks left pending", n)
	}
}

// Closing the hub cancels pending asks: the tools get ErrClosed and the cancellation is in
// the log for the next server to show.
func TestHubCloseCancelsAsks(t *testing.T) {
	f := newFixture(t, Options{})
	sub := f.attach()
	ctx := context.Background()
	got := f.askAsync(ctx, selectAsk())
	p := pendingOf(t, sub)
	f.hub.Close()
	if a := wait(t, got); !errors.Is(a.err, ErrClosed) {
		t.Fatalf("the tool got %v", a.err)
	}
	evs, err := f.db.EventsAfter(ctx, f.sid, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	var r AskResolvedPayload
	if err := json.Unmarshal(last.Payload, &r); err != nil || last.Type != EventAskResolved || r.AskID != p.ID || r.Outcome != OutcomeCancelled {
		t.Fatalf("last event %s %s", last.Type, last.Payload)
	}
	if a := wait(t, f.askPermissionAsync(ctx, permissionAsk("low"))); !errors.Is(a.err, ErrClosed) {
		t.Fatalf("an ask after Close: %+v, %v", a.decision, a.err)
	}
}

// An ask is neither listed nor answerable until ask.pending is in the log, so no answer and
// no ask.resolved can come before the announcement.
func TestAskHiddenUntilAnnounced(t *testing.T) {
	f := newFixture(t, Options{})
	p, err := f.hub.addAsk(f.sid, deployCall, selectAsk())
	if err != nil {
		t.Fatal(err)
	}
	if list := f.hub.Pending(f.sid); len(list) != 0 {
		t.Fatalf("an unannounced ask is listed: %+v", list)
	}
	if err := f.hub.Answer(context.Background(), f.sid, p.ID, json.RawMessage(`"prod"`)); !errors.Is(err, ErrNoSuchAsk) {
		t.Fatalf("an unannounced ask was answerable: %v", err)
	}
	if !f.hub.resolve(context.Background(), p, OutcomeCancelled, nil, context.Canceled) {
		t.Fatal("the ask could not be resolved")
	}
	if r := <-p.result; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("result %+v", r)
	}
}
