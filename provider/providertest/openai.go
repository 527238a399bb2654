package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// OpenAIStream builds a chat-completions stream as api.openai.com writes it: every chunk a
// "data: " line with the same id, created and model, choices[0].delta holding the next
// piece, tool calls by index (the first chunk of a call carries id, type and name, later
// ones only argument pieces), finish_reason in a chunk of its own, then, because
// stream_options.include_usage is asked for, a chunk with empty choices and the usage,
// and "data: [DONE]".
type OpenAIStream struct {
	id, model, fingerprint string
	created                int64
	steps                  []Step
}

// NewOpenAIStream starts a stream for model with the assistant-role chunk real streams
// open with.
func NewOpenAIStream(model string) *OpenAIStream {
	b := &OpenAIStream{id: "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", model: model, fingerprint: "fp_f9f4fb6dbf", created: 1741570283}
	return b.Chunk(`{"role":"assistant","content":"","refusal":null}`)
}

// Chunk adds a chunk whose choices[0].delta is the raw JSON delta.
func (b *OpenAIStream) Chunk(delta string) *OpenAIStream {
	return b.data(fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":%d,"model":%q,"service_tier":"default","system_fingerprint":%q,"choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"AbC1"}`,
		b.id, b.created, b.model, b.fingerprint, delta))
}

// Text adds a content piece.
func (b *OpenAIStream) Text(piece string) *OpenAIStream {
	return b.Chunk(`{"content":` + quote(piece) + `}`)
}

// Reasoning adds a reasoning piece the way DeepSeek, vLLM and Ollama stream it
// (delta.reasoning_content).
func (b *OpenAIStream) Reasoning(piece string) *OpenAIStream {
	return b.Chunk(`{"reasoning_content":` + quote(piece) + `}`)
}

// ToolCall adds the first chunk of call index: its id, type, name and a first argument
// piece (usually "").
func (b *OpenAIStream) ToolCall(index int, id, name, args string) *OpenAIStream {
	return b.Chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`,
		index, id, name, quote(args)))
}

// ToolArgs adds a piece of call index's arguments.
func (b *OpenAIStream) ToolArgs(index int, piece string) *OpenAIStream {
	return b.Chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, index, quote(piece)))
}

// Finish adds the chunk that ends the choice: stop, tool_calls, length or content_filter.
func (b *OpenAIStream) Finish(reason string) *OpenAIStream {
	return b.data(fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":%d,"model":%q,"service_tier":"default","system_fingerprint":%q,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":%q}],"usage":null,"obfuscation":"x9"}`,
		b.id, b.created, b.model, b.fingerprint, reason))
}

// Usage adds the usage chunk that follows the finish when include_usage was asked for.
func (b *OpenAIStream) Usage(prompt, completion int64) *OpenAIStream {
	return b.data(fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":%d,"model":%q,"service_tier":"default","system_fingerprint":%q,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"q"}`,
		b.id, b.created, b.model, b.fingerprint, prompt, completion, prompt+completion))
}

// Done adds the "data: [DONE]" line that ends the stream.
func (b *OpenAIStream) Done() *OpenAIStream { return b.raw("data: [DONE]\n\n") }

// Error adds the error object OpenAI sends when a stream fails after it started.
func (b *OpenAIStream) Error(typ, message string) *OpenAIStream {
	return b.data(fmt.Sprintf(`{"error":{"message":%s,"type":%q,"param":null,"code":null}}`, quote(message), typ))
}

// Comment adds an SSE comment line, as proxies send to keep a connection open.
func (b *OpenAIStream) Comment(text string) *OpenAIStream { return b.raw(": " + text + "\n\n") }

// Pause waits d before the next write.
func (b *OpenAIStream) Pause(d time.Duration) *OpenAIStream {
	b.steps = append(b.steps, Step{Delay: d})
	return b
}

// Drop cuts the connection here.
func (b *OpenAIStream) Drop() *OpenAIStream {
	b.steps = append(b.steps, Step{Drop: true})
	return b
}

// Reply is the stream as a 200 reply.
func (b *OpenAIStream) Reply() Reply { return Reply{Steps: append([]Step(nil), b.steps...)} }

func (b *OpenAIStream) data(json string) *OpenAIStream { return b.raw("data: " + json + "\n\n") }

func (b *OpenAIStream) raw(s string) *OpenAIStream {
	b.steps = append(b.steps, Step{Raw: s})
	return b
}

// OpenAIText is a whole streamed text answer: the pieces, finish "stop", usage, [DONE].
func OpenAIText(model string, pieces ...string) Reply {
	b := NewOpenAIStream(model)
	for _, p := range pieces {
		b.Text(p)
	}
	return b.Finish("stop").Usage(10, int64(len(pieces))).Done().Reply()
}

// OpenAIToolCall is a whole streamed answer of one tool call whose arguments arrive in the
// pieces given: finish "tool_calls", usage, [DONE].
func OpenAIToolCall(model, id, name string, argPieces ...string) Reply {
	b := NewOpenAIStream(model).ToolCall(0, id, name, "")
	for _, p := range argPieces {
		b.ToolArgs(0, p)
	}
	return b.Finish("tool_calls").Usage(10, int64(len(argPieces))).Done().Reply()
}

// OpenAIError is an HTTP error as OpenAI answers it: {"error": {message, type, param,
// code}}. A 429 says rate_limit_exceeded.
func OpenAIError(status int, typ, message string) Reply {
	code := "null"
	if status == http.StatusTooManyRequests {
		code = `"rate_limit_exceeded"`
	}
	return Reply{Status: status, Body: fmt.Sprintf(`{
    "error": {
        "message": %s,
        "type": %q,
        "param": null,
        "code": %s
    }
}
`, quote(message), typ, code), Header: http.Header{"X-Request-Id": {"req_" + strconv.Itoa(status) + "abc"}}}
}

// OpenAIContextExceeded is OpenAI's refusal of a request longer than the model's context
// window, byte for byte as api.openai.com answers it (400, invalid_request_error, param
// "messages", code context_length_exceeded): limit is the window, got what the request
// took, both in tokens.
func OpenAIContextExceeded(limit, got int) Reply {
	msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, got)
	return Reply{Status: http.StatusBadRequest, Body: fmt.Sprintf(`{
    "error": {
        "message": %s,
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded"
    }
}
`, quote(msg)), Header: http.Header{"X-Request-Id": {"req_400ctx"}}}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
