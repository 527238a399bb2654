package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpserver"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Go SDK client speaks the newest revision (2026-07-28: asks travel as input requests of
// multi-round-trip results) unless told an older one (classic elicitation requests).
const (
	newest  = ""
	classic = "2025-11-25"
)

func boolp(b bool) *bool { return &b }

// source is a tool source whose tools a test can change, to drive reloads.
type source struct {
	mu    sync.Mutex
	tools []tool.Tool
}

func (s *source) Name() string { return "test" }
func (s *source) Kind() string { return "mcp" }
func (s *source) Tools() ([]tool.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, nil
}

type rig struct {
	t       testing.TB
	h       *host.Host
	srv     *mcpserver.Server
	ws      string
	src     *source
	started chan string // the slow tool says it started
	aborted chan error  // the slow tool's ctx error when it was aborted
	opts    mcpserver.Options
	folders map[string]string // tool folders to write before the host starts: name → tool.js
	temp    string            // the host's Layout.Temp
}

func obj(s string) json.RawMessage { return json.RawMessage(s) }

func newRig(t testing.TB, mods ...func(*rig)) *rig {
	t.Helper()
	root := t.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, ws: t.TempDir(), src: &source{}, started: make(chan string, 4), aborted: make(chan error, 4), temp: layout.Temp}
	builtins := []tool.Tool{
		&tool.Func{Def: tool.Definition{
			Name: "greet", Title: "Greeter", Description: "Greet someone.",
			InputSchema:  obj(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			OutputSchema: obj(`{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"]}`),
			Annotations:  &tool.Annotations{ReadOnlyHint: boolp(true), IdempotentHint: boolp(true), OpenWorldHint: boolp(false)},
		}, Run: func(_ context.Context, _ *tool.Context, args json.RawMessage) tool.Result {
			var in struct{ Name string }
			_ = json.Unmarshal(args, &in)
			if in.Name == "nobody" {
				return tool.Errorf("no one to greet")
			}
			if in.Name == "wrong" {
				return tool.Success(map[string]int{"greeting": 3})
			}
			res := tool.Success(map[string]string{"greeting": "hello " + in.Name})
			res.Visualization = obj(`{"type":"markdown","content":"**hello**"}`)
			return res
		}},
		&tool.Func{Def: tool.Definition{
			Name: "count", Description: "Count to n.", InputSchema: obj(`{"properties":{"n":{"type":"integer"}}}`),
			OutputSchema: obj(`{"type":"array"}`),
			Annotations:  &tool.Annotations{DestructiveHint: boolp(true)},
		}, Run: func(_ context.Context, c *tool.Context, args json.RawMessage) tool.Result {
			var in struct{ N int }
			_ = json.Unmarshal(args, &in)
			out := []int{}
			for i := 1; i <= in.N; i++ {
				c.Progress(tool.Progress{Message: fmt.Sprintf("at %d", i), Current: float64(i), Total: float64(in.N)})
				c.Logger.Info("counted", "i", i)
				out = append(out, i)
			}
			return tool.Success(out)
		}},
		&tool.Func{Def: tool.Definition{Name: "asker", Description: "Ask what the input says.", InputSchema: obj(`{"type":"object"}`)},
			Run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
				var asks []tool.Ask
				together := false
				if err := json.Unmarshal(args, &struct {
					Asks     *[]tool.Ask
					Together *bool
				}{&asks, &together}); err != nil {
					return tool.Errorf("%v", err)
				}
				if together {
					return askTogether(ctx, c, asks)
				}
				var answers []json.RawMessage
				for _, a := range asks {
					ans, err := c.Asker.Ask(ctx, a)
					if err != nil {
						return tool.Errorf("ask %q: %v", a.Question, err)
					}
					answers = append(answers, ans)
				}
				return tool.Success(answers)
			}},
		&tool.Func{Def: tool.Definition{Name: "slow", Description: "Wait until aborted.", InputSchema: obj(`{"type":"object"}`)},
			Run: func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
				r.started <- c.CallID
				select {
				case <-ctx.Done():
					r.aborted <- ctx.Err()
					return tool.Errorf("aborted")
				case <-time.After(20 * time.Second):
					return tool.Success("not aborted")
				}
			}},
		&tool.Func{Def: tool.Definition{Name: "think", Description: "Ask the model.", InputSchema: obj(`{"type":"object"}`)},
			Run: func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
				text, err := c.LLM.GenerateText(ctx, tool.TextRequest{Prompt: "2+2?", System: "be brief"})
				if err != nil {
					return tool.Errorf("%v", err)
				}
				return tool.Success(text)
			}},
		&tool.Func{Def: tool.Definition{Name: "big", Description: "A long result.", InputSchema: obj(`{"type":"object"}`)},
			Run: func(context.Context, *tool.Context, json.RawMessage) tool.Result {
				return tool.Success(strings.Repeat("x", 60_000))
			}},
		&tool.Func{Def: tool.Definition{Name: "nap", Description: "Sleep ms milliseconds.", InputSchema: obj(`{"type":"object","properties":{"ms":{"type":"integer"}}}`)},
			Run: func(ctx context.Context, _ *tool.Context, args json.RawMessage) tool.Result {
				var in struct{ Ms int }
				_ = json.Unmarshal(args, &in)
				select {
				case <-ctx.Done():
					return tool.Errorf("aborted")
				case <-time.After(time.Duration(min(in.Ms, 10_000)) * time.Millisecond):
					return tool.Success(fmt.Sprintf("slept %d ms", in.Ms))
				}
			}},
		&tool.Func{Def: tool.Definition{Name: "whoami", Description: "Report the call's facts.", InputSchema: obj(`{"type":"object"}`)},
			Run: func(_ context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
				return tool.Success(map[string]string{"session": c.SessionID, "workspace": c.Workspace, "temp": c.TempDir})
			}},
	}
	r.opts = mcpserver.Options{Workspace: host.Workspace{Path: r.ws}}
	for _, m := range mods {
		m(r)
	}
	for name, src := range r.folders {
		dir := filepath.Join(layout.Tools, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.h, err = host.New(context.Background(), host.Options{
		Layout: layout, Builtins: builtins, Sources: []host.ToolSource{r.src}, ServerEnv: []string{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.srv, err = mcpserver.New(r.h, r.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.h.Close(ctx)
	})
	return r
}

// connect starts a Go SDK client on an in-memory transport, speaking version ("" newest).
func (r *rig) connect(version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	r.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := r.srv.Connect(ctx, st)
	if err != nil {
		r.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Tools are listed with their schemas, title and hints; a non-object output schema is left
// out (MCP clients refuse it).
func TestListTools(t *testing.T) {
	r := newRig(t)
	for _, version := range []string{newest, classic} {
		cs := r.connect(version, nil)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*mcp.Tool{}
		for _, tl := range res.Tools {
			byName[tl.Name] = tl
		}
		if len(byName) != 8 {
			t.Fatalf("%s: tools %v", version, toJSON(res.Tools))
		}
		g := byName["greet"]
		if g.Title != "Greeter" || g.Description != "Greet someone." ||
			toJSON(g.InputSchema) != `{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}` ||
			!strings.Contains(toJSON(g.OutputSchema), `"greeting"`) {
			t.Fatalf("%s: greet %s", version, toJSON(g))
		}
		if a := g.Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint || a.DestructiveHint != nil {
			t.Fatalf("%s: greet annotations %s", version, toJSON(g.Annotations))
		}
		c := byName["count"]
		if c.OutputSchema != nil || toJSON(c.InputSchema) != `{"properties":{"n":{"type":"integer"}},"type":"object"}` ||
			c.Annotations == nil || c.Annotations.DestructiveHint == nil || !*c.Annotations.DestructiveHint {
			t.Fatalf("%s: count %s", version, toJSON(c))
		}
		if byName["asker"].Annotations != nil {
			t.Fatalf("hints invented: %s", toJSON(byName["asker"]))
		}
	}
}

// The text is what a model sees, the result is structured content under an output schema,
// the visualization is in _meta, a failure is isError.
func TestCallResults(t *testing.T) {
	r := newRig(t)
	cs := r.connect(newest, nil)
	res := call(t, cs, "greet", map[string]string{"name": "Ada"})
	if res.IsError || text(res) != `{"success":true,"result":{"greeting":"hello Ada"}}` {
		t.Fatalf("greet: %s", toJSON(res))
	}
	if toJSON(res.StructuredContent) != `{"greeting":"hello Ada"}` {
		t.Fatalf("structured: %s", toJSON(res.StructuredContent))
	}
	if toJSON(res.Meta[mcpserver.MetaVisualization]) != `{"content":"**hello**","type":"markdown"}` {
		t.Fatalf("meta: %s", toJSON(res.Meta))
	}
	res = call(t, cs, "greet", map[string]string{"name": "nobody"})
	if !res.IsError || res.StructuredContent != nil || text(res) != `{"success":false,"error":"no one to greet"}` {
		t.Fatalf("failure: %s", toJSON(res))
	}
	res = call(t, cs, "greet", map[string]string{"name": "wrong"})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(text(res), "does not match its outputSchema") {
		t.Fatalf("mismatch: %s", toJSON(res))
	}
	res = call(t, cs, "greet", map[string]int{"name": 3})
	if !res.IsError || !strings.Contains(text(res), "invalid arguments for greet") {
		t.Fatalf("invalid args: %s", toJSON(res))
	}
	// The overflow rule applies: the text is a preview, the whole is in a file named in _meta.
	res = call(t, cs, "big", nil)
	var over host.Overflow
	_ = json.Unmarshal([]byte(toJSON(res.Meta[mcpserver.MetaOverflow])), &over)
	whole, err := os.ReadFile(over.Path)
	if res.IsError || len(text(res)) > host.OverflowPreview+1000 || !strings.Contains(text(res), over.Path) || over.Chars < 60_000 ||
		err != nil || !strings.Contains(string(whole), strings.Repeat("x", 60_000)) {
		t.Fatalf("overflow: %d chars of text, meta %s, file %v", len(text(res)), toJSON(res.Meta), err)
	}
	res = call(t, cs, "whoami", nil)
	if !strings.Contains(text(res), `"workspace":"`+r.ws+`"`) || !strings.Contains(text(res), `"session":"mcp-`) {
		t.Fatalf("whoami: %s", text(res))
	}
	first := text(res)
	if again := text(call(t, cs, "whoami", nil)); again != first {
		t.Fatalf("one session id per MCP session: %s then %s", first, again)
	}
	other := r.connect(newest, nil)
	if text(call(t, other, "whoami", nil)) == first {
		t.Fatal("two MCP sessions share a session id")
	}
}

// answerer answers forms the way a person would: by field names and their schemas.
func answerer(t *testing.T, seen *[]string, mu *sync.Mutex) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		*seen = append(*seen, req.Params.Message)
		mu.Unlock()
		schema := toJSON(req.Params.RequestedSchema)
		switch {
		case strings.Contains(req.Params.Message, "Deny me"):
			return &mcp.ElicitResult{Action: "decline"}, nil
		case strings.Contains(schema, `"allow"`):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true, "remember": "session"}}, nil
		case strings.Contains(req.Params.Message, "Sure?"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
		case strings.Contains(req.Params.Message, "Name?"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}, nil
		case strings.Contains(req.Params.Message, "Which env?"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Staging"}}, nil
		case strings.Contains(req.Params.Message, "Which days?"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": []any{"Mon", "Wed"}}}, nil
		case strings.Contains(req.Params.Message, "Deploy form"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"q1": "main", "q2": false}}, nil
		}
		t.Errorf("unexpected elicitation %q %s", req.Params.Message, schema)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
}

var allAsks = `{"asks":[
 {"type":"permission","question":"Read /x?","risk":"medium","resource":"file","paths":["/x"],"duration":"once"},
 {"type":"confirm","question":"Sure?"},
 {"type":"text","question":"Name?","placeholder":"Bob"},
 {"type":"single_select","question":"Which env?","options":[{"label":"Production","value":"prod"},{"label":"Staging","value":{"env":"staging"}}]},
 {"type":"multi_select","question":"Which days?","options":[{"label":"Mon"},{"label":"Tue"},{"label":"Wed"}],"min":1,"max":2},
 {"type":"form","question":"Deploy form","questions":[{"type":"text","question":"Branch?"},{"type":"confirm","question":"Now?"}]},
 {"type":"permission","question":"Deny me","risk":"high"},
 {"type":"confirm","question":"Deny me too"}
]}`

// Every ask type reaches the client as a form and comes back in the shape the ask promises,
// on the newest revision (input requests, the call parked between rounds) and on older ones
// (elicitation requests).
func TestAsksBecomeElicitations(t *testing.T) {
	for _, version := range []string{newest, classic} {
		t.Run("version="+version, func(t *testing.T) {
			r := newRig(t)
			var seen []string
			var mu sync.Mutex
			cs := r.connect(version, &mcp.ClientOptions{ElicitationHandler: answerer(t, &seen, &mu)})
			res := call(t, cs, "asker", obj(allAsks))
			want := `{"success":true,"result":[true,true,"Ada",{"env":"staging"},["Mon","Wed"],{"type":"form","answers":[{"question":"Branch?","answer":"main"},{"question":"Now?","answer":false}]},false,false]}`
			if text(res) != want {
				t.Fatalf("got  %s\nwant %s", text(res), want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 8 || !strings.HasPrefix(seen[0], "Tool asker asks for permission: Read /x?") || !strings.Contains(seen[0], "Risk: medium") {
				t.Fatalf("messages %q", seen)
			}
			// The permission was granted for the session: asked again, no one is asked.
			res = call(t, cs, "asker", obj(`{"asks":[{"type":"permission","question":"Read /x?","risk":"medium","resource":"file","paths":["/x"]}]}`))
			if text(res) != `{"success":true,"result":[true]}` || len(seen) != 8 {
				t.Fatalf("remembered grant: %s after %d asks", text(res), len(seen))
			}
		})
	}
}

// A client without elicitation gets the session policy (deny) and errors that say why.
func TestAsksWithoutElicitation(t *testing.T) {
	for _, version := range []string{newest, classic} {
		r := newRig(t)
		cs := r.connect(version, nil)
		res := call(t, cs, "asker", obj(`{"asks":[{"type":"permission","question":"Write /etc?","risk":"low"}]}`))
		if !res.IsError || !strings.Contains(text(res), "did not declare the elicitation capability") || !strings.Contains(text(res), "session policy does not grant it") {
			t.Fatalf("%s permission: %s", version, text(res))
		}
		res = call(t, cs, "asker", obj(`{"asks":[{"type":"text","question":"Name?"}]}`))
		if !res.IsError || !strings.Contains(text(res), `cannot answer text ask \"Name?\"`) {
			t.Fatalf("%s text: %s", version, text(res))
		}
	}
	// A policy that grants low risks still grants them.
	r := newRig(t, func(r *rig) {
		p, _ := ask.NewPolicy("low")
		r.opts.Policy = p
	})
	cs := r.connect(classic, nil)
	if res := call(t, cs, "asker", obj(`{"asks":[{"type":"permission","question":"Write /tmp?","risk":"low"}]}`)); text(res) != `{"success":true,"result":[true]}` {
		t.Fatalf("policy grant: %s", text(res))
	}
}

// Progress reports become progress notifications for the request's token; log lines become
// log notifications at the level the client set.
func TestProgressAndLogs(t *testing.T) {
	r := newRig(t)
	var mu sync.Mutex
	var progress, logs []string
	cs := r.connect(classic, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			p := req.Params
			progress = append(progress, fmt.Sprintf("%v %g/%g %s", p.ProgressToken, p.Progress, p.Total, p.Message))
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprintf("%s %s %s", req.Params.Level, req.Params.Logger, toJSON(req.Params.Data)))
		},
	})
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "count", Arguments: map[string]int{"n": 3}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || text(res) != `{"success":true,"result":[1,2,3]}` {
		t.Fatalf("%v %s", err, toJSON(res))
	}
	// Notifications sent before the response arrive before it, but are handled apart.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n, m := len(progress), len(logs)
		mu.Unlock()
		if n == 3 && m == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(progress, "|") != "tok-1 1/3 at 1|tok-1 2/3 at 2|tok-1 3/3 at 3" {
		t.Fatalf("progress %q", progress)
	}
	if len(logs) != 3 || !strings.HasPrefix(logs[0], `info count {`) || !strings.Contains(logs[0], `"message":"counted"`) || !strings.Contains(logs[0], `"i":1`) || !strings.Contains(logs[0], `"tool":"count"`) {
		t.Fatalf("logs %q", logs)
	}
}

// A client's cancellation aborts the call's signal, on both kinds of revision.
func TestCancellation(t *testing.T) {
	for _, version := range []string{newest, classic} {
		r := newRig(t)
		cs := r.connect(version, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
			done <- err
		}()
		select {
		case <-r.started:
		case <-time.After(10 * time.Second):
			t.Fatal("slow did not start")
		}
		cancel()
		select {
		case err := <-r.aborted:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: aborted with %v", version, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the tool's signal was not aborted", version)
		}
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: call returned %v", version, err)
		}
	}
}

// With no provider on the host, ctx.llm uses the client's sampling when it offers it.
func TestSamplingStandsInForTheModel(t *testing.T) {
	for _, version := range []string{newest, classic} {
		r := newRig(t)
		var got *mcp.CreateMessageParams
		cs := r.connect(version, &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			got = req.Params
			return &mcp.CreateMessageResult{Role: "assistant", Model: "client-model", Content: &mcp.TextContent{Text: "4"}}, nil
		}})
		if res := call(t, cs, "think", nil); text(res) != "4" {
			t.Fatalf("%s: %s", version, text(res))
		}
		if got == nil || got.SystemPrompt != "be brief" || toJSON(got.Messages) != `[{"content":{"type":"text","text":"2+2?"},"role":"user"}]` {
			t.Fatalf("%s: sampling request %s", version, toJSON(got))
		}
		// Without sampling: on the classic revision the host's answer stands (no provider);
		// on 2026-07-28 the call is refused for the capability the client did not declare.
		plain := r.connect(version, nil)
		if version == classic {
			if res := call(t, plain, "think", nil); !res.IsError || !strings.Contains(text(res), "no LLM provider is configured") {
				t.Fatalf("%s: without sampling: %s", version, text(res))
			}
			continue
		}
		_, err := plain.CallTool(context.Background(), &mcp.CallToolParams{Name: "think", Arguments: map[string]any{}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities || string(werr.Data) != `{"requiredCapabilities":{"sampling":{}}}` {
			t.Fatalf("%s: without sampling: %v (%#v), want MissingRequiredClientCapabilityError naming sampling", version, err, werr)
		}
	}
}

// A reload that changes the host's tools sends list_changed, and the list follows.
func TestListChangedOnReload(t *testing.T) {
	r := newRig(t)
	changed := make(chan struct{}, 8)
	for _, version := range []string{newest, classic} {
		cs := r.connect(version, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		}})
		names := func() string {
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var n []string
			for _, tl := range res.Tools {
				n = append(n, tl.Name)
			}
			return strings.Join(n, ",")
		}
		before := names()
		want := "extra-" + map[string]string{newest: "a", classic: "b"}[version]
		r.src.mu.Lock()
		r.src.tools = []tool.Tool{&tool.Func{Def: tool.Definition{Name: want, Description: "new", InputSchema: obj(`{"type":"object"}`)},
			Run: func(context.Context, *tool.Context, json.RawMessage) tool.Result { return tool.Success("extra") }}}
		r.src.mu.Unlock()
		if err := r.h.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no list_changed", version)
		}
		if after := names(); !strings.Contains(after, want) || after == before {
			t.Fatalf("%s: list %s after %s", version, after, before)
		}
		if res := call(t, cs, want, nil); text(res) != "extra" {
			t.Fatalf("%s: new tool: %s", version, text(res))
		}
	}
}

