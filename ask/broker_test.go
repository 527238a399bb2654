package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jean2/jean2/tool"
)

// newBroker builds a broker for c as the host would.
func newBroker(asker tool.Asker, grants *Grants, c Call) *Broker {
	return NewBroker(BrokerOptions{
		Asker: asker, Grants: grants, Tool: c.Tool, ToolVersion: c.ToolVersion, CallID: c.CallID,
		SessionID: c.SessionID, WorkspaceID: c.WorkspaceID, Workspace: c.Workspace, Home: c.Home,
	})
}

// fakeAsker answers with its func fields and counts what it was asked.
type fakeAsker struct {
	ask   func(tool.Ask) (json.RawMessage, error)
	calls atomic.Int32
	mu    sync.Mutex
	seen  []Call
}

func (f *fakeAsker) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	f.calls.Add(1)
	if c, ok := CallFrom(ctx); ok {
		f.mu.Lock()
		f.seen = append(f.seen, c)
		f.mu.Unlock()
	}
	return f.ask(a)
}

// fakePermissionAsker also says how long a permission lasts.
type fakePermissionAsker struct {
	fakeAsker
	decide func(tool.Ask) (Decision, error)
}

func (f *fakePermissionAsker) AskPermission(_ context.Context, a tool.Ask) (Decision, error) {
	f.calls.Add(1)
	return f.decide(a)
}

func TestBrokerCoveredPermissionIsNotAskedAgain(t *testing.T) {
	grants := newGrants(t)
	asker := &fakePermissionAsker{decide: func(tool.Ask) (Decision, error) {
		return Decision{Granted: true, Duration: tool.DurationSession}, nil
	}}
	a := fileAsk("/data/report.txt", "read", "medium")
	c1 := baseCall()
	b1 := newBroker(asker, grants, c1)
	for range 2 {
		v, err := b1.Ask(context.Background(), a)
		if err != nil || string(v) != "true" {
			t.Fatalf("Ask = %s, %v", v, err)
		}
	}
	if n := asker.calls.Load(); n != 1 {
		t.Fatalf("asked %d times in one call, want 1", n)
	}
	if !b1.Covers("/data/report.txt", false) || b1.Covers("/data/report.txt", true) || b1.Covers("/data/other.txt", false) {
		t.Fatal("Covers does not follow the read grant")
	}
	b1.Close()

	c2 := c1
	c2.CallID = "call-2"
	b2 := newBroker(asker, grants, c2)
	if v, err := b2.Ask(context.Background(), a); err != nil || string(v) != "true" || asker.calls.Load() != 1 {
		t.Fatalf("later call of the session: %s, %v, asked %d times", v, err, asker.calls.Load())
	}
	// Writing was never granted: that is a new question.
	if _, err := b2.Ask(context.Background(), fileAsk("/data/report.txt", "write", "medium")); err != nil || asker.calls.Load() != 2 {
		t.Fatalf("write ask: %v, asked %d times", err, asker.calls.Load())
	}

	c3 := c1
	c3.CallID, c3.SessionID = "call-3", "s2"
	if _, err := newBroker(asker, grants, c3).Ask(context.Background(), a); err != nil || asker.calls.Load() != 3 {
		t.Fatalf("another session must be asked: %v, asked %d times", err, asker.calls.Load())
	}
}

func TestBrokerBooleanAskerGrantsOnce(t *testing.T) {
	grants := newGrants(t)
	asker := &fakeAsker{ask: func(tool.Ask) (json.RawMessage, error) { return json.RawMessage("true"), nil }}
	a := fileAsk("/data/x", "read", "low")
	b := newBroker(asker, grants, baseCall())
	b.Ask(context.Background(), a)
	b.Ask(context.Background(), a)
	if asker.calls.Load() != 1 {
		t.Fatalf("asked %d times within the call", asker.calls.Load())
	}
	list := grants.List()
	if len(list) != 1 || list[0].Duration != tool.DurationOnce {
		t.Fatalf("grants = %+v; a yes without a duration lasts for the call", list)
	}
	b.Close()
	c2 := baseCall()
	c2.CallID = "call-2"
	newBroker(asker, grants, c2).Ask(context.Background(), a)
	if asker.calls.Load() != 2 {
		t.Fatal("a once grant covered a later call")
	}
	if len(asker.seen) == 0 || asker.seen[0].Tool != "reader" {
		t.Fatalf("the asker was not told which call asks: %+v", asker.seen)
	}
}

