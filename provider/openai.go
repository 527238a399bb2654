package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// OpenAI talks to a server that speaks OpenAI's chat completions with streaming: OpenAI
// itself, OpenRouter, Ollama, vLLM, llama.cpp's server, LM Studio and the like. It uses the
// official openai-go SDK for the request and the SSE decoding (its chunk types already
// carry tool-call deltas by index), with the SDK's own retries off: retries here follow
// Retry, the same for every provider, and never happen after output was delivered.
type OpenAI struct {
	name      string
	baseURL   string
	client    openai.Client // only its Execute: the body is ours (openaiBody)
	retry     Retry
	maxTokens int
	// completionTokens sends max_completion_tokens (OpenAI's own API, where newer models
	// refuse max_tokens) instead of max_tokens (what compatible servers understand).
	completionTokens bool
	noImages         bool // Config.NoImages
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI makes a provider for an OpenAI-compatible server. cfg.BaseURL is the URL the
// API paths hang from, e.g. https://api.openai.com/v1 or http://localhost:11434/v1.
func NewOpenAI(cfg Config, opts *Options) (*OpenAI, error) {
	cfg, err := cfg.resolved(KindOpenAI)
	if err != nil {
		return nil, err
	}
	o := opts.orDefault()
	ro := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
		option.WithMiddleware(refuseHTML),
	}
	if key := cfg.APIKey.Reveal(); key != "" {
		ro = append(ro, option.WithAPIKey(key))
	}
	u, _ := url.Parse(cfg.BaseURL)
	// A Client of ro alone, not NewClient: NewClient also reads OPENAI_* variables from the
	// environment, and this provider must be exactly what its Config says.
	return &OpenAI{
		name:             cfg.Name,
		baseURL:          cfg.BaseURL,
		client:           openai.Client{Options: ro},
		retry:            o.streamPolicy(cfg),
		maxTokens:        cfg.MaxTokens,
		noImages:         cfg.NoImages,
		completionTokens: u != nil && u.Hostname() == "api.openai.com",
	}, nil
}

// Stream sends req as a streaming chat completion. The body is written by openaiBody and
// sent through the SDK's client as it is (the SDK still makes the HTTP request, its errors
// and the SSE decoding); what NewStreaming does besides is set "stream", already there.
func (p *OpenAI) Stream(ctx context.Context, req Request) (Stream, error) {
	body, err := p.openaiBody(req)
	if err != nil {
		return nil, &Error{Provider: p.name, Message: err.Error(), Err: err}
	}
	return startStream(ctx, p.retry, func(ctx context.Context) (Stream, *Error) {
		var raw *http.Response
		err := p.client.Execute(ctx, http.MethodPost, "chat/completions", body, &raw)
		s := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(raw), err)
		if err := s.Err(); err != nil {
			s.Close()
			return nil, p.wrap(err)
		}
		return &openaiStream{p: p, s: s, calls: map[int64]*openaiCall{}}, nil
	})
}

// wrap turns an SDK or transport error into a *Error.
func (p *OpenAI) wrap(err error) *Error {
	e := &Error{Provider: p.name, Message: err.Error(), Err: err}
	var api *openai.Error
	var se *ssestream.StreamError
	var page *htmlAnswer
	switch {
	case errors.As(err, &page):
		return htmlError(p.name, p.baseURL, page, err)
	case errors.As(err, &api):
		e.Status = api.StatusCode
		e.Type, e.Message = api.Type, api.Message
		if e.Type == "" {
			e.Type = api.Code
		}
		if e.Message == "" {
			e.Message = strings.TrimSpace(api.RawJSON())
		}
		if e.Message == "" {
			e.Message = http.StatusText(api.StatusCode)
		}
		if api.Response != nil {
			e.RetryAfter = parseRetryAfter(api.Response.Header)
		}
	case errors.As(err, &se):
		// An error object inside the stream: {"error": {"message": …, "type": …}}.
		e.Type, e.Message = streamErrorFields(se.Event.Data)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		e.Message = err.Error()
	default:
		if isConnectionError(err) {
			e.Message = "connection failed: " + err.Error()
		}
	}
	return e
}

// streamErrorFields reads the type and message of an error object a server sent inside
// the stream, in either shape: {"error": {"type", "message"}} (OpenAI and most compatible
// servers, Anthropic) or {"error": "message"}.
func streamErrorFields(data []byte) (typ, msg string) {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &env) != nil || len(env.Error) == 0 {
		return "", strings.TrimSpace(string(data))
	}
	var obj struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(env.Error, &obj) == nil {
		typ = obj.Type
		if typ == "" && len(obj.Code) > 0 {
			var code string
			if json.Unmarshal(obj.Code, &code) == nil {
				typ = code
			}
		}
		if obj.Message != "" {
			return typ, obj.Message
		}
	}
	var text string
	if json.Unmarshal(env.Error, &text) == nil {
		return typ, text
	}
	return typ, string(env.Error)
}