// The HTTP handler serves the same tools over streamable HTTP, asks included.
func TestStreamableHTTP(t *testing.T) {
	r := newRig(t)
	ts := httptest.NewServer(r.srv.HTTPHandler())
	defer ts.Close()
	for _, version := range []string{newest, classic} {
		var seen []string
		var mu sync.Mutex
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answerer(t, &seen, &mu)}).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		if res := call(t, cs, "greet", map[string]string{"name": "web"}); text(res) != `{"success":true,"result":{"greeting":"hello web"}}` {
			t.Fatalf("%s: %s", version, toJSON(res))
		}
		res := call(t, cs, "asker", obj(`{"asks":[{"type":"text","question":"Name?"},{"type":"confirm","question":"Sure?"}]}`))
		if text(res) != `{"success":true,"result":["Ada",true]}` {
			t.Fatalf("%s: asks over HTTP: %s", version, text(res))
		}
		_ = cs.Close()
	}
}

// A multi-round-trip client that never comes back leaves no call running: the call is
// cancelled after the input timeout, and its requestState is refused afterwards.
func TestParkedCallTimesOut(t *testing.T) {
	r := newRig(t, func(r *rig) { r.opts.InputTimeout = 300 * time.Millisecond })
	cs := r.connect(newest, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errors.New("unused") },
	})
	res := call(t, cs, "asker", obj(`{"asks":[{"type":"text","question":"Name?"}]}`))
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("first round: %s", toJSON(res))
	}
	var key string
	for k, v := range res.InputRequests {
		key = k
		if ep, ok := v.(*mcp.ElicitParams); !ok || !strings.Contains(ep.Message, "Name?") || ep.Mode != "form" {
			t.Fatalf("input request %s", toJSON(v))
		}
	}
	// Answered by hand, the call goes on.
	res2, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "asker", Arguments: obj(`{"asks":[{"type":"text","question":"Name?"}]}`),
		RequestState: res.RequestState, InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Grace"}}}})
	if err != nil || text(res2) != `{"success":true,"result":["Grace"]}` {
		t.Fatalf("retry: %v %s", err, toJSON(res2))
	}
	// Not answered, it is cancelled.
	res = call(t, cs, "asker", obj(`{"asks":[{"type":"text","question":"Name?"}]}`))
	time.Sleep(600 * time.Millisecond)
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "asker", Arguments: obj(`{}`), RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "late"}}}})
	if err == nil || !strings.Contains(err.Error(), "names no call waiting for input") {
		t.Fatalf("late retry: %v", err)
	}
}

