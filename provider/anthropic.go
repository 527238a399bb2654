package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
)

// DefaultAnthropicMaxTokens is the output limit sent when neither the request nor the
// config sets one: the Messages API requires a limit, and every current Claude model
// allows this many.
const DefaultAnthropicMaxTokens = 8192

// Anthropic talks to the Anthropic Messages API with streaming (tool_use blocks,
// input_json_delta). It uses the official anthropic-sdk-go for the request and the SSE
// decoding, with the SDK's own retries off (see Retry).
type Anthropic struct {
	name      string
	baseURL   string
	client    anthropic.Client // only its Execute: the body is ours (anthropicBody)
	retry     Retry
	maxTokens int
	noImages  bool
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic makes a provider for the Anthropic Messages API. cfg.BaseURL is the URL
// that /v1/messages hangs from, e.g. https://api.anthropic.com.
func NewAnthropic(cfg Config, opts *Options) (*Anthropic, error) {
	cfg, err := cfg.resolved(KindAnthropic)
	if err != nil {
		return nil, err
	}
	o := opts.orDefault()
	ro := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
		option.WithoutOpenTelemetry(),
		option.WithMiddleware(refuseHTML),
	}
	if key := cfg.APIKey.Reveal(); key != "" {
		ro = append(ro, option.WithAPIKey(key))
	}
	// A Client of ro alone, not NewClient: NewClient also reads ANTHROPIC_* variables and
	// profile files, and this provider must be exactly what its Config says.
	return &Anthropic{name: cfg.Name, baseURL: cfg.BaseURL, client: anthropic.Client{Options: ro}, retry: o.streamPolicy(cfg),
		maxTokens: cfg.MaxTokens, noImages: cfg.NoImages}, nil
}

// Stream sends req as a streaming Messages request.
func (p *Anthropic) Stream(ctx context.Context, req Request) (Stream, error) {
	body, err := p.body(req)
	if err != nil {
		return nil, &Error{Provider: p.name, Message: err.Error(), Err: err}
	}
	return startStream(ctx, p.retry, func(ctx context.Context) (Stream, *Error) {
		var raw *http.Response
		err := p.client.Execute(ctx, http.MethodPost, "v1/messages", body, &raw)
		s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(raw), err)
		if err := s.Err(); err != nil {
			s.Close()
			return nil, p.wrap(err)
		}
		return &anthropicStream{p: p, s: s, blocks: map[int64]*anthropicBlock{}}, nil
	})
}

// body is req's JSON body (anthropicBody): the SDK's parameters, written in one pass.
func (p *Anthropic) body(req Request) ([]byte, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	return anthropicBody(params, bodySize(req.System, req.Messages))
}

func (p *Anthropic) params(req Request) (anthropic.MessageNewParams, error) {
	if req.Model == "" {
		return anthropic.MessageNewParams{}, errors.New("the request names no model; set a default model for the provider or choose one for the session")
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: int64(firstPositive(req.MaxTokens, p.maxTokens, DefaultAnthropicMaxTokens)),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	in := req.Messages
	if p.noImages {
		in = withoutImages(in)
	}
	msgs, err := anthropicMessages(in)
	if err != nil {
		return params, err
	}
	params.Messages = msgs
	for _, t := range req.Tools {
		schema, err := anthropicSchema(t.Function.Parameters)
		if err != nil {
			return params, fmt.Errorf("tool %s: %w", t.Function.Name, err)
		}
		tp := &anthropic.ToolParam{Name: t.Function.Name, InputSchema: schema}
		if t.Function.Description != "" {
			tp.Description = anthropic.String(t.Function.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: tp})
	}
	return params, nil
}

// anthropicMessages turns the conversation into Messages API turns. Tool results travel
// in user turns, so a run of tool messages and the user message after them become one
// user turn, results first; empty text blocks, which the API refuses, are left out.
func anthropicMessages(in []Message) ([]anthropic.MessageParam, error) {
	var out []anthropic.MessageParam
	add := func(role anthropic.MessageParamRole, blocks []anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for i, m := range in {
		var blocks []anthropic.ContentBlockParamUnion
		switch m.Role {
		case RoleUser:
			for _, img := range m.Images {
				blocks = append(blocks, anthropic.NewImageBlockBase64(img.MediaType, base64.StdEncoding.EncodeToString(img.Data)))
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			add(anthropic.MessageParamRoleUser, blocks)
		case RoleAssistant:
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, argsObject(c.Args), c.Name))
			}
			add(anthropic.MessageParamRoleAssistant, blocks)
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool message needs the id of the call it answers", i+1)
			}
			block := anthropic.NewToolResultBlock(m.ToolCallID, m.Text, m.IsError)
			if len(m.Images) > 0 {
				block = anthropicToolResult(m)
			} else if m.Text == "" {
				// The API refuses an empty text block; a result with no content is allowed.
				block = anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{
					ToolUseID: m.ToolCallID, IsError: anthropic.Bool(m.IsError)}}
			}
			add(anthropic.MessageParamRoleUser, []anthropic.ContentBlockParamUnion{block})
		default:
			return nil, fmt.Errorf("message %d: role %q is not one of user, assistant, tool", i+1, m.Role)
		}
	}
	return out, nil
}

// anthropicToolResult is a tool result with images: its text, then each image as an image
// block of the result's content, which the Messages API takes in a tool_result.
func anthropicToolResult(m Message) anthropic.ContentBlockParamUnion {
	r := &anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID, IsError: anthropic.Bool(m.IsError)}
	if m.Text != "" {
		r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: m.Text}})
	}
	for _, img := range m.Images {
		b := anthropic.NewImageBlockBase64(img.MediaType, base64.StdEncoding.EncodeToString(img.Data))
		r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: b.OfImage})
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: r}
}