func TestBrokerDenialIsNotRemembered(t *testing.T) {
	grants := newGrants(t)
	asker := &fakePermissionAsker{decide: func(tool.Ask) (Decision, error) { return Decision{}, nil }}
	b := newBroker(asker, grants, baseCall())
	for range 2 {
		if v, err := b.Ask(context.Background(), fileAsk("/data/x", "read", "low")); err != nil || string(v) != "false" {
			t.Fatalf("Ask = %s, %v", v, err)
		}
	}
	if asker.calls.Load() != 2 || len(grants.List()) != 0 || b.Covers("/data/x", false) {
		t.Fatalf("denial remembered: asked %d, grants %v", asker.calls.Load(), grants.List())
	}
}

func TestBrokerRejectsInvalidAsk(t *testing.T) {
	asker := &fakeAsker{ask: func(tool.Ask) (json.RawMessage, error) { return json.RawMessage(`"x"`), nil }}
	b := newBroker(asker, nil, baseCall())
	for _, c := range []struct {
		a    tool.Ask
		want string
	}{
		{tool.Ask{}, "ask has no type"},
		{tool.Ask{Type: "poll", Question: "?"}, `"poll" is unknown`},
		{tool.Ask{Type: tool.AskPermission, Question: "Go?", Risk: "extreme"}, `risk "extreme"`},
		{tool.Ask{Type: tool.AskPermission, Question: "Go?", Duration: "forever"}, `duration "forever"`},
		{tool.Ask{Type: tool.AskSingleSelect, Question: "Pick?"}, "has no options"},
		{tool.Ask{Type: tool.AskMultiSelect, Question: "Pick?", Min: intp(3), Options: []tool.Option{{Label: "a"}}}, "min 3 is more than its 1 options"},
		{tool.Ask{Type: tool.AskMultiSelect, Question: "Pick?", Min: intp(2), Max: intp(1), Options: []tool.Option{{Label: "a"}, {Label: "b"}}}, "min 2 is more than max 1"},
		{tool.Ask{Type: tool.AskConfirm, Question: "Ok?", DefaultValue: json.RawMessage(`"yes"`)}, "defaultValue"},
		{tool.Ask{Type: tool.AskSingleSelect, Question: "Pick?", Options: []tool.Option{{Label: "a", Value: json.RawMessage(`{bad`)}}}, "not JSON"},
		{tool.Ask{Type: tool.AskForm, Question: "F", Questions: []tool.Ask{{Type: tool.AskPermission, Question: "p"}}}, "a form holds"},
		{tool.Ask{Type: tool.AskClientCapability}, "needs a capability"},
	} {
		_, err := b.Ask(context.Background(), c.a)
		if !errors.Is(err, ErrInvalidAsk) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error = %v, want ErrInvalidAsk with %q", c.a, err, c.want)
		}
	}
	if asker.calls.Load() != 0 {
		t.Fatal("an invalid ask reached the asker")
	}
}

func TestBrokerValidatesAnswers(t *testing.T) {
	for _, c := range []struct {
		name   string
		a      tool.Ask
		answer string
		want   string // "" when the answer must be refused
	}{
		{"select ok", askEnv, `"prod"`, `"prod"`},
		{"select not an option", askEnv, `"dev"`, ""},
		{"select label-valued option", askChecks, `"vet"`, ""}, // a multi_select needs an array
		{"multi ok", askChecks, `["vet", "lint"]`, `["vet","lint"]`},
		{"multi too many", askChecks, `["vet","lint","test"]`, ""},
		{"text ok", askBranch, `"dev"`, `"dev"`},
		{"text empty takes default", askBranch, `""`, `"main"`},
		{"text number", askBranch, `3`, ""},
		{"confirm ok", askDelete, `true`, `true`},
		{"confirm string", askDelete, `"true"`, ""},
		{"form ok", askDeploy, `{"type":"form","answers":[{"question":"Environment?","answer":"x"},{"question":"Run migrations?","answer":true}]}`, `{"type":"form","answers":[{"question":"Environment?","answer":"x"},{"question":"Run migrations?","answer":true}]}`},
		{"form array", askDeploy, `["x", true]`, ""},
		{"form wrong inner", askDeploy, `{"type":"form","answers":[{"question":"Environment?","answer":"x"},{"question":"Run migrations?","answer":"y"}]}`, ""},
		{"capability anything", askCapable, `{"any": [1, 2]}`, `{"any":[1,2]}`},
		{"capability null", askCapable, `null`, `null`},
		{"not JSON", askBranch, `{oops`, ""},
		{"nothing", askBranch, ``, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			asker := &fakeAsker{ask: func(tool.Ask) (json.RawMessage, error) { return json.RawMessage(c.answer), nil }}
			v, err := newBroker(asker, nil, baseCall()).Ask(context.Background(), c.a)
			if c.want == "" {
				if !errors.Is(err, ErrInvalidAnswer) || !strings.Contains(err.Error(), "expected") {
					t.Fatalf("answer %s accepted: %s, %v", c.answer, v, err)
				}
				return
			}
			if err != nil || string(v) != c.want {
				t.Fatalf("= %s, %v; want %s", v, err, c.want)
			}
		})
	}
}

