package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/tool"
)

// conversation is a turn's second round: the user asked with an image, the model made
// two calls (the second with arguments that do not parse), both results came back, and
// the user added a word.
func conversation(model string) provider.Request {
	return provider.Request{Model: model, System: "sys", MaxTokens: 100,
		Tools: []tool.Function{{Type: "function", Function: tool.FunctionSpec{Name: "read_file", Description: "Read a file.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}}},
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "read a and b", Images: []provider.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}},
			{Role: provider.RoleAssistant, Text: "Reading.", ToolCalls: []provider.ToolCall{
				{ID: "c1", Name: "read_file", Args: `{"path":"a"}`}, {ID: "c2", Name: "read_file", Args: `{"path":`}}},
			{Role: provider.RoleTool, ToolCallID: "c1", Text: `{"success":true,"result":"A"}`},
			{Role: provider.RoleTool, ToolCallID: "c2", Text: "", IsError: true},
			{Role: provider.RoleUser, Text: "thanks"},
		}}
}

func send(t *testing.T, f flavor, req provider.Request) providertest.Request {
	t.Helper()
	srv, p := f.start(t, nil)
	srv.Push(f.text("ok"))
	s, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Collect(s); err != nil {
		t.Fatal(err)
	}
	return srv.Requests()[0]
}

