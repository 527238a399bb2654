package tool

import (
	"encoding/json"
	"fmt"
)

// UserRejection is the conventional error of a call a person refused.
const UserRejection = "USER_REJECTION"

// Result is what a call returns. It holds both result shapes of the guides: jean2's
// {success, result, error, visualization} and Jx's {success, data, error, summary}.
// Normalize folds Data into Result so the rest of the system reads one field.
type Result struct {
	Success       bool            `json:"success"`
	Result        json.RawMessage `json:"result,omitempty"`
	Data          json.RawMessage `json:"data,omitempty"`
	Error         string          `json:"error,omitempty"`
	Summary       string          `json:"summary,omitempty"`
	Visualization json.RawMessage `json:"visualization,omitempty"`
	// Content is what the result carries beyond JSON (images, audio, resources, text), in
	// MCP's shape; checked by CheckContent. An MCP client gets it as the call's content, a
	// model its images as images where the model takes them (ContentModelText for the rest).
	Content []Content `json:"content,omitempty"`
	// ProtocolError, when set, fails the call as a protocol error (see ProtocolError); the
	// result is then a failure whose Error is its message.
	ProtocolError *ProtocolError `json:"protocolError,omitempty"`

	// known holds the Result that Success or an Object made, valid JSON that ModelJSON need
	// not walk again on every call; the Result starts at known[knownAt]. An Object's known
	// is the model's whole JSON (knownAt > 0: modelPrefix, the result, '}'). A Result
	// replaced since is another slice, and is checked.
	known   []byte
	knownAt int
}

// Errorf builds a failed result.
func Errorf(format string, args ...any) Result {
	return Result{Success: false, Error: fmt.Sprintf(format, args...)}
}

// Success builds a successful result from any JSON-serializable value.
func Success(v any) Result {
	raw, err := json.Marshal(v)
	if err != nil {
		return Errorf("tool result cannot be serialized: %v", err)
	}
	return Result{Success: true, Result: raw, known: raw}
}

// knownValid reports whether Result is still the JSON Success or an Object made.
func (r Result) knownValid() bool {
	return len(r.Result) > 0 && r.knownAt < len(r.known) && &r.known[r.knownAt] == &r.Result[0] &&
		len(r.known) == r.knownAt+len(r.Result)+min(r.knownAt, 1)
}

// Normalize returns the result in jean2's shape: Data (Jx) becomes Result when Result is
// empty, a failed result always has an error text, and JSON null fields are dropped.
func (r Result) Normalize() Result {
	if isNull(r.Result) {
		r.Result = nil
	}
	if isNull(r.Data) {
		r.Data = nil
	}
	if isNull(r.Visualization) {
		r.Visualization = nil
	}
	if r.Result == nil && r.Data != nil {
		r.Result = r.Data
	}
	r.Data = nil
	if r.ProtocolError != nil {
		r.Success = false
		if r.Error == "" {
			r.Error = r.ProtocolError.Message
		}
	}
	if !r.Success && r.Error == "" {
		r.Error = "tool reported failure without an error message"
	}
	return r
}

// ForModel is the part of a result a model sees: everything but the visualization.
type ForModel struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
	Summary string          `json:"summary,omitempty"`
}

// ModelJSON is the result as the model sees it (no visualization), serialized. It is built
// by hand because it runs on every call: the result is already JSON.
func (r Result) ModelJSON() []byte {
	n := r.Normalize()
	known := n.knownValid()
	if known && n.knownAt > 0 && n.Success && n.Error == "" && n.Summary == "" {
		return n.known // an Object's result, already wrapped as the model sees it
	}
	if n.Result != nil && !known && !json.Valid(n.Result) {
		n = Result{Error: "tool result is not valid JSON"}
	}
	buf := make([]byte, 0, len(n.Result)+len(n.Error)+len(n.Summary)+48)
	if n.Success {
		buf = append(buf, `{"success":true`...)
	} else {
		buf = append(buf, `{"success":false`...)
	}
	if n.Result != nil {
		buf = append(buf, `,"result":`...)
		buf = append(buf, n.Result...)
	}
	if n.Error != "" {
		buf = append(buf, `,"error":`...)
		buf = appendJSONString(buf, n.Error)
	}
	if n.Summary != "" {
		buf = append(buf, `,"summary":`...)
		buf = appendJSONString(buf, n.Summary)
	}
	return append(buf, '}')
}

func appendJSONString(buf []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(buf, q...)
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