func TestBrokerPermissionAnswerShapes(t *testing.T) {
	for answer, want := range map[string]string{
		`true`: "true", `false`: "false", `{"granted":true,"duration":"workspace"}`: "true", `"yes"`: "", `{"granted":true,"duration":"ever"}`: "",
	} {
		asker := &fakeAsker{ask: func(tool.Ask) (json.RawMessage, error) { return json.RawMessage(answer), nil }}
		grants := newGrants(t)
		v, err := newBroker(asker, grants, baseCall()).Ask(context.Background(), fileAsk("/x", "read", "low"))
		if want == "" {
			if !errors.Is(err, ErrInvalidAnswer) {
				t.Errorf("%s: accepted (%s, %v)", answer, v, err)
			}
			continue
		}
		if err != nil || string(v) != want {
			t.Errorf("%s: = %s, %v", answer, v, err)
		}
		if answer == `{"granted":true,"duration":"workspace"}` && grants.List()[0].Duration != tool.DurationWorkspace {
			t.Errorf("duration of an object answer is lost: %+v", grants.List())
		}
	}
	bad := &fakePermissionAsker{decide: func(tool.Ask) (Decision, error) { return Decision{Granted: true, Duration: "forever"}, nil }}
	if _, err := newBroker(bad, nil, baseCall()).Ask(context.Background(), fileAsk("/x", "read", "low")); !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("bad duration from a PermissionAsker: %v", err)
	}
}

func TestBrokerWordCountExample(t *testing.T) {
	// The guide's word-count tool: a permission without paths, then a read of the file.
	grants := newGrants(t)
	asker := &fakePermissionAsker{decide: func(tool.Ask) (Decision, error) {
		return Decision{Granted: true, Duration: tool.DurationSession}, nil
	}}
	a := tool.Ask{Type: tool.AskPermission, Question: "Read file outside workspace: ../notes.txt?", Risk: "medium", Resource: "file"}
	c1 := baseCall()
	b1 := newBroker(asker, grants, c1)
	if v, _ := b1.Ask(context.Background(), a); string(v) != "true" || !b1.Covers("/work/notes.txt", false) {
		t.Fatal("the granted call cannot read its file")
	}
	b1.Close()
	c2 := c1
	c2.CallID = "call-2"
	b2 := newBroker(asker, grants, c2)
	if b2.Covers("/work/notes.txt", false) {
		t.Fatal("a pathless grant covers files of a call that did not ask")
	}
	if v, _ := b2.Ask(context.Background(), a); string(v) != "true" || asker.calls.Load() != 1 {
		t.Fatalf("same question in the session was asked again (%d)", asker.calls.Load())
	}
	if !b2.Covers("/work/notes.txt", false) {
		t.Fatal("answered from the session grant, yet the call cannot read the file")
	}
	b2.Close()
	for _, g := range grants.List() {
		if g.Duration == tool.DurationOnce {
			t.Fatalf("once grant left after Close: %+v", g)
		}
	}
}

func TestBrokerDetachedCallsStayApart(t *testing.T) {
	grants := newGrants(t)
	asker := &fakeAsker{ask: func(tool.Ask) (json.RawMessage, error) { return json.RawMessage("true"), nil }}
	c := Call{Tool: "t", ToolVersion: "v"}
	b1, b2 := newBroker(asker, grants, c), newBroker(asker, grants, c)
	if b1.Call().CallID == "" || b1.Call().CallID == b2.Call().CallID {
		t.Fatalf("detached call ids %q and %q", b1.Call().CallID, b2.Call().CallID)
	}
	b1.Ask(context.Background(), fileAsk("/x", "read", "low"))
	if b2.Covers("/x", false) {
		t.Fatal("a once grant of one detached call covers another")
	}
}

func TestBrokerRefusesWithoutAsker(t *testing.T) {
	_, err := newBroker(nil, nil, baseCall()).Ask(context.Background(), askEnv)
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, tool.ErrNoOneToAsk) || re.Type != tool.AskSingleSelect ||
		!strings.Contains(err.Error(), `"Which environment?"`) || !strings.Contains(err.Error(), "--answers FILE") {
		t.Fatalf("error = %v", err)
	}
}