func TestOpenAIRequestShape(t *testing.T) {
	r := send(t, flavors()[0], conversation("gpt-test"))
	if r.Header.Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("Authorization %q", r.Header.Get("Authorization"))
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	var body struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		MaxTokens     int    `json:"max_tokens"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCalls  []call          `json:"tool_calls"`
			ToolCallID string          `json:"tool_call_id"`
		} `json:"messages"`
		Tools []tool.Function `json:"tools"`
	}
	if err := r.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "gpt-test" || !body.Stream || body.MaxTokens != 100 || !body.StreamOptions.IncludeUsage {
		t.Fatalf("body %+v", body)
	}
	var roles []string
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool,user" {
		t.Fatalf("roles %v", roles)
	}
	if !strings.Contains(string(body.Messages[1].Content), `"url":"data:image/png;base64,AQID"`) {
		t.Fatalf("user content %s", body.Messages[1].Content)
	}
	a := body.Messages[2]
	if string(a.Content) != `"Reading."` || len(a.ToolCalls) != 2 || a.ToolCalls[1].Function.Arguments != `{"path":` || a.ToolCalls[0].Type != "function" {
		t.Fatalf("assistant message %+v", a)
	}
	if body.Messages[3].ToolCallID != "c1" || string(body.Messages[3].Content) != `"{\"success\":true,\"result\":\"A\"}"` {
		t.Fatalf("tool message %+v", body.Messages[3])
	}
	want := conversation("").Tools[0]
	got := body.Tools[0]
	var ws, gs any
	_ = json.Unmarshal(want.Function.Parameters, &ws)
	_ = json.Unmarshal(got.Function.Parameters, &gs)
	if got.Type != "function" || got.Function.Name != "read_file" || got.Function.Description != "Read a file." || !reflect.DeepEqual(ws, gs) {
		t.Fatalf("tool %+v", got)
	}
}

// redirect sends every request to the fake server, whatever host it was for, as a proxy
// would: a provider configured for api.openai.com can then be tested.
type redirect struct{ to *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(out)
}

// TestOpenAIMaxTokensField: OpenAI's own API gets max_completion_tokens (newer models
// refuse max_tokens); a compatible server gets max_tokens, which is what they understand.
func TestOpenAIMaxTokensField(t *testing.T) {
	srv := providertest.NewOpenAI(t)
	to, _ := url.Parse(srv.URL)
	for _, base := range []string{provider.OpenAIBaseURL, srv.BaseURL()} {
		srv.Push(providertest.OpenAIText("gpt-test", "ok"))
		p, err := provider.NewOpenAI(provider.Config{Name: "o", Kind: provider.KindOpenAI, BaseURL: base, APIKey: "k"},
			&provider.Options{HTTPClient: &http.Client{Transport: redirect{to}}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.Stream(context.Background(), ask("gpt-test"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := provider.Collect(s); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	var official, compatible map[string]any
	_ = reqs[0].Decode(&official)
	_ = reqs[1].Decode(&compatible)
	if official["max_completion_tokens"] != float64(256) || official["max_tokens"] != nil {
		t.Fatalf("api.openai.com got max_tokens %v, max_completion_tokens %v", official["max_tokens"], official["max_completion_tokens"])
	}
	if compatible["max_tokens"] != float64(256) || compatible["max_completion_tokens"] != nil {
		t.Fatalf("a compatible server got max_tokens %v, max_completion_tokens %v", compatible["max_tokens"], compatible["max_completion_tokens"])
	}
}

func TestAnthropicRequestShape(t *testing.T) {
	r := send(t, flavors()[1], conversation("claude-test"))
	if r.Header.Get("X-Api-Key") != testKey || r.Header.Get("Anthropic-Version") == "" || r.Header.Get("Authorization") != "" {
		t.Fatalf("headers %v", r.Header)
	}
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
		Source    struct {
			Type, MediaType, Data string
		} `json:"source"`
	}
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    []block
		Messages  []struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := r.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "claude-test" || body.MaxTokens != 100 || len(body.System) != 1 || body.System[0].Text != "sys" {
		t.Fatalf("body %+v", body)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("%d turns, want user, assistant, user (results and text merged): %+v", len(body.Messages), body.Messages)
	}
	u, a, u2 := body.Messages[0], body.Messages[1], body.Messages[2]
	if u.Role != "user" || u.Content[0].Type != "image" || u.Content[1].Text != "read a and b" {
		t.Fatalf("first turn %+v", u)
	}
	if a.Role != "assistant" || len(a.Content) != 3 || a.Content[1].Type != "tool_use" || string(a.Content[1].Input) != `{"path":"a"}` ||
		string(a.Content[2].Input) != `{}` {
		t.Fatalf("assistant turn %+v", a)
	}
	if u2.Role != "user" || len(u2.Content) != 3 || u2.Content[0].ToolUseID != "c1" || u2.Content[1].ToolUseID != "c2" ||
		!u2.Content[1].IsError || u2.Content[1].Content != nil || u2.Content[2].Text != "thanks" {
		t.Fatalf("results turn %+v", u2)
	}
	s := body.Tools[0].InputSchema
	if body.Tools[0].Name != "read_file" || s["type"] != "object" || s["additionalProperties"] != false ||
		!reflect.DeepEqual(s["required"], []any{"path"}) || s["properties"] == nil {
		t.Fatalf("tool %+v", body.Tools[0])
	}
}

func TestAnthropicDefaultMaxTokens(t *testing.T) {
	req := ask("claude-test")
	req.MaxTokens = 0
	r := send(t, flavors()[1], req)
	var body map[string]any
	_ = r.Decode(&body)
	if body["max_tokens"] != float64(provider.DefaultAnthropicMaxTokens) {
		t.Fatalf("max_tokens %v", body["max_tokens"])
	}
}

func TestRequestsThatCannotBeSent(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			for name, req := range map[string]provider.Request{
				"no model":       {Messages: []provider.Message{{Role: provider.RoleUser, Text: "x"}}},
				"bad role":       {Model: "m", Messages: []provider.Message{{Role: "system", Text: "x"}}},
				"result without": {Model: "m", Messages: []provider.Message{{Role: provider.RoleTool, Text: "x"}}},
				"bad schema": {Model: "m", Messages: []provider.Message{{Role: provider.RoleUser, Text: "x"}},
					Tools: []tool.Function{{Function: tool.FunctionSpec{Name: "t", Parameters: json.RawMessage(`[1]`)}}}},
			} {
				_, err := p.Stream(context.Background(), req)
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Temporary() {
					t.Errorf("%s: error = %v", name, err)
				}
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("%d requests sent for requests that cannot be right", n)
			}
		})
	}
}
