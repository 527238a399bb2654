package provider

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/sjson"

	"github.com/jean2/jean2/tool"
)

// sdkBody is the body the SDK sent before openaiBody: the parameter structs as they were
// built, marshalled, and "stream" set as NewStreaming sets it. It is the reference the new
// encoding is held to.
func (p *OpenAI) sdkBody(req Request) ([]byte, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	b, err := params.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return sjson.SetBytes(b, "stream", true)
}

func (p *OpenAI) params(req Request) (openai.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return openai.ChatCompletionNewParams{}, errors.New("the request names no model; set a default model for the provider or choose one for the session")
	}
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if max := firstPositive(req.MaxTokens, p.maxTokens); max > 0 {
		if p.completionTokens {
			params.MaxCompletionTokens = openai.Int(int64(max))
		} else {
			params.MaxTokens = openai.Int(int64(max))
		}
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	msgs := req.Messages
	if p.noImages {
		msgs = withoutImages(msgs)
	}
	var toolImages []openai.ChatCompletionContentPartUnionParam
	for i, m := range msgs {
		if m.Role == RoleTool && len(m.Images) > 0 {
			m, toolImages = openaiToolImages(m, toolImages)
		}
		msg, err := openaiMessage(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i+1, err)
		}
		params.Messages = append(params.Messages, msg)
		if len(toolImages) > 0 && (i+1 == len(msgs) || msgs[i+1].Role != RoleTool) {
			params.Messages = append(params.Messages, openai.UserMessage(toolImages))
			toolImages = nil
		}
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Function.Name}
		if t.Function.Description != "" {
			fn.Description = openai.String(t.Function.Description)
		}
		if len(t.Function.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Function.Parameters, &schema); err != nil {
				return params, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Function.Name, err)
			}
			fn.Parameters = schema
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return params, nil
}

func openaiMessage(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleUser:
		if len(m.Images) == 0 {
			return openai.UserMessage(m.Text), nil
		}
		var parts []openai.ChatCompletionContentPartUnionParam
		if m.Text != "" {
			parts = append(parts, openai.TextContentPart(m.Text))
		}
		for _, img := range m.Images {
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(img)}))
		}
		return openai.UserMessage(parts), nil
	case RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if m.Text != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Text)
		}
		for _, c := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       c.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Args},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case RoleTool:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("a tool message needs the id of the call it answers")
		}
		return openai.ToolMessage(m.Text, m.ToolCallID), nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("role %q is not one of user, assistant, tool", m.Role)
}

// openaiToolImages moves a tool result's images to parts of a user message that follows
// the run of tool messages (gathered in parts): a chat completions tool message takes text
// only. The result's text says where its images went, and the parts say whose they are.
func openaiToolImages(m Message, parts []openai.ChatCompletionContentPartUnionParam) (Message, []openai.ChatCompletionContentPartUnionParam) {
	parts = append(parts, openai.TextContentPart(fmt.Sprintf("The images of the result of tool call %s:", m.ToolCallID)))
	for _, img := range m.Images {
		m.Text += "\n" + imageStandIn(img, "in the user message after the tool results")
		parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(img)}))
	}
	m.Images = nil
	return m, parts
}