// Each round of a call has a requestState of its own: the second round's differs from the
// first's, and the first's, once answered, names nothing (SEP-2322's evolving state).
func TestEachRoundHasItsOwnRequestState(t *testing.T) {
	r := newRig(t)
	cs := r.connect(newest, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errors.New("unused") },
	})
	args := obj(`{"asks":[{"type":"text","question":"Name?"},{"type":"text","question":"Colour?"}]}`)
	answer := func(res *mcp.CallToolResult, state, text string) (*mcp.CallToolResult, error) {
		responses := mcp.InputResponseMap{}
		for k := range res.InputRequests {
			responses[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": text}}
		}
		return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "asker", Arguments: args, RequestState: state, InputResponses: responses})
	}
	first := call(t, cs, "asker", args)
	second, err := answer(first, first.RequestState, "Grace")
	if err != nil || !second.NeedsInput() || second.RequestState == "" || second.RequestState == first.RequestState {
		t.Fatalf("second round: %v %s (first round's state %s)", err, toJSON(second), first.RequestState)
	}
	if _, err := answer(second, first.RequestState, "replayed"); err == nil || !strings.Contains(err.Error(), "names no call waiting for input") {
		t.Fatalf("the first round's state again: %v", err)
	}
	last, err := answer(second, second.RequestState, "blue")
	if err != nil || text(last) != `{"success":true,"result":["Grace","blue"]}` {
		t.Fatalf("last round: %v %s", err, toJSON(last))
	}
}

// SetWorkspace moves the calls of a connected session to another folder; a folder that is
// not one is refused and changes nothing.
func TestSetWorkspace(t *testing.T) {
	r := newRig(t)
	cs := r.connect(classic, nil)
	moved := t.TempDir()
	if err := r.srv.SetWorkspace(host.Workspace{Path: moved}); err != nil {
		t.Fatal(err)
	}
	if got := text(call(t, cs, "whoami", nil)); !strings.Contains(got, `"workspace":"`+moved+`"`) {
		t.Fatalf("after SetWorkspace, whoami in the same session: %s", got)
	}
	if err := r.srv.SetWorkspace(host.Workspace{Path: filepath.Join(moved, "missing")}); err == nil {
		t.Fatal("a workspace folder that does not exist was taken")
	}
	if got := text(call(t, cs, "whoami", nil)); !strings.Contains(got, `"workspace":"`+moved+`"`) {
		t.Fatalf("after a refused SetWorkspace: %s", got)
	}
}
