package provider

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// openaiBody writes req as the JSON body of a streamed chat completion in one pass into
// one buffer sized from the request. The SDK's parameter structs marshal every level
// into bytes of its own and copy them into the level above, then copy the whole body once
// more to set "stream": with every request carrying the whole conversation, that was
// most of what a long session allocated. The bytes are the ones the SDK sent, field for
// field (TestOpenAIBodyIsTheSDKs).
func (p *OpenAI) openaiBody(req Request) ([]byte, error) {
	if req.Model == "" {
		return nil, errors.New("the request names no model; set a default model for the provider or choose one for the session")
	}
	msgs := req.Messages
	if p.noImages {
		msgs = withoutImages(msgs)
	}
	b := make([]byte, 0, bodySize(req.System, msgs))
	b = append(b, '{')
	var err error
	if req.System != "" || len(msgs) > 0 { // the SDK leaves an empty list out
		b = append(b, `"messages":[`...)
		if b, err = appendOpenAIMessages(b, req.System, msgs); err != nil {
			return nil, err
		}
		b = append(b, "],"...)
	}
	b = append(b, `"model":`...)
	b = appendJSONString(b, req.Model)
	if max := firstPositive(req.MaxTokens, p.maxTokens); max > 0 {
		if p.completionTokens {
			b = append(b, `,"max_completion_tokens":`...)
		} else {
			b = append(b, `,"max_tokens":`...)
		}
		b = strconv.AppendInt(b, int64(max), 10)
	}
	b = append(b, `,"stream_options":{"include_usage":true}`...)
	if b, err = appendOpenAITools(b, req); err != nil {
		return nil, err
	}
	return append(b, `,"stream":true}`...), nil
}

// bodySize guesses the body's length so that it is allocated once: the texts with a
// little room for escapes, the images in base64, and the framing of each message.
func bodySize(system string, msgs []Message) int {
	n := 512 + len(system)
	for _, m := range msgs {
		n += 160 + len(m.Text) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += 96 + len(c.ID) + len(c.Name) + len(c.Args)*9/8
		}
		for _, img := range m.Images {
			n += 160 + len(img.MediaType) + base64.StdEncoding.EncodedLen(len(img.Data))
		}
	}
	return n + n/16
}

// appendOpenAIMessages writes the messages: the system prompt first, and a tool result's
// images moved to a user message after the run of tool messages (a chat completions tool
// message takes text only; see openaiToolImages).
func appendOpenAIMessages(b []byte, system string, msgs []Message) ([]byte, error) {
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	if system != "" {
		sep()
		b = append(b, `{"content":`...)
		b = appendJSONString(b, system)
		b = append(b, `,"role":"system"}`...)
	}
	var toolImages []Message // tool results whose images are still to be sent
	for i, m := range msgs {
		if m.Role == RoleTool && len(m.Images) > 0 {
			toolImages = append(toolImages, m)
			m = withToolImagesMoved(m)
		}
		sep()
		var err error
		if b, err = appendOpenAIMessage(b, m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i+1, err)
		}
		if len(toolImages) > 0 && (i+1 == len(msgs) || msgs[i+1].Role != RoleTool) {
			b = append(b, ',')
			b = appendToolImagesMessage(b, toolImages)
			toolImages = toolImages[:0]
		}
	}
	return b, nil
}

func appendOpenAIMessage(b []byte, m Message) ([]byte, error) {
	switch m.Role {
	case RoleUser:
		b = append(b, `{"content":`...)
		if len(m.Images) == 0 {
			b = appendJSONString(b, m.Text)
		} else {
			b = append(b, '[')
			if m.Text != "" {
				b = appendTextPart(b, m.Text)
			}
			for i, img := range m.Images {
				if i > 0 || m.Text != "" {
					b = append(b, ',')
				}
				b = appendImagePart(b, img)
			}
			b = append(b, ']')
		}
		return append(b, `,"role":"user"}`...), nil
	case RoleAssistant:
		return appendAssistant(b, m), nil
	case RoleTool:
		if m.ToolCallID == "" {
			return nil, errors.New("a tool message needs the id of the call it answers")
		}
		b = append(b, `{"content":`...)
		b = appendJSONString(b, m.Text)
		b = append(b, `,"tool_call_id":`...)
		b = appendJSONString(b, m.ToolCallID)
		return append(b, `,"role":"tool"}`...), nil
	}
	return nil, fmt.Errorf("role %q is not one of user, assistant, tool", m.Role)
}

