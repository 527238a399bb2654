package tool_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// An Object's JSON is valid and reads back as what was put in, for every kind of string
// (quotes, controls, invalid UTF-8, U+2028) and as encoding/json writes it.
func TestObjectIsValidJSON(t *testing.T) {
	texts := []string{"", "plain", "a \"quoted\" \\ back", "tab\tnew\nline\r\x00\x01\x1f", "héllo wörld ✓ 🙂", "line\u2028sep\u2029", "bad \xff\xfe utf8", strings.Repeat("1: x\n", 1000)}
	for _, s := range texts {
		r := tool.NewObject(0).String("content", s).Int("n", -42).Bool("ok", true).Success()
		if !json.Valid(r.Result) {
			t.Fatalf("invalid JSON for %q: %s", s, r.Result)
		}
		var back struct {
			Content string `json:"content"`
			N       int    `json:"n"`
			OK      bool   `json:"ok"`
		}
		if err := json.Unmarshal(r.Result, &back); err != nil || back.N != -42 || !back.OK {
			t.Fatalf("%s: %v %+v", r.Result, err, back)
		}
		want, _ := json.Marshal(s)
		var wantS string
		_ = json.Unmarshal(want, &wantS)
		if back.Content != wantS {
			t.Fatalf("content %q read back as %q, want %q", s, back.Content, wantS)
		}
		if model := r.ModelJSON(); !json.Valid(model) {
			t.Fatalf("model JSON invalid: %s", model)
		}
	}
}

// Random strings of every byte value read back as encoding/json reads its own output.
func TestObjectStringsAgreeWithEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("abc \"\\\n\t\x00\x1f\x7f\x80\xc3\xa9\xe2\x80\xa8\xff<>&")
	for n := range 3000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if n%2 == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = byte(rng.IntN(256))
			}
		}
		r := tool.NewObject(0).String("s", string(b)).Success()
		var ours, theirs struct{ S string }
		if err := json.Unmarshal(r.Result, &ours); err != nil {
			t.Fatalf("%q: ours %s does not decode: %v", b, r.Result, err)
		}
		want, _ := json.Marshal(struct{ S string }{string(b)})
		_ = json.Unmarshal(want, &theirs)
		if ours.S != theirs.S {
			t.Fatalf("%q: ours reads %q, encoding/json's %q", b, ours.S, theirs.S)
		}
	}
}

// A string given piece by piece (OpenString, Append, AppendBytes, CloseString) is the same
// JSON as the whole string given at once, for pieces cut at line ends as read-file cuts them.
func TestObjectPiecesAgreeWithWholeString(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab \"\\\t\x00\x1f\xc3\xa9\xe2\x80\xa8\xff\n")
	for range 2000 {
		b := make([]byte, rng.IntN(60))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		whole := tool.NewObject(0).String("s", string(b)).Int("n", 1).Success()
		o := tool.NewObject(0).OpenString("s")
		for i, line := range strings.SplitAfter(string(b), "\n") {
			if i%2 == 0 {
				o.Append(line)
			} else {
				o.AppendBytes([]byte(line))
			}
		}
		pieces := o.CloseString().Int("n", 1).Success()
		if string(pieces.Result) != string(whole.Result) {
			t.Fatalf("%q: pieces %s, whole %s", b, pieces.Result, whole.Result)
		}
	}
}

// An Object's model JSON is the same text ModelJSON builds for any other result, and it
// stays right when the result is appended to or replaced afterwards.
func TestObjectModelJSON(t *testing.T) {
	r := tool.NewObject(0).String("content", "x\ny").Int("n", 2).Success()
	want := `{"success":true,"result":{"content":"x\ny","n":2}}`
	if got := string(r.ModelJSON()); got != want {
		t.Fatalf("model JSON %s, want %s", got, want)
	}
	generic := tool.Result{Success: true, Result: append(json.RawMessage(nil), r.Result...)}
	if got := string(generic.ModelJSON()); got != want {
		t.Fatalf("generic model JSON %s, want %s", got, want)
	}
	// Appending to the result must not write over the model JSON's closing brace.
	_ = append(r.Result, 'Z')
	if got := string(r.ModelJSON()); got != want {
		t.Fatalf("after an append to the result: %s", got)
	}
	// A summary or an error is added, not dropped.
	s := r
	s.Summary = "two"
	if got := string(s.ModelJSON()); got != `{"success":true,"result":{"content":"x\ny","n":2},"summary":"two"}` {
		t.Fatalf("with a summary: %s", got)
	}
	// A result replaced by invalid JSON is checked, not trusted.
	bad := r
	bad.Result = json.RawMessage(`{"content":`)
	if got := string(bad.ModelJSON()); !strings.Contains(got, "not valid JSON") {
		t.Fatalf("replaced result trusted: %s", got)
	}
	// The same bytes cut shorter (a prefix of the known result) are not trusted either.
	cut := r
	cut.Result = r.Result[:5]
	if got := string(cut.ModelJSON()); !strings.Contains(got, "not valid JSON") {
		t.Fatalf("cut result trusted: %s", got)
	}
}
