package host

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseResult holds the one-pass reading of a worker's result to the encoding/json
// path: whatever the fast path reads, the slow path reads the same.
func FuzzParseResult(f *testing.F) {
	for _, s := range []string{
		`{"success":true,"result":{"ok":true}}`,
		`{"success":false,"error":"boom","summary":"s"}`,
		`{"success":true,"data":[1,2],"visualization":{"type":"none","message":"m"}}`,
		`{"success":true,"Result":1}`,
		`{"success":true,"result":1,"result":2}`,
		`{"success":false,"error":"caf\u00e9"}`,
		`{"success":false,"error":null,"summary":null,"result":null}`,
		`{"succeſs":true}`,
		` {"success" : true , "other":{"x":[]} } `,
		`{"success":"yes"}`, `[]`, `null`, `{"success":true`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := parseResultFast(raw)
		if !ok {
			return
		}
		// The encoding/json path, as parseResult runs it when the fast one gives up.
		var wire struct {
			Success       json.RawMessage `json:"success"`
			Result        json.RawMessage `json:"result"`
			Data          json.RawMessage `json:"data"`
			Error         *string         `json:"error"`
			Summary       *string         `json:"summary"`
			Visualization json.RawMessage `json:"visualization"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(raw), &wire); err != nil {
			t.Fatalf("fast path read %q, encoding/json refuses it: %v", raw, err)
		}
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		if fast.Success != (string(wire.Success) == "true") || string(wire.Success) != "true" && string(wire.Success) != "false" ||
			!bytes.Equal(fast.Result, wire.Result) || !bytes.Equal(fast.Data, wire.Data) || !bytes.Equal(fast.Visualization, wire.Visualization) ||
			fast.Error != str(wire.Error) || fast.Summary != str(wire.Summary) {
			t.Fatalf("%q: fast path read %+v, encoding/json %+v", raw, fast, wire)
		}
	})
}
