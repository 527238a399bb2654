package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go"
)

// anthropicBody writes params as the JSON body of a streamed Messages request in one pass
// into one buffer, for the reason openaiBody does: the SDK marshals each level into bytes
// of its own, copies them into the level above, then copies the whole body again to set
// "stream". The blocks jean2 makes (text, image, tool_use, tool_result) are written here;
// any other block and the tools (a few kilobytes) go through the SDK's MarshalJSON. The
// bytes are the SDK's: it escapes <, > and & and compacts each call's input, and so does
// this (TestAnthropicBodyIsTheSDKs).
func anthropicBody(params anthropic.MessageNewParams, size int) ([]byte, error) {
	b := make([]byte, 0, size)
	b = append(b, `{"max_tokens":`...)
	b = strconv.AppendInt(b, params.MaxTokens, 10)
	var err error
	if len(params.Messages) > 0 {
		b = append(b, `,"messages":[`...)
		for i, m := range params.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"content":[`...)
			if b, err = appendAnthropicBlocks(b, m.Content); err != nil {
				return nil, fmt.Errorf("message %d: %w", i+1, err)
			}
			b = append(b, `],"role":`...)
			b = appendJSONStringHTML(b, string(m.Role))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"model":`...)
	b = appendJSONStringHTML(b, string(params.Model))
	if len(params.System) > 0 {
		b = append(b, `,"system":[`...)
		for i, s := range params.System {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendAnthropicText(b, s.Text)
		}
		b = append(b, ']')
	}
	if len(params.Tools) > 0 {
		b = append(b, `,"tools":`...)
		if b, err = appendMarshalled(b, params.Tools); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}
	return append(b, `,"stream":true}`...), nil
}

func appendAnthropicBlocks(b []byte, blocks []anthropic.ContentBlockParamUnion) ([]byte, error) {
	var err error
	for i, blk := range blocks {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case blk.OfText != nil && blk.OfText.CacheControl.Type == "" && len(blk.OfText.Citations) == 0:
			b = appendAnthropicText(b, blk.OfText.Text)
		case blk.OfImage != nil && blk.OfImage.Source.OfBase64 != nil && blk.OfImage.CacheControl.Type == "":
			b = appendAnthropicImage(b, blk.OfImage.Source.OfBase64)
		case blk.OfToolUse != nil && blk.OfToolUse.CacheControl.Type == "":
			b, err = appendAnthropicToolUse(b, blk.OfToolUse)
		case blk.OfToolResult != nil && blk.OfToolResult.CacheControl.Type == "":
			b, err = appendAnthropicToolResult(b, blk.OfToolResult)
		default:
			b, err = appendMarshalled(b, blk)
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendAnthropicText(b []byte, text string) []byte {
	b = append(b, `{"text":`...)
	b = appendJSONStringHTML(b, text)
	return append(b, `,"type":"text"}`...)
}

func appendAnthropicImage(b []byte, src *anthropic.Base64ImageSourceParam) []byte {
	b = append(b, `{"source":{"data":`...)
	b = appendJSONStringHTML(b, src.Data)
	b = append(b, `,"media_type":`...)
	b = appendJSONStringHTML(b, string(src.MediaType))
	return append(b, `,"type":"base64"},"type":"image"}`...)
}

func appendAnthropicToolUse(b []byte, u *anthropic.ToolUseBlockParam) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendJSONStringHTML(b, u.ID)
	b = append(b, `,"input":`...)
	raw, ok := u.Input.(json.RawMessage)
	if !ok {
		return nil, fmt.Errorf("tool call %s: its input is a %T, not JSON", u.ID, u.Input)
	}
	// As encoding/json writes a RawMessage: compacted, <, > and & escaped.
	start := len(b)
	w := bytes.NewBuffer(b)
	if err := json.Compact(w, raw); err != nil {
		return nil, fmt.Errorf("tool call %s: input: %w", u.ID, err)
	}
	b = w.Bytes()
	if bytes.ContainsAny(b[start:], "<>&\u2028\u2029") {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, b[start:])
		b = append(b[:start], esc.Bytes()...)
	}
	b = append(b, `,"name":`...)
	b = appendJSONStringHTML(b, u.Name)
	return append(b, `,"type":"tool_use"}`...), nil
}

func appendAnthropicToolResult(b []byte, r *anthropic.ToolResultBlockParam) ([]byte, error) {
	b = append(b, `{"tool_use_id":`...)
	b = appendJSONStringHTML(b, r.ToolUseID)
	if r.IsError.Valid() {
		b = append(b, `,"is_error":`...)
		b = strconv.AppendBool(b, r.IsError.Value)
	}
	if len(r.Content) > 0 {
		b = append(b, `,"content":[`...)
		for i, c := range r.Content {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			switch {
			case c.OfText != nil && c.OfText.CacheControl.Type == "" && len(c.OfText.Citations) == 0:
				b = appendAnthropicText(b, c.OfText.Text)
			case c.OfImage != nil && c.OfImage.Source.OfBase64 != nil && c.OfImage.CacheControl.Type == "":
				b = appendAnthropicImage(b, c.OfImage.Source.OfBase64)
			default:
				b, err = appendMarshalled(b, c)
			}
			if err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	return append(b, `,"type":"tool_result"}`...), nil
}

// appendMarshalled writes v through its MarshalJSON, as the SDK would have.
func appendMarshalled(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}
