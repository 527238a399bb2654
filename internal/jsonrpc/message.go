package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Standard JSON-RPC 2.0 error codes. Applications add their own (see internal/workerproto).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Request is an incoming request or notification. ID is the raw JSON id (a number or a
// string) and is nil for a notification.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// IsNotification reports whether the sender expects no answer.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Error is a JSON-RPC error object. A Handler returns one to answer with that code; Call
// returns one when the peer answered with an error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "jsonrpc error " + strconv.Itoa(e.Code)
	}
	return e.Message
}

// NewError builds an Error whose Data is data serialized; data that cannot be serialized is
// dropped, because an error about an error helps nobody.
func NewError(code int, message string, data any) *Error {
	e := &Error{Code: code, Message: message}
	if data != nil {
		if raw, err := json.Marshal(data); err == nil && string(raw) != "null" {
			e.Data = raw
		}
	}
	return e
}

// DecodeData unmarshals e.Data into v; it reports false when there is no data or it does
// not fit v.
func (e *Error) DecodeData(v any) bool {
	if len(e.Data) == 0 {
		return false
	}
	return json.Unmarshal(e.Data, v) == nil
}

// message is one line on the wire, any of the three kinds.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

type kind int

const (
	kindRequest kind = iota + 1
	kindNotification
	kindResponse
)

// decodeError is a line that could not be understood. ID is set when the sender's id could
// still be found, so it can be told what was wrong.
type decodeError struct {
	ID   json.RawMessage
	Code int
	Err  error
}

func (e *decodeError) Error() string { return e.Err.Error() }

// decodeMessage parses and classifies one line. The raw fields of the message it returns
// alias line.
func decodeMessage(line []byte) (message, kind, error) {
	if m, k, ok := decodeFast(line); ok {
		return m, k, nil
	}
	return decodeSlow(line)
}

// decodeFast reads the common messages in one pass (see scan.go). It gives up (ok false),
// leaving the line to decodeSlow, on anything unusual: an error member (rare, and its
// object is decoded by encoding/json anyway), an escaped key or string, a key that
// encoding/json would match only case-insensitively, a repeated key, a message that is
// not valid. Whatever it accepts, decodeSlow accepts the same way.
func decodeFast(line []byte) (message, kind, bool) {
	var fr fastReader
	if !ObjectFields(line, fr.member) || fr.seen&sawJSONRPC == 0 {
		return message{}, 0, false
	}
	m := fr.m
	if isNull(m.ID) {
		m.ID = nil
	}
	if m.ID != nil && !validID(m.ID) {
		return message{}, 0, false
	}
	switch {
	case m.Method != "":
		if m.Result != nil {
			return message{}, 0, false
		}
		if m.ID == nil {
			return m, kindNotification, true
		}
		return m, kindRequest, true
	case m.ID != nil && m.Result != nil:
		return m, kindResponse, true
	}
	return message{}, 0, false
}

// The members decodeFast has seen, each allowed once.
const (
	sawJSONRPC = 1 << iota
	sawID
	sawMethod
	sawParams
	sawResult
)

// fastReader collects a message's members for decodeFast.
type fastReader struct {
	m    message
	seen uint8
}

func (fr *fastReader) once(bit uint8) bool {
	if fr.seen&bit != 0 {
		return false
	}
	fr.seen |= bit
	return true
}

// member takes one member of the message (an ObjectFields callback); false gives the line
// up to decodeSlow.
func (fr *fastReader) member(key []byte, escaped bool, v []byte) bool {
	if escaped {
		return false
	}
	switch string(key) {
	case "jsonrpc":
		if !fr.once(sawJSONRPC) || string(v) != `"2.0"` {
			return false
		}
		fr.m.JSONRPC = "2.0"
	case "id":
		if !fr.once(sawID) {
			return false
		}
		fr.m.ID = v
	case "method":
		name, ok := plainString(v)
		if !fr.once(sawMethod) || !ok {
			return false
		}
		fr.m.Method = name
	case "params":
		if !fr.once(sawParams) {
			return false
		}
		fr.m.Params = v
	case "result":
		if !fr.once(sawResult) {
			return false
		}
		fr.m.Result = v
	default:
		// encoding/json matches field names case-insensitively; leave those to it.
		return !knownKeyFold(key)
	}
	return true
}

// plainString returns the JSON string v's text when it has no escapes and only ASCII
// (bytes encoding/json may replace are left to it).
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	name := v[1 : len(v)-1]
	for _, c := range name {
		if c == '\\' || c >= 0x80 {
			return "", false
		}
	}
	return string(name), true
}

// knownKeyFold reports whether encoding/json could match key to a member of message:
// ignoring ASCII case, or by Unicode folding (ſ is s to it), which any non-ASCII byte
// leaves to the slow path to judge.
func knownKeyFold(key []byte) bool {
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	for _, k := range [...]string{"jsonrpc", "id", "method", "params", "result", "error"} {
		if len(key) == len(k) && equalFoldASCII(key, k) {
			return true
		}
	}
	return false
}

