package tool_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// Text-shaped successes reach the model as text, the other fields as a header; everything
// else stays JSON (issue 24).
func TestModelTextRules(t *testing.T) {
	readFile := tool.NewObject(0).OpenString("content").Append("1: def add(a, b):\n2:     return \"a\" + b\\n").CloseString().
		String("revision", "sha256:ab").Int("totalLines", 2).Bool("truncated", false).Success()
	cases := []struct {
		name string
		res  tool.Result
		want string
		text bool
	}{
		{"object with one text", readFile, "revision: sha256:ab\ntotalLines: 2\ntruncated: false\n\n1: def add(a, b):\n2:     return \"a\" + b\\n", true},
		{"string", tool.Success("line 1\nline 2 ✓"), "line 1\nline 2 ✓", true},
		{"string on one line", tool.Success("ok"), "ok", true},
		{"text alone", tool.Success(map[string]any{"output": "a\nb"}), "a\nb", true},
		{"null and spaces", tool.Result{Success: true, Result: json.RawMessage(` { "x" : null , "t" : "a\u000Ab" } `)}, "x: null\n\na\nb", true},
		{"summary", tool.Result{Success: true, Data: json.RawMessage(`"a\nb"`), Summary: "two lines"}, "summary: two lines\n\na\nb", true},
		{"no text", tool.Success(map[string]any{"n": 1, "s": "one line"}), `{"success":true,"result":{"n":1,"s":"one line"}}`, false},
		{"escaped backslash n is no line break", tool.Success(map[string]any{"s": `a\nb`}), `{"success":true,"result":{"s":"a\\nb"}}`, false},
		{"two texts", tool.Success(map[string]any{"a": "1\n2", "b": "3\n4"}), `{"success":true,"result":{"a":"1\n2","b":"3\n4"}}`, false},
		{"nested", tool.Success(map[string]any{"a": "1\n2", "b": []int{1}}), `{"success":true,"result":{"a":"1\n2","b":[1]}}`, false},
		{"array", tool.Success([]string{"1\n2"}), `{"success":true,"result":["1\n2"]}`, false},
		{"failure", tool.Errorf("no\nway"), `{"success":false,"error":"no\nway"}`, false},
		{"invalid", tool.Result{Success: true, Result: json.RawMessage(`"a\nb`)}, `{"success":false,"error":"tool result is not valid JSON"}`, false},
	}
	for _, c := range cases {
		got, text := c.res.ModelText()
		if string(got) != c.want || text != c.text {
			t.Errorf("%s: got %q (text %v), want %q (text %v)", c.name, got, text, c.want, c.text)
		}
	}
}

// A string result reads back as encoding/json reads it, for every kind of text (escapes,
// surrogates, invalid UTF-8).
func TestModelTextAgreesWithEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab \"\\/\n\t\r\b\f\x00\x1f\x7f\x80\xc3\xa9\xe2\x80\xa8\xff\xf0\x9f\x99\x82<>&")
	for n := range 5000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if n%2 == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = byte(rng.IntN(256))
			}
		}
		raw, _ := json.Marshal(string(b))
		var want string
		_ = json.Unmarshal(raw, &want)
		for _, res := range []tool.Result{tool.Success(string(b)), tool.NewObject(0).String("s", string(b)+"\n").Success()} {
			got, _ := res.ModelText()
			if w := want; res.Result[0] == '{' {
				w += "\n"
				if string(got) != w {
					t.Fatalf("%q: object text %q, want %q", b, got, w)
				}
			} else if string(got) != w {
				t.Fatalf("%q: text %q, want %q", b, got, w)
			}
		}
	}
	// \u escapes written by other encoders (JavaScript's JSON.stringify writes lone surrogates).
	for raw, want := range map[string]string{`"\ud83d\ude42\u00e9\u0041"`: "🙂éA", `"\ud83d x"`: "\ufffd x", `"\ud83d\u0041"`: "\ufffdA", `"\ude42"`: "\ufffd", `"\/"`: "/"} {
		var std string
		_ = json.Unmarshal([]byte(raw), &std)
		got, _ := tool.Result{Success: true, Result: json.RawMessage(raw)}.ModelText()
		if string(got) != want || std != want {
			t.Errorf("%s: got %q, encoding/json %q, want %q", raw, got, std, want)
		}
	}
}

// BenchmarkModelTextReadFile is the model's text of read-file's result for a 100-line file:
// what issue 24's text costs a read beside ModelJSON (BenchmarkModelJSONReadFile).
func BenchmarkModelTextReadFile(b *testing.B) {
	res := readFileResult()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = res.ModelText()
	}
}

func BenchmarkModelJSONReadFile(b *testing.B) {
	res := readFileResult()
	b.ReportAllocs()
	for b.Loop() {
		_ = res.ModelJSON()
	}
}

func readFileResult() tool.Result {
	o := tool.NewObject(6000).OpenString("content")
	for i := range 100 {
		o.Append(fmt.Sprintf("%d: line %d of a file of a hundred lines\n", i+1, i))
	}
	return o.Append("\n(End of file - total 100 lines)").CloseString().String("revision", "sha256:"+strings.Repeat("ab", 32)).
		Int("totalLines", 100).Int("offset", 1).Int("linesReturned", 100).Bool("truncated", false).Success()
}
