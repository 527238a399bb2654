// Package termtext makes text that came from a model, a tool or another peer safe to print
// on a terminal: escape sequences and other control characters are shown as \uXXXX instead
// of acting on the terminal, so that such text cannot redraw the screen, move the cursor or
// disguise a question a person answers. The chat (package chat) and the terminal asker
// (package ask) print through it.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unsafe reports whether r would act on a terminal or reorder what it shows rather than
// be shown: control characters (ESC, CR, BEL, …), the bidirectional controls and the
// Unicode line and paragraph separators.
func Unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// Text is s with every unsafe character shown as \uXXXX, except that newlines stay and tabs
// become four spaces.
func Text(s string) string {
	if !strings.ContainsFunc(s, needsCleaning) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteString("    ")
		case r == utf8.RuneError:
			b.WriteRune(r)
		case Unsafe(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsCleaning(r rune) bool { return r != '\n' && Unsafe(r) }

// Line is Text for text that must stay on one line: a newline is shown as ⏎.
func Line(s string) string {
	return strings.ReplaceAll(Text(s), "\n", "⏎")
}
