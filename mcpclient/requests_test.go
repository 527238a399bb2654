package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type fakeLLM struct{ prompts []string }

func (f *fakeLLM) GenerateText(_ context.Context, r tool.TextRequest) (string, error) {
	f.prompts = append(f.prompts, r.Prompt)
	return "model says " + r.Prompt, nil
}
func (f *fakeLLM) GenerateStructured(context.Context, tool.StructuredRequest) (json.RawMessage, error) {
	return nil, fmt.Errorf("not used")
}

// A server's own requests during a call reach the person and the model through that call:
// a form elicitation becomes a form ask (string, integer as a number question, boolean,
// enum with the legacy enumNames as labels; the answers typed back), a URL elicitation a confirmation naming the page, sampling a permission ask and
// then the call's model, and roots are the workspace's folders. A request with no call
// running is declined; a person's "no" declines.
func TestServerRequestsThroughTheCall(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, nil)
	var rootsSeen []string
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var out []string
			form, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{
				"name":{"type":"string","title":"Name","default":"Ada"},
				"age":{"type":"integer","minimum":0},
				"ok":{"type":"boolean"},
				"env":{"type":"string","enum":["prod","staging"],"enumNames":["Production","Staging"]}},"required":["name"]}`)})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(form)
			out = append(out, string(b))
			page, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Link your account", URL: "https://example.com/link", ElicitationID: "e1"})
			if err != nil {
				return nil, err
			}
			out = append(out, page.Action)
			msg, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "2+2?"}}}})
			if err != nil {
				out = append(out, "sampling: "+err.Error())
			} else {
				out = append(out, msg.Content.(*mcp.TextContent).Text)
			}
			roots, err := req.Session.ListRoots(ctx, nil)
			if err == nil {
				for _, r := range roots.Roots {
					rootsSeen = append(rootsSeen, r.URI)
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, " | ")}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()
	m := New(Config{Servers: []ServerConfig{{Name: "asking", URL: ts.URL, Type: "http", File: "mcp.json"}}}, nil, Options{Roots: []string{"/work/project"}})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Start(ctx)
	tools, err := m.Servers()[0].Tools()
	if err != nil || len(tools) != 1 {
		t.Fatalf("tools: %v %v", tools, err)
	}

	var mu sync.Mutex
	var asked []tool.Ask
	llm := &fakeLLM{}
	allowSampling := true
	c := tool.NewContext(tool.Context{LLM: llm, Asker: tool.AskerFunc(func(_ context.Context, a tool.Ask) (json.RawMessage, error) {
		mu.Lock()
		asked = append(asked, a)
		mu.Unlock()
		switch a.Type {
		case tool.AskForm:
			// The questions come sorted by name: age, env, name, ok.
			return json.RawMessage(`{"type":"form","answers":[{"question":"age","answer":36},{"question":"env","answer":"staging"},{"question":"Name","answer":"Grace"},{"question":"ok","answer":true}]}`), nil
		case tool.AskConfirm:
			return json.RawMessage(`true`), nil
		case tool.AskPermission:
			return json.Marshal(allowSampling)
		}
		return nil, fmt.Errorf("unexpected ask %s", a.Type)
	})})
	res := run(t, tools[0], `{}`, c)
	if !res.Success {
		t.Fatalf("call: %+v", res)
	}
	var got string
	_ = json.Unmarshal(res.Result, &got)
	want := `{"action":"accept","content":{"age":36,"env":"staging","name":"Grace","ok":true}} | accept | model says 2+2?`
	if got != want {
		t.Fatalf("the server saw %s\nwant %s", got, want)
	}
	if len(asked) != 3 || asked[0].Type != tool.AskForm || !strings.Contains(asked[0].Question, "asking asks: Who are you?") ||
		string(asked[0].Questions[2].DefaultValue) != `"Ada"` || asked[0].Questions[1].Type != tool.AskSingleSelect || asked[0].Questions[3].Type != tool.AskConfirm ||
		asked[0].Questions[0].Type != tool.AskNumber || !asked[0].Questions[0].Integer || asked[0].Questions[0].Minimum == nil ||
		asked[0].Questions[1].Options[1].Label != "Staging" || asked[0].Questions[1].Name != "env" ||
		!strings.Contains(asked[1].Question, "https://example.com/link") || asked[2].Type != tool.AskPermission {
		t.Fatalf("asks: %+v", asked)
	}
	if len(rootsSeen) != 1 || rootsSeen[0] != "file:///work/project" {
		t.Fatalf("roots: %v", rootsSeen)
	}

	// The person refuses the model: the server hears an error, nothing reaches the model.
	allowSampling = false
	llm.prompts = nil
	res = run(t, tools[0], `{}`, c)
	_ = json.Unmarshal(res.Result, &got)
	if !strings.Contains(got, "sampling: ") || !strings.Contains(got, "did not allow") || len(llm.prompts) != 0 {
		t.Fatalf("refused sampling: %s (model saw %v)", got, llm.prompts)
	}

	// With no call running, nobody is asked: declined.
	er, err := m.Servers()[0].elicitThroughAsks(ctx, &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "hello?"}})
	if err != nil || er.Action != "decline" {
		t.Fatalf("out of the blue: %+v %v", er, err)
	}
}

// elicitingServer serves one tool, "form", that elicits a one-field form and returns what
// came back, and counts the elicitations it made.
func elicitingServer(t *testing.T) (url string) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "forms", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "form", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A person filling in a server's form is not timed out: the call's 300 ms timeout does not
// run while the form waits on the person (here 900 ms), and the answer reaches the server.
func TestElicitationDoesNotCountTowardTheTimeout(t *testing.T) {
	m := New(Config{Servers: []ServerConfig{{Name: "forms", URL: elicitingServer(t), Type: "http", File: "mcp.json", Timeout: 300}}}, nil, Options{})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Start(ctx)
	tools, err := m.Servers()[0].Tools()
	if err != nil || len(tools) != 1 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	c := tool.NewContext(tool.Context{Asker: tool.AskerFunc(func(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
		select {
		case <-time.After(900 * time.Millisecond): // a person typing
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return json.RawMessage(`{"type":"form","answers":[{"question":"name","answer":"Grace"}]}`), nil
	})})
	res := run(t, tools[0], `{}`, c)
	if !res.Success {
		t.Fatalf("the call failed while the person answered: %s", res.Error)
	}
	var got string
	_ = json.Unmarshal(res.Result, &got)
	if got != `{"name":"Grace"}` {
		t.Fatalf("the server saw %s, want {\"name\":\"Grace\"}", got)
	}
}

// A form whose call ended (stopped here) is withdrawn: the ask's context ends with the call,
// so no client goes on asking for it, and no answer given later counts.
func TestElicitationWithdrawnWhenTheCallEnds(t *testing.T) {
	m := New(Config{Servers: []ServerConfig{{Name: "forms", URL: elicitingServer(t), Type: "http", File: "mcp.json"}}}, nil, Options{})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Start(ctx)
	tools, err := m.Servers()[0].Tools()
	if err != nil || len(tools) != 1 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	asked := make(chan struct{})
	withdrawn := make(chan time.Duration, 1)
	callCtx, stop := context.WithCancel(ctx)
	c := tool.NewContext(tool.Context{Asker: tool.AskerFunc(func(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
		close(asked)
		start := time.Now()
		select {
		case <-ctx.Done():
			withdrawn <- time.Since(start)
			return nil, context.Cause(ctx)
		case <-time.After(5 * time.Second):
			withdrawn <- -1
			return json.RawMessage(`{"type":"form","answers":[{"question":"name","answer":"late"}]}`), nil
		}
	})})
	go func() {
		<-asked
		stop()
	}()
	res := tools[0].Execute(callCtx, c, json.RawMessage(`{}`))
	if res.Success {
		t.Fatalf("a stopped call succeeded: %s", res.Result)
	}
	select {
	case d := <-withdrawn:
		if d < 0 {
			t.Fatal("the form stayed asked 5 s after its call was stopped")
		}
	case <-time.After(6 * time.Second):
		t.Fatal("the ask never ended")
	}
}