func equalFoldASCII(b []byte, s string) bool {
	for i := range b {
		if b[i]|0x20 != s[i]|0x20 {
			return false
		}
	}
	return true
}

// decodeSlow parses and classifies one line with encoding/json.
func decodeSlow(line []byte) (message, kind, error) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return message{}, 0, &decodeError{ID: salvageID(line), Code: CodeParseError, Err: fmt.Errorf("parse error: %w", err)}
	}
	if m.JSONRPC != "2.0" {
		return message{}, 0, invalid(m.ID, `"jsonrpc" must be "2.0"`)
	}
	id := m.ID
	if isNull(id) {
		id = nil
	}
	if id != nil && !validID(id) {
		return message{}, 0, &decodeError{Code: CodeInvalidRequest, Err: fmt.Errorf("invalid request: id %s is neither a number nor a string", truncate(id, 64))}
	}
	m.ID = id
	switch {
	case m.Method != "":
		if m.Result != nil || m.Error != nil {
			return message{}, 0, invalid(id, "a message with a method cannot carry a result or an error")
		}
		if id == nil {
			return m, kindNotification, nil
		}
		return m, kindRequest, nil
	case id != nil:
		if m.Result == nil && m.Error == nil {
			return message{}, 0, invalid(nil, "a response needs a result or an error")
		}
		if m.Result != nil && m.Error != nil {
			return message{}, 0, invalid(nil, "a response cannot carry both a result and an error")
		}
		return m, kindResponse, nil
	default:
		return message{}, 0, invalid(nil, "message has neither a method nor an id")
	}
}

func invalid(id json.RawMessage, why string) *decodeError {
	if isNull(id) || !validID(id) {
		id = nil
	}
	return &decodeError{ID: id, Code: CodeInvalidRequest, Err: errors.New("invalid request: " + why)}
}

func isNull(raw json.RawMessage) bool { return raw == nil || string(raw) == "null" }

// validID accepts a JSON number or string, as JSON-RPC allows.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

// salvageID finds the top-level "id" of a line that is not valid JSON as a whole, by
// reading tokens until the id or the error, so a request with broken params can still be
// answered.
func salvageID(line []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		k, ok := key.(string)
		if !ok {
			return nil
		}
		if k != "id" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil
			}
			continue
		}
		var id json.RawMessage
		if err := dec.Decode(&id); err != nil || !validID(id) {
			return nil
		}
		return id
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// Envelope builders: the common messages are written by hand into the output buffer, which
// is cheaper than marshalling a struct and never fails.

// appendRequestHead writes a request up to its params' value.
func appendRequestHead(buf []byte, id int64, method string) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, `,"method":`...)
	buf = appendString(buf, method)
	return append(buf, `,"params":`...)
}

func appendRequest(buf []byte, id int64, method string, params []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, `,"method":`...)
	buf = appendString(buf, method)
	if params != nil {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	return append(buf, "}\n"...)
}

func appendNotification(buf []byte, method string, params []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","method":`...)
	buf = appendString(buf, method)
	if params != nil {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	return append(buf, "}\n"...)
}

func appendResult(buf []byte, id json.RawMessage, result []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":`...)
	buf = append(buf, result...)
	return append(buf, "}\n"...)
}

func appendError(buf []byte, id json.RawMessage, e *Error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, int64(e.Code), 10)
	buf = append(buf, `,"message":`...)
	buf = appendString(buf, e.Message)
	if len(e.Data) > 0 && json.Valid(e.Data) {
		buf = append(buf, `,"data":`...)
		buf = append(buf, compact(e.Data)...)
	}
	return append(buf, "}}\n"...)
}

// appendString appends s as a JSON string exactly as encoding/json writes it; plain ASCII,
// the usual case, is copied as is.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s) // cannot fail for a string
			return append(buf, raw...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// compact removes newlines from raw JSON so it fits on one line.
func compact(raw []byte) []byte {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return raw
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return []byte("null")
	}
	return b.Bytes()
}

// marshalParams serializes a value for the wire. json.RawMessage is used as is after a
// validity check; everything else goes through encoding/json (which never emits newlines).
func marshalValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return []byte("null"), nil
	case json.RawMessage:
		if len(x) == 0 {
			return []byte("null"), nil
		}
		if !json.Valid(x) {
			return nil, errors.New("raw JSON value is not valid JSON")
		}
		return compact(x), nil
	default:
		return json.Marshal(v)
	}
}

// Appender is a value that writes its own JSON: valid, on one line. Conn writes it straight
// into the outgoing buffer, skipping reflection; the hot messages implement it.
type Appender interface {
	AppendJSON(buf []byte) ([]byte, error)
}

// AppendString appends s as a JSON string, exactly as encoding/json writes it.
func AppendString(buf []byte, s string) []byte { return appendString(buf, s) }

// AppendRaw appends a raw JSON value after checking it, as encoding/json does with a
// json.RawMessage (empty is null), removing line breaks so it stays on one line.
func AppendRaw(buf []byte, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return append(buf, "null"...), nil
	}
	if !ValidValue(raw) {
		return buf, errors.New("raw JSON value is not valid JSON")
	}
	return append(buf, compact(raw)...), nil
}