func TestBrokerStoreFailureStillGrants(t *testing.T) {
	var logs bytes.Buffer
	st := &fakeStore{load: func() ([]Grant, error) { return nil, nil }, saveErr: errors.New("disk full")}
	grants := NewGrants(&GrantsOptions{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	asker := &fakePermissionAsker{decide: func(tool.Ask) (Decision, error) {
		return Decision{Granted: true, Duration: tool.DurationWorkspace}, nil
	}}
	v, err := newBroker(asker, grants, baseCall()).Ask(context.Background(), fileAsk("/x", "read", "low"))
	if err != nil || string(v) != "true" {
		t.Fatalf("= %s, %v", v, err)
	}
	if !strings.Contains(logs.String(), "disk full") {
		t.Fatalf("store failure not logged: %q", logs.String())
	}
}

func TestBrokerAskerErrorPassesThrough(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	asker := &fakeAsker{ask: func(tool.Ask) (json.RawMessage, error) { return nil, context.Canceled }}
	if _, err := newBroker(asker, nil, baseCall()).Ask(ctx, askBranch); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v", err)
	}
}

func TestPolicy(t *testing.T) {
	ctx := context.Background()
	var deny Policy
	if d, err := deny.AskPermission(ctx, fileAsk("/x", "read", "low")); err != nil || d.Granted {
		t.Fatalf("zero policy = %+v, %v", d, err)
	}
	p, err := NewPolicy("medium")
	if err != nil {
		t.Fatal(err)
	}
	for risk, want := range map[string]bool{"low": true, "medium": true, "high": false, "critical": false, "": false} {
		d, err := p.AskPermission(ctx, tool.Ask{Type: tool.AskPermission, Question: "q", Risk: risk})
		if err != nil || d.Granted != want || (want && d.Duration != tool.DurationOnce) {
			t.Errorf("risk %q: %+v, %v", risk, d, err)
		}
	}
	// A file read the host judges low: inside the call's workspace (see TestAssessRaisesRisk).
	wsCtx := ContextWithCall(ctx, Call{Workspace: "/x"})
	if v, err := p.Ask(wsCtx, fileAsk("/x/a.txt", "read", "low")); err != nil || string(v) != "true" {
		t.Fatalf("Ask = %s, %v", v, err)
	}
	if _, err := p.Ask(ctx, askBranch); !errors.Is(err, tool.ErrNoOneToAsk) || !strings.Contains(err.Error(), `text ask "Branch name?"`) {
		t.Fatalf("non-permission ask error = %v", err)
	}
	if _, err := p.Ask(ctx, askCapable); err == nil || !strings.Contains(err.Error(), `"clipboard.read"`) {
		t.Fatalf("capability ask error = %v", err)
	}
	if _, err := NewPolicy("extreme"); err == nil {
		t.Fatal("unknown risk accepted")
	}
	all, _ := NewPolicy("critical")
	if d, _ := all.AskPermission(ctx, tool.Ask{Type: tool.AskPermission, Question: "q"}); !d.Granted {
		t.Fatal("critical policy denies an ask without stated risk")
	}
}

func TestBrokerWithTerminalOverPTY(t *testing.T) {
	p := newPTYTerminal(t)
	grants := newGrants(t)
	a := fileAsk("/data/report.txt", "read", "medium")
	b := newBroker(p.term, grants, baseCall())
	res := make(chan askResult, 1)
	go func() {
		v, err := b.Ask(context.Background(), a)
		res <- askResult{v: v, err: err}
	}()
	p.screen.waitFor(t, "[tool reader asks]")
	// A medium-risk read outside the workspace suggests the workspace; the default is once.
	p.screen.waitFor(t, "1) allow once   (default)")
	p.screen.waitFor(t, "Choose 1-4 (y/n) [1]: ")
	p.typeLine(t, "2")
	if r := wait(t, res); r.err != nil || string(r.v) != "true" {
		t.Fatalf("= %s, %v", r.v, r.err)
	}
	if l := grants.List(); len(l) != 1 || l[0].Duration != tool.DurationSession {
		t.Fatalf("grants = %+v; the person chose session", l)
	}
	c2 := baseCall()
	c2.CallID = "call-2"
	// Covered now: answered without touching the terminal.
	v, err := newBroker(p.term, grants, c2).Ask(context.Background(), a)
	if err != nil || string(v) != "true" {
		t.Fatalf("covered = %s, %v", v, err)
	}
}
