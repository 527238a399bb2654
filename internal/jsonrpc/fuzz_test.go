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
		lr := newLineReader(bytes.NewReader(data), limit, 0)
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

// FuzzScanner holds the one-pass scanner to encoding/json: it accepts exactly the documents
// json.Valid accepts, and the fast message decoder, when it decodes a line at all, decodes
// it exactly as encoding/json does.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"execute","params":{"callId":"a","input":{"n":[1,2.5e-3,-0,true,null]}}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"success":true,"result":"\u00e9\n"}}`,
		`{"jsonrpc":"2.0","id":2,"result":null}`,
		`{"jsonrpc":"2.0","ID":2,"result":1}`,
		`{"jsonrpc":"2.0","id":2,"result":1,"result":2}`,
		`{"jsonrpc":"2.0","method":"log","params":null}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"load"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"j\u0073onrpc":"2.0","id":1,"method":"x"}`,
		`{"jſonrpc":"2.0","id":1,"method":"x"}`,
		` { "jsonrpc" : "2.0" , "id" : 1 , "result" : [ ] } `,
		`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":"\x"}`, `{"a":"\u12g4"}`, `[1,]`, `{"a":1,}`,
		"{\"a\":\"\x01\"}", `"\ud800"`, `[1,[2,{"a":[]}],"x"]`, ` [ ] `, `[1 2]`, `1e+`, `tru`, `nul`, `{}`, `[]`, ``, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := ValidValue(data), json.Valid(data); got != want {
			t.Fatalf("ValidValue(%q) = %v, json.Valid says %v", data, got, want)
		}
		isObject := json.Valid(data) && bytes.TrimLeft(data, " \t\r\n")[0] == '{'
		if got := ObjectFields(data, func([]byte, bool, []byte) bool { return true }); got != isObject {
			t.Fatalf("ObjectFields(%q) = %v, want %v", data, got, isObject)
		}
		isArray := json.Valid(data) && bytes.TrimLeft(data, " \t\r\n")[0] == '['
		if got := ArrayElements(data, func([]byte) bool { return true }); got != isArray {
			t.Fatalf("ArrayElements(%q) = %v, want %v", data, got, isArray)
		}
		m, k, ok := decodeFast(data)
		if !ok {
			return
		}
		m2, k2, err := decodeSlow(data)
		if err != nil {
			t.Fatalf("fast decoder accepted %q, encoding/json refuses it: %v", data, err)
		}
		if k != k2 || m.Method != m2.Method || !bytes.Equal(m.ID, m2.ID) || !bytes.Equal(m.Params, m2.Params) || !bytes.Equal(m.Result, m2.Result) || m2.Error != nil {
			t.Fatalf("%q: fast decoder read %+v (kind %d), encoding/json %+v (kind %d)", data, m, k, m2, k2)
		}
	})
}

// FuzzAnswerLimit: with an answer limit below the line limit, no line longer than the
// answer limit ever comes out of the framing as something that decodes to an answer, and
// the framing fails only with its own errors.
func FuzzAnswerLimit(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}` + "\n",
		`{"jsonrpc":"2.0","result":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","id":1}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"fs.write","params":"xxxxxxxxxxxxxxxxxx"}` + "\n",
		`{"Method":"x","ID":2,"RESULT":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"}` + "\n",
		`{"jsonrpc":"2.0","i\u0064":1,"result":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}` + "\n",
		`{"id":1,"id":"a","error":{"code":1,"message":"mmmmmmmmmmmmmmmmmmmmmmmmmm"}}` + "\n",
		`{"id":1,"method":"x","method":"","result":"zzzzzzzzzzzzzzzzzzzzzzzzzzzz"}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit, answer = 96, 32
		lr := newLineReader(bytes.NewReader(data), limit, answer)
		for {
			line, err := lr.next()
			var big *ResponseTooLongError
			if errors.As(err, &big) {
				if big.Known {
					continue // read past; the next line follows
				}
				return
			}
			if err != nil {
				var tooLong *LineTooLongError
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &tooLong) {
					t.Fatalf("unexpected framing error %v", err)
				}
				return
			}
			if len(line) <= answer {
				continue
			}
			if _, k, err := decodeMessage(line); err == nil && k == kindResponse {
				t.Fatalf("an answer of %d bytes passed the %d-byte answer limit: %q", len(line), answer, line)
			}
		}
	})
}
