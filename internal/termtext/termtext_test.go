package termtext

import "testing"

// What a hostile tool or model might print: none of it reaches the terminal as a control.
func TestTextAndLine(t *testing.T) {
	for _, c := range []struct{ in, text, line string }{
		{"plain é 日本", "plain é 日本", "plain é 日本"},
		{"clear\x1b[2Jscreen", `clear\u001b[2Jscreen`, `clear\u001b[2Jscreen`},
		{"a\r\nb", "a\\u000d\nb", "a\\u000d⏎b"},
		{"bell\a", `bell\u0007`, `bell\u0007`},
		{"evil\u202eexe.txt", `evil\u202eexe.txt`, `evil\u202eexe.txt`},
		{"line\u2028sep", `line\u2028sep`, `line\u2028sep`},
		{"csi\u009bx", `csi\u009bx`, `csi\u009bx`},
		{"tab\there", "tab    here", "tab    here"},
		{"bad \xff byte", "bad \xff byte", "bad \xff byte"},
	} {
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
	}
}
