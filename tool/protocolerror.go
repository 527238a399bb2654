package tool

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ProtocolError fails a call as a protocol error rather than as the tool's own error: an
// MCP client gets it as the JSON-RPC error of its tools/call (code, message, data) and a
// task of the tasks extension ends failed with it, where a tool's error is a result
// (isError) and its task completes. Use it when the request itself cannot be served (the
// arguments make no sense to the server, a backend the server depends on is down), not
// for what the model should read and act on. jean2's own agent shows it as a failed call
// whose error is Message. A handler of NewTyped returns one as its error (errors.As finds
// it); any tool can return ProtocolErrorf's result.
type ProtocolError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("protocol error %d: %s", e.Code, e.Message)
}

// JSON-RPC codes a tool may not fail a call with: they say the request could not be read
// or routed, which the server, not a tool that ran, knows.
var reservedProtocolCodes = map[int64]string{
	-32700: "parse error",
	-32600: "invalid request",
	-32601: "method not found",
}

// MaxProtocolErrorMessage bounds a protocol error's message, which travels in the JSON-RPC
// error whole (no overflow file).
const MaxProtocolErrorMessage = 4096

// Check reports what makes the error unusable: a code a tool may not use, an empty or
// too long message, data that is not JSON.
func (e *ProtocolError) Check() error {
	if e.Code == 0 {
		return errors.New("protocolError.code is missing: give a JSON-RPC error code, e.g. -32603 (internal error) or -32602 (invalid params)")
	}
	if what, ok := reservedProtocolCodes[e.Code]; ok {
		return fmt.Errorf("protocolError.code %d (%s) is the server's to give, not a tool's: use -32603 (internal error), -32602 (invalid params) or an application code", e.Code, what)
	}
	if e.Message == "" {
		return errors.New("protocolError.message is empty")
	}
	if len(e.Message) > MaxProtocolErrorMessage {
		return fmt.Errorf("protocolError.message is %d bytes, more than %d", len(e.Message), MaxProtocolErrorMessage)
	}
	if len(e.Data) > 0 && !json.Valid(e.Data) {
		return errors.New("protocolError.data is not valid JSON")
	}
	return nil
}

// ProtocolErrorf builds a failed result that fails the call as a protocol error with code
// (see ProtocolError).
func ProtocolErrorf(code int64, format string, args ...any) Result {
	msg := fmt.Sprintf(format, args...)
	return Result{Error: msg, ProtocolError: &ProtocolError{Code: code, Message: msg}}
}
