package providertest

import (
	"fmt"
	"net/http"
	"time"
)

// AnthropicStream builds a Messages stream as api.anthropic.com writes it: named events
// ("event: <name>\ndata: <json>\n\n"), message_start with the message and its input
// usage, a ping, then content blocks by index (content_block_start, content_block_delta
// with text_delta or input_json_delta, content_block_stop), message_delta with the stop
// reason and the output usage, and message_stop.
type AnthropicStream struct {
	model  string
	blocks int // blocks opened so far; the last one opened is blocks-1
	steps  []Step
}

// NewAnthropicStream starts a stream for model with message_start (reporting inputTokens)
// and a ping, as real streams open.
func NewAnthropicStream(model string, inputTokens int64) *AnthropicStream {
	b := &AnthropicStream{model: model}
	b.Event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}`,
		model, inputTokens))
	return b.Ping()
}

// Event adds a raw named event.
func (b *AnthropicStream) Event(name, data string) *AnthropicStream {
	b.steps = append(b.steps, Step{Raw: "event: " + name + "\ndata: " + data + "\n\n"})
	return b
}

// Ping adds the ping event Anthropic sends now and then.
func (b *AnthropicStream) Ping() *AnthropicStream { return b.Event("ping", `{"type": "ping"}`) }

// Text adds a whole text block streamed in pieces.
func (b *AnthropicStream) Text(pieces ...string) *AnthropicStream {
	b.BeginText()
	for _, p := range pieces {
		b.TextDelta(p)
	}
	return b.EndBlock()
}

// ToolUse adds a whole tool_use block whose input arrives in the pieces given (the first
// input_json_delta of a real stream is often "").
func (b *AnthropicStream) ToolUse(id, name string, pieces ...string) *AnthropicStream {
	b.BeginToolUse(id, name)
	for _, p := range pieces {
		b.InputDelta(p)
	}
	return b.EndBlock()
}

// BeginText opens the next content block, a text block.
func (b *AnthropicStream) BeginText() *AnthropicStream {
	b.blocks++
	return b.Event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, b.blocks-1))
}

// BeginToolUse opens the next content block, a tool_use block.
func (b *AnthropicStream) BeginToolUse(id, name string) *AnthropicStream {
	b.blocks++
	return b.Event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, b.blocks-1, id, name))
}

// BeginThinking opens the next content block, a thinking block (extended thinking).
func (b *AnthropicStream) BeginThinking() *AnthropicStream {
	b.blocks++
	return b.Event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}}`, b.blocks-1))
}

// TextDelta adds a text_delta to the block opened last.
func (b *AnthropicStream) TextDelta(text string) *AnthropicStream {
	return b.Event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, b.blocks-1, quote(text)))
}

// InputDelta adds an input_json_delta to the block opened last.
func (b *AnthropicStream) InputDelta(partialJSON string) *AnthropicStream {
	return b.Event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, b.blocks-1, quote(partialJSON)))
}

// ThinkingDelta adds a thinking_delta to the block opened last.
func (b *AnthropicStream) ThinkingDelta(text string) *AnthropicStream {
	return b.Event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%s}}`, b.blocks-1, quote(text)))
}

// EndBlock closes the block opened last.
func (b *AnthropicStream) EndBlock() *AnthropicStream {
	return b.Event("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, b.blocks-1))
}

// Stop ends the message: message_delta with the stop reason (end_turn, tool_use,
// max_tokens, stop_sequence, refusal) and the output tokens, then message_stop.
func (b *AnthropicStream) Stop(reason string, outputTokens int64) *AnthropicStream {
	b.Event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, reason, outputTokens))
	return b.Event("message_stop", `{"type":"message_stop"}`)
}

// Error adds the error event Anthropic sends when a stream fails after it started, e.g.
// overloaded_error.
func (b *AnthropicStream) Error(typ, message string) *AnthropicStream {
	return b.Event("error", fmt.Sprintf(`{"type": "error", "error": {"type": %q, "message": %s}}`, typ, quote(message)))
}

// Pause waits d before the next write.
func (b *AnthropicStream) Pause(d time.Duration) *AnthropicStream {
	b.steps = append(b.steps, Step{Delay: d})
	return b
}

// Drop cuts the connection here.
func (b *AnthropicStream) Drop() *AnthropicStream {
	b.steps = append(b.steps, Step{Drop: true})
	return b
}

// Reply is the stream as a 200 reply.
func (b *AnthropicStream) Reply() Reply { return Reply{Steps: append([]Step(nil), b.steps...)} }

// AnthropicText is a whole streamed text answer: one text block of the pieces, end_turn.
func AnthropicText(model string, pieces ...string) Reply {
	return NewAnthropicStream(model, 10).Text(pieces...).Stop("end_turn", int64(len(pieces))).Reply()
}

// AnthropicToolUse is a whole streamed answer of one tool_use block whose input arrives
// in the pieces given, stopped with tool_use.
func AnthropicToolUse(model, id, name string, pieces ...string) Reply {
	return NewAnthropicStream(model, 10).ToolUse(id, name, pieces...).Stop("tool_use", int64(len(pieces))).Reply()
}

// AnthropicError is an HTTP error as Anthropic answers it: {"type": "error", "error":
// {type, message}, "request_id"}. Use 429 rate_limit_error, 529 overloaded_error, 500
// api_error.
func AnthropicError(status int, typ, message string) Reply {
	return Reply{Status: status,
		Body:   fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%s},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`, typ, quote(message)),
		Header: http.Header{"Request-Id": {"req_011CSHoEeqs5C35K2UUqR7Fy"}}}
}