func dataURL(img Image) string {
	return "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}

// richRequest has every shape a body can hold: a system prompt, user text and images,
// assistant text with and without tool calls, arguments that do not parse, tool results
// with images (two in a run, then a user message), an empty result, tools with and without
// a schema, and text that needs every kind of escape.
func richRequest() Request {
	odd := "quote \" backslash \\ <html> & \b\f\n\r\t \x00\x1f\x7f é 日本 \u2028\u2029 \xff\xfe bad utf-8 🙂"
	png := Image{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3, 4}}
	return Request{Model: "gpt-test", System: "sys " + odd, MaxTokens: 100,
		Tools: []tool.Function{
			{Type: "function", Function: tool.FunctionSpec{Name: "read_file", Description: "Read a file. " + odd,
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"<p>"},"n":{"type":"integer","maximum":1e21,"minimum":0.000001,"default":1.50}},"required":["path"],"additionalProperties":false}`)}},
			{Type: "function", Function: tool.FunctionSpec{Name: "now"}},
		},
		Messages: []Message{
			{Role: RoleUser, Text: "look " + odd, Images: []Image{png, {MediaType: "image/jpeg", Data: []byte("jpeg")}}},
			{Role: RoleUser, Images: []Image{png}},
			{Role: RoleAssistant, Text: "Reading. " + odd, ToolCalls: []ToolCall{
				{ID: "c1", Name: "read_file", Args: `{"path":"a<b>"}`}, {ID: "c2", Name: "read_file", Args: `{"path":`}}},
			{Role: RoleTool, ToolCallID: "c1", Text: `{"success":true,"result":"` + odd + `"}`, Images: []Image{png}},
			{Role: RoleTool, ToolCallID: "c2", Text: "", IsError: true, Images: []Image{png, png}},
			{Role: RoleUser, Text: "thanks"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c3", Name: "now", Args: ""}}},
			{Role: RoleTool, ToolCallID: "c3", Text: "12:00", Images: []Image{png}},
			{Role: RoleAssistant, Text: ""},
			{Role: RoleUser, Text: ""},
		}}
}

func TestOpenAIBodyIsTheSDKs(t *testing.T) {
	rich := richRequest()
	plain := Request{Model: "m", Messages: []Message{{Role: RoleUser, Text: "hi"}}}
	cases := []struct {
		name string
		p    OpenAI
		req  Request
	}{
		{"rich", OpenAI{}, rich},
		{"rich, max_completion_tokens", OpenAI{completionTokens: true}, rich},
		{"rich, no images", OpenAI{noImages: true}, rich},
		{"config max tokens", OpenAI{maxTokens: 7}, plain},
		{"no max tokens, no system, no tools", OpenAI{}, plain},
		{"no messages", OpenAI{}, Request{Model: "m", System: "s"}},
		{"nothing", OpenAI{}, Request{Model: "m"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.p.sdkBody(c.req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.p.openaiBody(c.req)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("body differs from the SDK's at byte %d\n got: %s\nwant: %s", firstDiff(got, want), got, want)
			}
		})
	}
}

func TestOpenAIBodyErrorsAreTheSDKPaths(t *testing.T) {
	for _, req := range []Request{
		{Messages: []Message{{Role: RoleUser, Text: "no model"}}},
		{Model: "m", Messages: []Message{{Role: RoleUser}, {Role: "system", Text: "x"}}},
		{Model: "m", Messages: []Message{{Role: RoleTool, Text: "no id"}}},
		{Model: "m", Tools: []tool.Function{{Function: tool.FunctionSpec{Name: "t", Parameters: json.RawMessage(`[1]`)}}}},
	} {
		var p OpenAI
		_, want := p.sdkBody(req)
		_, got := p.openaiBody(req)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("error %v, the SDK path's %v", got, want)
		}
	}
}

func FuzzOpenAIBody(f *testing.F) {
	f.Add("hello", `{"a":1}`, "id", []byte{1, 2})
	f.Add("<\u2028\xff\x00\"\\", "{", "", []byte{})
	f.Fuzz(func(t *testing.T, text, args, id string, img []byte) {
		p := OpenAI{}
		req := Request{Model: text, System: text, Messages: []Message{
			{Role: RoleUser, Text: text, Images: []Image{{MediaType: text, Data: img}}},
			{Role: RoleAssistant, Text: text, ToolCalls: []ToolCall{{ID: id, Name: text, Args: args}}},
			{Role: RoleTool, ToolCallID: id, Text: args, Images: []Image{{MediaType: "image/png", Data: img}}},
		}}
		want, werr := p.sdkBody(req)
		got, gerr := p.openaiBody(req)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: %v, the SDK path's %v", gerr, werr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("body differs from the SDK's at byte %d\n got: %q\nwant: %q", firstDiff(got, want), got, want)
		}
	})
}

// FuzzAppendJSONString holds appendJSONString to encoding/json without HTML escapes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\\b\f\n\r\t\x00\x1f\x7f", "<>&", "\u2028\u2029", "\xff", "é日🙂", "\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		got := appendJSONString([]byte("x"), s)
		if string(got) != "x"+strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("%q: got %s, encoding/json %s", s, got[1:], want.String())
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// longRequest is a session of n turns like the soak's: a call, its 8 KB result, an answer.
func longRequest(n int) Request {
	req := Request{Model: "m", System: strings.Repeat("system prompt ", 200)}
	result := strings.Repeat("line of a tool's result \"quoted\"\n", 8*1024/34)
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			Message{Role: RoleUser, Text: fmt.Sprintf("turn %d", i)},
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "blob", Args: `{"n":1}`}}},
			Message{Role: RoleTool, ToolCallID: id, Text: result},
			Message{Role: RoleAssistant, Text: "done"})
	}
	return req
}

// TestOpenAIBodyAllocatesItsSizeOnce: a long session's request costs one allocation of
// about the body's size. The SDK's encoding allocated about nine times the body in
// tens of thousands of pieces (BenchmarkOpenAIBody).
func TestOpenAIBodyAllocatesItsSizeOnce(t *testing.T) {
	req := longRequest(100)
	p := OpenAI{}
	var size int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	allocs := testing.AllocsPerRun(5, func() {
		body, err := p.openaiBody(req)
		if err != nil {
			t.Fatal(err)
		}
		size = len(body)
	})
	runtime.ReadMemStats(&after)
	perRun := float64(after.TotalAlloc-before.TotalAlloc) / 6 // AllocsPerRun runs once more to warm up
	if allocs > 2 || perRun > 1.25*float64(size) {
		t.Fatalf("a %d-byte body took %.0f allocations and %.0f bytes; want one of about its size", size, allocs, perRun)
	}
}

// BenchmarkOpenAIBody is one request of a 600-turn session (about 5 MB of body), written
// the SDK's way and in one pass, for both providers.
func BenchmarkOpenAIBody(b *testing.B) {
	req := longRequest(600)
	p, a := OpenAI{}, Anthropic{}
	for _, c := range []struct {
		name string
		body func(Request) ([]byte, error)
	}{{"sdk", p.sdkBody}, {"direct", p.openaiBody}, {"anthropic-sdk", a.sdkBody}, {"anthropic-direct", a.body}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				body, err := c.body(req)
				if err != nil {
					b.Fatal(err)
				}
				n = len(body)
			}
			b.ReportMetric(float64(n), "body-bytes")
		})
	}
}

// anthropicSDKBody is the body the SDK sent before anthropicBody (NewStreaming).
func (p *Anthropic) sdkBody(req Request) ([]byte, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	b, err := params.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return sjson.SetBytes(b, "stream", true)
}

func TestAnthropicBodyIsTheSDKs(t *testing.T) {
	rich := richRequest()
	plain := Request{Model: "m", Messages: []Message{{Role: RoleUser, Text: "hi"}}}
	empty := Request{Model: "m", Messages: []Message{
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "n", Args: "{ \"x\" : \"<&>\" }"}}},
		{Role: RoleTool, ToolCallID: "a", Text: "r"}, {Role: RoleTool, ToolCallID: "b", IsError: true}},
		Tools: []tool.Function{{Function: tool.FunctionSpec{Name: "t", Parameters: json.RawMessage(`{"type":"object","mm":{"b":1,"a":2}}`)}}}}
	// One keyword besides properties, required and type: the SDK writes a schema's other
	// keywords in map order, so with two or more its own bytes vary from call to call.
	for _, c := range []struct {
		name string
		p    Anthropic
		req  Request
	}{
		{"rich", Anthropic{}, rich},
		{"rich, no images", Anthropic{noImages: true}, rich},
		{"config max tokens", Anthropic{maxTokens: 7}, plain},
		{"results", Anthropic{}, empty},
		{"nothing", Anthropic{}, Request{Model: "m"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.p.sdkBody(c.req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.p.body(c.req)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("body differs from the SDK's at byte %d\n got: %s\nwant: %s", firstDiff(got, want), got, want)
			}
		})
	}
}

func FuzzAnthropicBody(f *testing.F) {
	f.Add("hello", `{"a":1}`, "id", []byte{1, 2})
	f.Add("<\u2028\xff\x00\"\\&", `{"a" : "<\u2028>"}`, "", []byte{})
	f.Fuzz(func(t *testing.T, text, args, id string, img []byte) {
		p := Anthropic{}
		req := Request{Model: text, System: text, Messages: []Message{
			{Role: RoleUser, Text: text, Images: []Image{{MediaType: text, Data: img}}},
			{Role: RoleAssistant, Text: text, ToolCalls: []ToolCall{{ID: id, Name: text, Args: args}}},
			{Role: RoleTool, ToolCallID: id, Text: args, Images: []Image{{MediaType: "image/png", Data: img}}},
			{Role: RoleTool, ToolCallID: id, Text: text},
		}}
		want, werr := p.sdkBody(req)
		got, gerr := p.body(req)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: %v, the SDK path's %v", gerr, werr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("body differs from the SDK's at byte %d\n got: %q\nwant: %q", firstDiff(got, want), got, want)
		}
	})
}
