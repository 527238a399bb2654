package workerproto

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The hand-written encoder of execute params writes what encoding/json writes (the raw
// input is not HTML-escaped: the same JSON, other bytes).
func TestExecuteParamsAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, p := range []ExecuteParams{
		{},
		{CallID: "c1", Input: json.RawMessage(`{"n":1}`)},
		{CallID: "a<b", Input: json.RawMessage(`"x&y"`), Context: CallContext{TempDir: "p>q"}},
		{CallID: "toolu_\"é\u2028<&>\x01", Input: json.RawMessage("{\n  \"a\": [1, 2]\n}"), Context: CallContext{
			SessionID: "s", WorkspacePath: "/w ö", WorkspaceID: "w-1", AllowedPaths: []string{"/a", "/b\\c"},
			TempDir: "/tmp/x", Env: map[string]string{"Z": "1", "A": "tab\there", "M": "\xff"},
		}},
		{CallID: "c2", Input: json.RawMessage(`[]`), Context: CallContext{AllowedPaths: []string{}, Env: map[string]string{}}},
		{CallID: "c3", Input: json.RawMessage(`{}`), Module: "m2"},
	} {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var escaped bytes.Buffer
		json.HTMLEscape(&escaped, got)
		if !bytes.Equal(escaped.Bytes(), want) {
			t.Errorf("AppendJSON wrote\n%s\nencoding/json writes\n%s", got, want)
		}
	}
	if _, err := (ExecuteParams{CallID: "c", Input: json.RawMessage(`{"n":`)}).AppendJSON(nil); err == nil {
		t.Error("invalid input was written")
	}
}
