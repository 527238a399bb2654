// Package provider owns the models the agent talks to: one small streaming interface
// (Provider) with two implementations, OpenAI (any server that speaks OpenAI's chat
// completions: OpenAI, OpenRouter, Ollama, vLLM, llama.cpp…) and Anthropic (the Messages
// API), both on the official Go SDKs; retries with backoff before any output; the
// configuration from the environment and $JEAN2_HOME/providers.json; and ForTools, the
// tool.LLM that ctx.llm uses.
//
// Keys never reach tools: providers and their keys live only in the host process. A tool
// sees ctx.llm (ForTools), which can ask for text and structured answers and nothing else;
// a worker's environment is built from its declared variables only (policy.ToolEnv).
// Configs print, log and marshal with their keys redacted (Secret).
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/jean2/jean2/tool"
)

// Provider is a model service that streams answers.
type Provider interface {
	// Stream sends req and returns the answer as a stream of events. Errors that happen
	// before any output (rate limits, overloads, 5xx, dropped connections) are retried
	// with backoff first; what is returned then is a *Error.
	Stream(ctx context.Context, req Request) (Stream, error)
}

// Stream is one answer being received. Next returns the events in order; after the
// EventFinish event it returns io.EOF. An error in the middle of the answer is returned by
// Next as a *Error with Partial set, and ends the stream. Close releases the connection; it
// may be called at any time, more than once.
type Stream interface {
	Next() (Event, error)
	Close() error
}

// Role says who wrote a message of a request.
type Role string

// Request roles. RoleTool is a tool call's outcome, answering an assistant's call.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Request is one call to a model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []tool.Function // as tool.Registry.ListForLLM gives them
	MaxTokens int             // 0: the provider's configured default
}

// Message is one message of the conversation sent to the model.
type Message struct {
	Role Role
	// Text is the user's or the assistant's text, or the tool call's outcome as the model
	// is to see it.
	Text      string
	Images    []Image    // user messages, and tool messages whose result had images
	ToolCalls []ToolCall // assistant messages only: the calls the model made
	// ToolCallID is the call a tool message answers.
	ToolCallID string
	// IsError marks a tool message whose call failed. Anthropic is told; OpenAI-compatible
	// servers see only the text.
	IsError bool
}

// ToolCall is a call the model made.
type ToolCall struct {
	ID   string
	Name string
	Args string // the arguments' JSON as the model wrote it
}

// Image is an image given to the model with a user message.
type Image struct {
	MediaType string // image/png, image/jpeg, image/gif, image/webp
	Data      []byte
}

// EventKind says what an Event carries.
type EventKind uint8

// Event kinds.
const (
	// EventText: Text is the next piece of the answer.
	EventText EventKind = iota + 1
	// EventReasoning: Text is the next piece of the model's reasoning, which some servers
	// stream apart from the answer (reasoning_content, thinking). Not part of the answer.
	EventReasoning
	// EventToolCallStart: the model starts a tool call; Index numbers the calls of this
	// answer 0, 1, 2… in order, ID and Name say which call and tool.
	EventToolCallStart
	// EventToolCallArgs: Text is the next piece of call Index's arguments JSON. A call
	// whose arguments never came gets "{}".
	EventToolCallArgs
	// EventUsage: Usage holds the tokens of the whole answer; sent once, before Finish,
	// when the server reported them.
	EventUsage
	// EventFinish: the answer is complete; Finish says why the model stopped.
	EventFinish
)

func (k EventKind) String() string {
	switch k {
	case EventText:
		return "text"
	case EventReasoning:
		return "reasoning"
	case EventToolCallStart:
		return "tool_call_start"
	case EventToolCallArgs:
		return "tool_call_args"
	case EventUsage:
		return "usage"
	case EventFinish:
		return "finish"
	}
	return "unknown"
}

// Event is one step of a streamed answer; which fields are set depends on Kind.
type Event struct {
	Kind   EventKind
	Text   string
	Index  int
	ID     string
	Name   string
	Usage  Usage
	Finish FinishReason
}

// Usage counts the tokens of one answer.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// FinishReason says why the model stopped.
type FinishReason string

// Finish reasons, the same for every provider. A server's reason that fits none of these
// is passed on as it came.
const (
	FinishStop          FinishReason = "stop"           // the answer is complete
	FinishToolCalls     FinishReason = "tool_calls"     // the model wants its tool calls run
	FinishLength        FinishReason = "length"         // cut off at the token limit
	FinishContentFilter FinishReason = "content_filter" // refused or filtered by the provider
)

// Response is a whole answer, gathered by Collect.
type Response struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCall
	Usage     Usage
	Finish    FinishReason
}

// Collect reads s to its end and gathers the answer; it closes s. On an error it returns
// what arrived before it along with the error.
func Collect(s Stream) (Response, error) {
	defer s.Close()
	var r Response
	var text, reasoning strings.Builder
	var args []strings.Builder
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.Text, r.Reasoning = text.String(), reasoning.String()
			fillArgs(&r, args)
			return r, err
		}
		switch ev.Kind {
		case EventText:
			text.WriteString(ev.Text)
		case EventReasoning:
			reasoning.WriteString(ev.Text)
		case EventToolCallStart:
			for len(r.ToolCalls) <= ev.Index {
				r.ToolCalls = append(r.ToolCalls, ToolCall{})
				args = append(args, strings.Builder{})
			}
			r.ToolCalls[ev.Index].ID, r.ToolCalls[ev.Index].Name = ev.ID, ev.Name
		case EventToolCallArgs:
			if ev.Index >= 0 && ev.Index < len(args) {
				args[ev.Index].WriteString(ev.Text)
			}
		case EventUsage:
			r.Usage = ev.Usage
		case EventFinish:
			r.Finish = ev.Finish
		}
	}
	r.Text, r.Reasoning = text.String(), reasoning.String()
	fillArgs(&r, args)
	return r, nil
}

func fillArgs(r *Response, args []strings.Builder) {
	for i := range r.ToolCalls {
		r.ToolCalls[i].Args = args[i].String()
	}
}

// argsObject returns args when it is a JSON object, else "{}": a provider that takes the
// arguments as an object cannot be sent what the model wrote when it does not parse.
func argsObject(args string) json.RawMessage {
	trimmed := strings.TrimSpace(args)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	return json.RawMessage("{}")
}