// anthropicSchema splits a tool's JSON Schema into the SDK's input schema: properties and
// required as fields, every other keyword carried along unchanged.
func anthropicSchema(raw []byte) (anthropic.ToolInputSchemaParam, error) {
	var s anthropic.ToolInputSchemaParam
	if len(raw) == 0 {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	if props, ok := m["properties"]; ok {
		s.Properties = props
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	delete(m, "properties")
	delete(m, "required")
	delete(m, "type")
	if len(m) > 0 {
		s.ExtraFields = m
	}
	return s, nil
}

func (p *Anthropic) wrap(err error) *Error {
	e := &Error{Provider: p.name, Message: err.Error(), Err: err}
	var api *anthropic.Error
	var page *htmlAnswer
	switch {
	case errors.As(err, &page):
		return htmlError(p.name, p.baseURL, page, err)
	case errors.As(err, &api):
		// The SDK makes the same error for an HTTP error status and for an error event in
		// the stream; the latter arrives with the stream's 200.
		if api.StatusCode >= 400 {
			e.Status = api.StatusCode
		}
		e.Type, e.Message = streamErrorFields([]byte(api.RawJSON()))
		if e.Type == "" {
			e.Type = string(api.Type())
		}
		if e.Message == "" {
			e.Message = http.StatusText(api.StatusCode)
		}
		if api.Response != nil && e.Status != 0 {
			e.RetryAfter = parseRetryAfter(api.Response.Header)
		}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
	default:
		if strings.HasPrefix(err.Error(), "received error while streaming: ") {
			// An error event whose body the SDK could not read as an API error.
			data := strings.TrimPrefix(err.Error(), "received error while streaming: ")
			e.Type, e.Message = streamErrorFields([]byte(data))
		} else if isConnectionError(err) {
			e.Message = "connection failed: " + err.Error()
		}
	}
	return e
}

// anthropicBlock is a content block being streamed.
type anthropicBlock struct {
	kind    string // text, tool_use, thinking…
	call    int    // for tool_use: our call index
	hasArgs bool
}

type anthropicStream struct {
	p      *Anthropic
	s      *ssestream.Stream[anthropic.MessageStreamEventUnion]
	q      queue
	blocks map[int64]*anthropicBlock
	calls  int
	usage  Usage
	stop   string
	ended  bool
}

func (s *anthropicStream) Next() (Event, error) {
	for {
		if ev, ok := s.q.pop(); ok {
			return ev, nil
		}
		if s.ended {
			return Event{}, io.EOF
		}
		if !s.s.Next() {
			if err := s.s.Err(); err != nil {
				return Event{}, s.p.wrap(err)
			}
			return Event{}, &Error{Provider: s.p.name, Message: errEndedEarly.Error(), Err: errEndedEarly}
		}
		s.event(s.s.Current())
	}
}

func (s *anthropicStream) event(ev anthropic.MessageStreamEventUnion) {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		s.usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		s.usage.OutputTokens = u.OutputTokens
	case "content_block_start":
		b := &anthropicBlock{kind: ev.ContentBlock.Type}
		s.blocks[ev.Index] = b
		switch b.kind {
		case "tool_use":
			b.call = s.calls
			s.calls++
			s.q.push(Event{Kind: EventToolCallStart, Index: b.call, ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
		case "text":
			if ev.ContentBlock.Text != "" {
				s.q.push(Event{Kind: EventText, Text: ev.ContentBlock.Text})
			}
		}
	case "content_block_delta":
		b := s.blocks[ev.Index]
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text != "" {
				s.q.push(Event{Kind: EventText, Text: ev.Delta.Text})
			}
		case "input_json_delta":
			if b != nil && b.kind == "tool_use" && ev.Delta.PartialJSON != "" {
				b.hasArgs = true
				s.q.push(Event{Kind: EventToolCallArgs, Index: b.call, Text: ev.Delta.PartialJSON})
			}
		case "thinking_delta":
			if ev.Delta.Thinking != "" {
				s.q.push(Event{Kind: EventReasoning, Text: ev.Delta.Thinking})
			}
		}
	case "content_block_stop":
		if b := s.blocks[ev.Index]; b != nil && b.kind == "tool_use" && !b.hasArgs {
			b.hasArgs = true
			s.q.push(Event{Kind: EventToolCallArgs, Index: b.call, Text: "{}"})
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			s.stop = string(ev.Delta.StopReason)
		}
		// message_delta's usage is cumulative.
		if ev.Usage.OutputTokens > 0 {
			s.usage.OutputTokens = ev.Usage.OutputTokens
		}
		if in := ev.Usage.InputTokens + ev.Usage.CacheCreationInputTokens + ev.Usage.CacheReadInputTokens; in > 0 {
			s.usage.InputTokens = in
		}
	case "message_stop":
		s.ended = true
		if s.usage != (Usage{}) {
			s.q.push(Event{Kind: EventUsage, Usage: s.usage})
		}
		s.q.push(Event{Kind: EventFinish, Finish: anthropicFinish(s.stop, s.calls > 0)})
	}
}

func anthropicFinish(reason string, calls bool) FinishReason {
	switch reason {
	case "end_turn", "stop_sequence":
		if calls {
			return FinishToolCalls
		}
		return FinishStop
	case "tool_use":
		return FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "refusal":
		return FinishContentFilter
	case "":
		return FinishStop
	}
	return FinishReason(reason)
}

func (s *anthropicStream) Close() error { return s.s.Close() }
