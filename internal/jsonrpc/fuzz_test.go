package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzReadMessage feeds arbitrary bytes through the framing and the decoder. Neither may
// panic, a line is never longer than the limit, and every message that decodes survives
// being written out and read back.
func FuzzReadMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"execute","params":{"callId":"a"}}` + "\n",
		`{"jsonrpc":"2.0","method":"log","params":{"level":"info","message":"hi"}}` + "\n",
		`{"jsonrpc":"2.0","id":"x","result":null}` + "\n",
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"load","data":{"line":3}}}` + "\n",
		`{"jsonrpc":"2.0","id":7,"method":"x","params":{bad` + "\n",
		"\n\r\n  \n{}\n[]\nnull\n",
		`{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}` + "\n",
		string(bytes.Repeat([]byte("a"), 100)) + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 64
		lr := newLineReader(bytes.NewReader(data), limit)
		for {
			line, err := lr.next()
			if err != nil {
				var tooLong *LineTooLongError
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &tooLong) {
					t.Fatalf("unexpected framing error %v", err)
				}
				return
			}
			if len(line) > limit {
				t.Fatalf("line of %d bytes passed a %d-byte limit", len(line), limit)
			}
			m, k, err := decodeMessage(line)
			if err != nil {
				var de *decodeError
				if !errors.As(err, &de) {
					t.Fatalf("decode error of type %T", err)
				}
				if de.ID != nil {
					// The error answer must itself be a valid message.
					out := appendError(nil, de.ID, &Error{Code: de.Code, Message: de.Error()})
					if _, k2, err := decodeMessage(bytes.TrimSuffix(out, []byte("\n"))); err != nil || k2 != kindResponse {
						t.Fatalf("error answer %q does not decode: %v", out, err)
					}
				}
				continue
			}
			var out []byte
			switch k {
			case kindRequest:
				out = appendRequest(nil, 1, m.Method, m.Params)
			case kindNotification:
				out = appendNotification(nil, m.Method, m.Params)
			case kindResponse:
				if m.Error != nil {
					out = appendError(nil, m.ID, m.Error)
				} else {
					out = appendResult(nil, m.ID, m.Result)
				}
			}
			if bytes.Count(out, []byte("\n")) != 1 {
				t.Fatalf("re-encoded message is not one line: %q", out)
			}
			m2, k2, err := decodeMessage(bytes.TrimSuffix(out, []byte("\n")))
			if err != nil || k2 != k || m2.Method != m.Method {
				t.Fatalf("re-encoded %q does not decode the same: %v", out, err)
			}
			if k == kindResponse && m.Result != nil && !jsonEqual(m.Result, m2.Result) {
				t.Fatalf("result changed: %s → %s", m.Result, m2.Result)
			}
		}
	})
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