// appendAssistant writes an assistant message; its content is left out only when it has
// tool calls and no text.
func appendAssistant(b []byte, m Message) []byte {
	b = append(b, '{')
	if m.Text != "" || len(m.ToolCalls) == 0 {
		b = append(b, `"content":`...)
		b = appendJSONString(b, m.Text)
		b = append(b, ',')
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `"tool_calls":[`...)
		for i, c := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendJSONString(b, c.ID)
			b = append(b, `,"function":{"arguments":`...)
			b = appendJSONString(b, c.Args)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, c.Name)
			b = append(b, `},"type":"function"}`...)
		}
		b = append(b, "],"...)
	}
	return append(b, `"role":"assistant"}`...)
}

// withToolImagesMoved is a tool result whose images go to the user message after the run
// of tool results: its text says where they went.
func withToolImagesMoved(m Message) Message {
	for _, img := range m.Images {
		m.Text += "\n" + imageStandIn(img, "in the user message after the tool results")
	}
	m.Images = nil
	return m
}

// appendToolImagesMessage writes the user message that carries the images of a run of
// tool results, each result's images after a line naming its call.
func appendToolImagesMessage(b []byte, results []Message) []byte {
	b = append(b, `{"content":[`...)
	for i, m := range results {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTextPart(b, fmt.Sprintf("The images of the result of tool call %s:", m.ToolCallID))
		for _, img := range m.Images {
			b = append(b, ',')
			b = appendImagePart(b, img)
		}
	}
	return append(b, `],"role":"user"}`...)
}

func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"text":`...)
	b = appendJSONString(b, text)
	return append(b, `,"type":"text"}`...)
}

// appendImagePart writes an image as a data URL, encoding straight into the body.
func appendImagePart(b []byte, img Image) []byte {
	b = append(b, `{"image_url":{"url":"data:`...)
	b = appendJSONEscaped(b, img.MediaType, false)
	b = append(b, ";base64,"...)
	b = base64.StdEncoding.AppendEncode(b, img.Data)
	return append(b, `"},"type":"image_url"}`...)
}

// appendOpenAITools writes the tools. Each schema goes through a map, as the SDK sent it
// (keys sorted, numbers as float64): tools are a few kilobytes, the same every request.
func appendOpenAITools(b []byte, req Request) ([]byte, error) {
	if len(req.Tools) == 0 {
		return b, nil
	}
	b = append(b, `,"tools":[`...)
	for i, t := range req.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"function":{"name":`...)
		b = appendJSONString(b, t.Function.Name)
		if t.Function.Description != "" {
			b = append(b, `,"description":`...)
			b = appendJSONString(b, t.Function.Description)
		}
		if len(t.Function.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Function.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Function.Name, err)
			}
			b = append(b, `,"parameters":`...)
			var err error
			if b, err = appendJSONValue(b, schema); err != nil {
				return nil, fmt.Errorf("tool %s: parameters: %w", t.Function.Name, err)
			}
		}
		b = append(b, `},"type":"function"}`...)
	}
	return append(b, ']'), nil
}

// appendJSONValue writes v as encoding/json does without HTML escapes, as the SDK did.
func appendJSONValue(b []byte, v any) ([]byte, error) {
	w := bytes.NewBuffer(b)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := w.Bytes()
	return out[:len(out)-1], nil // Encode's newline
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string exactly as encoding/json does with HTML
// escaping off (the SDK's encoding): control characters, quote and backslash escaped
// (\b \f \n \r \t short), invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
// FuzzAppendJSONString holds it to encoding/json.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendJSONEscaped(b, s, false)
	return append(b, '"')
}

// appendJSONStringHTML is appendJSONString with <, > and & escaped too, as encoding/json
// does by default (the Anthropic SDK's encoding).
func appendJSONStringHTML(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendJSONEscaped(b, s, true)
	return append(b, '"')
}

// appendJSONEscaped writes s escaped for the inside of a JSON string.
func appendJSONEscaped(b []byte, s string, html bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}
