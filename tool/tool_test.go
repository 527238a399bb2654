package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
)

func echoTool(t *testing.T) tool.Tool {
	t.Helper()
	return tool.Func{
		Def: tool.Definition{
			Name: "echo", Description: "Echo the text back.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"],"additionalProperties":false}`),
		},
		Run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
			var in struct{ Text string }
			_ = json.Unmarshal(args, &in)
			c.Ledger.Record(tool.Change{Path: "/w/" + in.Text, Tool: "echo", Disk: true, OK: true})
			return tool.Success(map[string]string{"text": in.Text, "call": c.CallID})
		},
	}
}

func TestRegistryExecuteNeverPanics(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Register(echoTool(t)); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(echoTool(t)); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("duplicate name: got %v", err)
	}
	boom := tool.Func{Def: tool.Definition{Name: "boom", Description: "Panics.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: func(context.Context, *tool.Context, json.RawMessage) tool.Result { panic("kaboom") }}
	if err := r.Register(boom); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	cases := []struct {
		name, tool, args, want string
	}{
		{"unknown tool names the available ones", "nope", `{}`, `unknown tool "nope": available tools are boom, echo`},
		{"args not JSON", "echo", `{"text":`, "arguments are not valid JSON"},
		{"missing required", "echo", `{}`, "invalid arguments for echo: at (root): missing property 'text'"},
		{"wrong type", "echo", `{"text":3}`, "at /text: got number, want string"},
		{"extra property", "echo", `{"text":"a","x":1}`, "additional properties 'x' not allowed"},
		{"panic contained", "boom", `{}`, "tool boom panicked: kaboom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Execute(ctx, tc.tool, json.RawMessage(tc.args), nil)
			if res.Success || !strings.Contains(res.Error, tc.want) {
				t.Fatalf("got %+v, want error containing %q", res, tc.want)
			}
		})
	}

	// A nil context gets the detached default: empty call id, a fresh ledger nobody sees.
	res := r.Execute(ctx, "echo", json.RawMessage(`{"text":"hi"}`), nil)
	if !res.Success || string(res.Result) != `{"call":"","text":"hi"}` {
		t.Fatalf("detached call: %+v", res)
	}
	// With a host context the change lands on the host's ledger.
	led := tool.NewLedger()
	res = r.Execute(ctx, "echo", json.RawMessage(`{"text":"a.txt"}`), tool.NewContext(tool.Context{CallID: "c1", Ledger: led}))
	if !res.Success || !strings.Contains(string(res.Result), `"call":"c1"`) {
		t.Fatalf("hosted call: %+v", res)
	}
	if s := led.Summary(); s.Changed != 1 || s.Paths[0] != "/w/a.txt" {
		t.Fatalf("ledger summary: %+v", s)
	}

	// A cancelled call is not run.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if res := r.Execute(cctx, "echo", json.RawMessage(`{"text":"x"}`), nil); res.Success || !strings.Contains(res.Error, "was not run") {
		t.Fatalf("cancelled: %+v", res)
	}
}

func TestListForLLM(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Register(echoTool(t)); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(r.ListForLLM())
	want := `[{"type":"function","function":{"name":"echo","description":"Echo the text back.","parameters":{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"],"additionalProperties":false}}}]`
	if string(raw) != want {
		t.Fatalf("got %s", raw)
	}
}

func TestDefinitionCheck(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	cases := []struct {
		def  tool.Definition
		want string
	}{
		{tool.Definition{Description: "d", InputSchema: obj}, "definition.name is empty"},
		{tool.Definition{Name: "bad name", Description: "d", InputSchema: obj}, "not a valid tool name"},
		{tool.Definition{Name: "a", InputSchema: obj}, "definition.description is empty"},
		{tool.Definition{Name: "a", Description: "d"}, "definition.inputSchema is missing"},
		{tool.Definition{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"array"}`)}, "use \"object\""},
		{tool.Definition{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"nonsense"}}}`)}, "definition.inputSchema"},
		{tool.Definition{Name: "a", Description: "d", InputSchema: obj, Env: []string{"OK_1", "no-dash"}}, `"no-dash" is not an environment variable name`},
		{tool.Definition{Name: "a", Description: "d", InputSchema: obj, Timeout: -1}, "definition.timeout"},
	}
	for _, tc := range cases {
		err := tc.def.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.def, err, tc.want)
		}
	}
	good := tool.Definition{Name: "word-count", Description: "d", InputSchema: obj}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	if good.TimeoutDuration() != 30*time.Second {
		t.Fatalf("default timeout %v", good.TimeoutDuration())
	}
}

func TestLinkCallSignal(t *testing.T) {
	turn, stop := context.WithCancelCause(context.Background())
	defer stop(nil)

	settled, link1 := tool.LinkCallSignal(turn)
	link1.Release() // the call settled
	running, link2 := tool.LinkCallSignal(turn)
	defer link2.Release()

	stop(errors.New("Stop pressed"))
	select {
	case <-running.Done():
	case <-time.After(time.Second):
		t.Fatal("Stop did not reach the running call")
	}
	if got := context.Cause(running); got == nil || got.Error() != "Stop pressed" {
		t.Fatalf("cause %v", got)
	}
	if got := context.Cause(settled); got == nil || got.Error() == "Stop pressed" {
		t.Fatalf("a released call must not see the later Stop; cause %v", got)
	}
}

func TestEnvRequire(t *testing.T) {
	e := tool.NewEnv(map[string]string{"A": "1"})
	if v, err := e.Require("A"); err != nil || v != "1" {
		t.Fatal(v, err)
	}
	if _, err := e.Require("MISSING"); err == nil || err.Error() != "Required environment variable not set: MISSING" {
		t.Fatalf("got %v", err)
	}
	if _, ok := e.Get("MISSING"); ok {
		t.Fatal("Get of unset key")
	}
}

func TestResultNormalize(t *testing.T) {
	jx := tool.Result{Success: true, Data: json.RawMessage(`{"n":1}`), Summary: "Renamed."}.Normalize()
	if string(jx.Result) != `{"n":1}` || jx.Data != nil || jx.Summary != "Renamed." {
		t.Fatalf("jx: %+v", jx)
	}
	failed := tool.Result{}.Normalize()
	if failed.Error == "" {
		t.Fatal("a failed result needs an error text")
	}
	withViz := tool.Result{Success: true, Result: json.RawMessage(`1`), Visualization: json.RawMessage(`{"type":"none"}`)}
	if got := string(withViz.ModelJSON()); got != `{"success":true,"result":1}` {
		t.Fatalf("the model must not see the visualization: %s", got)
	}
}

func TestCreateFilePermissionAsk(t *testing.T) {
	a := tool.CreateFilePermissionAsk(tool.FilePermission{Path: "/home/u/.env", Operation: "read", Risk: "medium", IsSensitiveFile: true, IsOutsideWorkspace: true, Reason: "To load settings."})
	if a.Question != `Reading file ".env" (sensitive file) requires approval. To load settings.` {
		t.Fatalf("question %q", a.Question)
	}
	if a.Duration != tool.DurationSession || a.Resource != "file" || strings.Join(a.Patterns, ",") != "file:/home/u/.env,file:.env,outside-workspace,sensitive-file" {
		t.Fatalf("%+v", a)
	}
	b := tool.CreateFilePermissionAsk(tool.FilePermission{Path: "/x/a.txt", Operation: "write", Risk: "low", IsOutsideWorkspace: true})
	if b.Question != `Writing file "a.txt" (outside workspace) requires approval.` || b.Duration != tool.DurationWorkspace {
		t.Fatalf("%+v", b)
	}
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestAskCheck(t *testing.T) {
	bad := []tool.Ask{
		{},
		{Type: "weird", Question: "q"},
		{Type: tool.AskPermission},
		{Type: tool.AskPermission, Question: "q", Risk: "extreme"},
		{Type: tool.AskSingleSelect, Question: "q"},
		{Type: tool.AskForm, Question: "q", Questions: []tool.Ask{{Type: tool.AskPermission, Question: "p"}}},
		{Type: tool.AskText, Question: "q", Key: "user name"},
		{Type: tool.AskText, Question: "q", Name: strings.Repeat("n", 65)},
		{Type: tool.AskForm, Question: "q", Questions: []tool.Ask{{Type: tool.AskText, Question: "a", Name: "n"}, {Type: tool.AskText, Question: "b", Name: "n"}}},
		{Type: tool.AskForm, Question: "q", Questions: []tool.Ask{{Type: tool.AskText, Question: "a", Key: "k"}}},
	}
	for _, a := range bad {
		if err := a.Check(); err == nil {
			t.Errorf("%+v passed", a)
		}
	}
	good := []tool.Ask{
		{Type: tool.AskText, Question: "q", Key: "user_name", Name: "name"},
		{Type: tool.AskForm, Question: "q", Key: "k", Questions: []tool.Ask{{Type: tool.AskText, Question: "a", Name: "a"}, {Type: tool.AskText, Question: "b"}, {Type: tool.AskText, Question: "c"}}},
		{Type: tool.AskClientCapability, Capability: "roots", Key: "client_roots"},
	}
	for _, a := range good {
		if err := a.Check(); err != nil {
			t.Errorf("%+v: %v", a, err)
		}
	}
}

type typedIn struct {
	Path  string `json:"path" jsonschema:"the file to count"`
	Limit int    `json:"limit,omitempty"`
}
type typedOut struct {
	Words int `json:"words"`
}

func TestTypedTool(t *testing.T) {
	tt, err := tool.NewTyped(tool.Definition{Name: "typed", Description: "Typed."},
		func(ctx context.Context, c *tool.Context, in typedIn) (typedOut, error) {
			if in.Path == "fail" {
				return typedOut{}, errors.New("cannot count fail")
			}
			return typedOut{Words: len(in.Path)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	_ = json.Unmarshal(tt.Definition().InputSchema, &schema)
	if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "path" {
		t.Fatalf("inferred schema %s", tt.Definition().InputSchema)
	}
	r := tool.NewRegistry()
	if err := r.Register(tt); err != nil {
		t.Fatal(err)
	}
	if res := r.Execute(context.Background(), "typed", json.RawMessage(`{"path":"abcd"}`), nil); string(res.Result) != `{"words":4}` {
		t.Fatalf("%+v", res)
	}
	if res := r.Execute(context.Background(), "typed", json.RawMessage(`{"limit":2}`), nil); res.Success || !strings.Contains(res.Error, "missing property 'path'") {
		t.Fatalf("%+v", res)
	}
	if res := r.Execute(context.Background(), "typed", json.RawMessage(`{"path":"fail"}`), nil); res.Error != "cannot count fail" {
		t.Fatalf("%+v", res)
	}
}

func TestDetectLanguage(t *testing.T) {
	for in, want := range map[string]string{"file.ts": "typescript", "a/B.GO": "go", "Dockerfile": "dockerfile", "x.unknown": "text", "noext": "text"} {
		if got := tool.DetectLanguage(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestSessionFacts(t *testing.T) {
	s := tool.NewSessionFacts()
	if err := s.Set("k", json.RawMessage(`{bad`)); err == nil {
		t.Fatal("invalid JSON stored")
	}
	if err := s.Set("k", json.RawMessage(`[1,2]`)); err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Get("k"); !ok || string(v) != `[1,2]` {
		t.Fatal(string(v))
	}
}

func TestValidateKeepsLargeNumbersExact(t *testing.T) {
	s, err := tool.CompileSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// 9007199254740993 and …994 are the same float64; only an exact decoder tells them apart.
	if err := s.Validate(json.RawMessage(`{"n":9007199254740993}`)); err != nil {
		t.Fatalf("at the maximum: %v", err)
	}
	if err := s.Validate(json.RawMessage(`{"n":9007199254740994}`)); err == nil {
		t.Fatal("above the maximum passed")
	}
	if err := s.Validate(json.RawMessage(`{"n":1.5}`)); err == nil || !strings.Contains(err.Error(), "want integer") {
		t.Fatalf("1.5 as integer: %v", err)
	}
}

// Kept session facts pass every Set to the keeper first; a refused Set changes nothing.
func TestKeptSessionFacts(t *testing.T) {
	var kept []string
	refuse := false
	f := tool.NewKeptSessionFacts(map[string]json.RawMessage{"a": json.RawMessage(`1`)}, func(key string, value json.RawMessage) error {
		if refuse {
			return errors.New("disk full")
		}
		kept = append(kept, key+"="+string(value))
		return nil
	})
	if v, ok := f.Get("a"); !ok || string(v) != "1" {
		t.Fatalf("initial fact: %s %v", v, ok)
	}
	if err := f.Set("b", json.RawMessage(`2`)); err != nil || len(kept) != 1 || kept[0] != "b=2" {
		t.Fatalf("set: %v %v", err, kept)
	}
	refuse = true
	if err := f.Set("b", json.RawMessage(`3`)); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("refused set: %v", err)
	}
	if v, _ := f.Get("b"); string(v) != "2" {
		t.Fatalf("a refused set changed the fact: %s", v)
	}
}

// ModelJSON trusts what Success marshalled and checks anything else, a Result replaced
// after Success included.
func TestModelJSONChecksReplacedResults(t *testing.T) {
	r := tool.Success(map[string]int{"n": 1})
	if got := string(r.ModelJSON()); got != `{"success":true,"result":{"n":1}}` {
		t.Fatalf("marshalled: %s", got)
	}
	r.Result = json.RawMessage(`{"n":`)
	if got := string(r.ModelJSON()); !strings.Contains(got, "not valid JSON") {
		t.Fatalf("replaced by invalid JSON: %s", got)
	}
	short := tool.Success("abcdef")
	short.Result = short.Result[:3] // same first byte, another length
	if got := string(short.ModelJSON()); !strings.Contains(got, "not valid JSON") {
		t.Fatalf("cut short: %s", got)
	}
}