// openaiCall is a tool call being streamed.
type openaiCall struct {
	index   int // ours: 0, 1, 2… in order of appearance
	id      string
	started bool
	hasArgs bool
	pending strings.Builder // arguments that came before the tool's name
}

type openaiStream struct {
	p      *OpenAI
	s      *ssestream.Stream[openai.ChatCompletionChunk]
	q      queue
	calls  map[int64]*openaiCall // by the server's index
	order  []*openaiCall
	finish string
	usage  *Usage
	ended  bool
}

func (s *openaiStream) Next() (Event, error) {
	for {
		if ev, ok := s.q.pop(); ok {
			return ev, nil
		}
		if s.ended {
			return Event{}, io.EOF
		}
		if !s.s.Next() {
			err := s.s.Err()
			// A connection cut after the model said why it stopped loses at most the usage.
			if err == nil || (s.finish != "" && isConnectionError(err)) {
				if s.finish == "" {
					return Event{}, &Error{Provider: s.p.name, Message: errEndedEarly.Error(), Err: errEndedEarly}
				}
				s.end()
				continue
			}
			return Event{}, s.p.wrap(err)
		}
		s.chunk(s.s.Current())
	}
}

func (s *openaiStream) chunk(c openai.ChatCompletionChunk) {
	if c.JSON.Usage.Valid() && (c.Usage.PromptTokens != 0 || c.Usage.CompletionTokens != 0) {
		s.usage = &Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // one answer is asked for; a server that sends more gets only the first used
		}
		d := ch.Delta
		for _, key := range []string{"reasoning_content", "reasoning"} {
			if f, ok := d.JSON.ExtraFields[key]; ok {
				var text string
				if json.Unmarshal([]byte(f.Raw()), &text) == nil && text != "" {
					s.q.push(Event{Kind: EventReasoning, Text: text})
				}
			}
		}
		if d.Content != "" {
			s.q.push(Event{Kind: EventText, Text: d.Content})
		}
		for _, tc := range d.ToolCalls {
			s.toolDelta(tc)
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
	}
}

func (s *openaiStream) toolDelta(tc openai.ChatCompletionChunkChoiceDeltaToolCall) {
	call := s.calls[tc.Index]
	// Some servers number every call 0; a new id at a known index is a new call.
	if call == nil || (tc.ID != "" && call.id != "" && tc.ID != call.id) {
		call = &openaiCall{index: len(s.order), id: tc.ID}
		s.calls[tc.Index] = call
		s.order = append(s.order, call)
	}
	if call.id == "" {
		call.id = tc.ID
	}
	args := tc.Function.Arguments
	if !call.started {
		if tc.Function.Name == "" {
			call.pending.WriteString(args)
			return
		}
		call.started = true
		if call.id == "" {
			call.id = newCallID()
		}
		s.q.push(Event{Kind: EventToolCallStart, Index: call.index, ID: call.id, Name: tc.Function.Name})
		args = call.pending.String() + args
		call.pending.Reset()
	}
	if args != "" {
		call.hasArgs = true
		s.q.push(Event{Kind: EventToolCallArgs, Index: call.index, Text: args})
	}
}

// end queues what closes the answer: empty arguments made "{}", usage, finish.
func (s *openaiStream) end() {
	s.ended = true
	for _, c := range s.order {
		if !c.started {
			// The name never came; the call is still reported so the model hears back.
			c.started = true
			if c.id == "" {
				c.id = newCallID()
			}
			s.q.push(Event{Kind: EventToolCallStart, Index: c.index, ID: c.id})
			if c.pending.Len() > 0 {
				c.hasArgs = true
				s.q.push(Event{Kind: EventToolCallArgs, Index: c.index, Text: c.pending.String()})
			}
		}
		if !c.hasArgs {
			s.q.push(Event{Kind: EventToolCallArgs, Index: c.index, Text: "{}"})
		}
	}
	if s.usage != nil {
		s.q.push(Event{Kind: EventUsage, Usage: *s.usage})
	}
	s.q.push(Event{Kind: EventFinish, Finish: openaiFinish(s.finish, len(s.order) > 0)})
}

func openaiFinish(reason string, calls bool) FinishReason {
	switch reason {
	case "stop", "eos", "end_turn":
		// Some compatible servers say "stop" after tool calls; the calls are what matter.
		if calls {
			return FinishToolCalls
		}
		return FinishStop
	case "tool_calls", "function_call":
		return FinishToolCalls
	case "length", "max_tokens":
		return FinishLength
	case "content_filter":
		return FinishContentFilter
	}
	return FinishReason(reason)
}

func (s *openaiStream) Close() error { return s.s.Close() }

// newCallID names a call the server left without an id, so its result can be matched.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

func firstPositive(vs ...int) int {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}
