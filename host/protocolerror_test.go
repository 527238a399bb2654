package host

import (
	"strings"
	"testing"
)

// A worker's result with protocolError keeps it (the fast path leaves it to encoding/json);
// a protocolError of the wrong shape makes the result an error that says so.
func TestParseResultProtocolError(t *testing.T) {
	res := parseResult("t", []byte(`{"success":false,"error":"down","protocolError":{"code":-32603,"message":"down","data":{"a":1}}}`))
	if pe := res.ProtocolError; pe == nil || pe.Code != -32603 || pe.Message != "down" || string(pe.Data) != `{"a":1}` {
		t.Fatalf("parsed: %+v", res)
	}
	res = parseResult("t", []byte(`{"success":false,"error":"down","protocolError":"down"}`))
	if res.ProtocolError != nil || !strings.Contains(res.Error, `"protocolError" is not {code, message, data?}`) {
		t.Fatalf("malformed: %+v", res)
	}
	// A key that only folds to protocolError is not read by the fast path either.
	if _, ok := parseResultFast([]byte(`{"success":false,"protocolerror":{}}`)); ok {
		t.Fatal("the fast path read a key encoding/json would fold to protocolError")
	}
}
