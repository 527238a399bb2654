package tool

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ModelText is the result as the model reads it, and whether it is text rather than JSON.
// A successful result that is text reaches the model as text, not as a JSON string with
// every line break escaped (issue 24: a read cost about a third more tokens as JSON):
//
//   - a result that is a JSON string: the string itself;
//   - a result that is a JSON object whose values are all strings, numbers, booleans or
//     null, exactly one of them a string with a line break: one "key: value" line for each
//     other field in the result's order, a blank line, then that string. With no other
//     field, the string alone.
//
// A summary (Jx's shape) comes first as a "summary: …" line. Everything else — a failure,
// a result with a nested object or array, or with no or several multi-line strings, a
// summary with a line break — is ModelJSON, as before.
func (r Result) ModelText() ([]byte, bool) {
	n := r.Normalize()
	if !n.Success || n.Result == nil || strings.Contains(n.Summary, "\n") ||
		(!n.knownValid() && !json.Valid(n.Result)) {
		return n.ModelJSON(), false
	}
	if text, ok := textShaped(n.Result, n.Summary); ok {
		return text, true
	}
	return n.ModelJSON(), false
}

// jsonField is one field of a result object: the key and the value as written (a string's
// value without its quotes, still escaped).
type jsonField struct {
	key, val []byte
	str      bool
}

// textShaped makes the text of a text-shaped result (ModelText's rules); raw is valid JSON.
func textShaped(raw json.RawMessage, summary string) ([]byte, bool) {
	raw = bytes.TrimSpace(raw)
	var room [8]jsonField // a result of a few fields scans without an allocation
	var fields []jsonField
	main := -1
	var body []byte
	switch raw[0] {
	case '"':
		body = raw[1 : len(raw)-1]
	case '{':
		var ok bool
		fields, ok = scanFlatObject(raw, room[:0])
		if !ok {
			return nil, false
		}
		for i, f := range fields {
			if f.str && hasLineBreak(f.val) {
				if main >= 0 {
					return nil, false // two texts: which is the text is not obvious
				}
				main = i
			}
		}
		if main < 0 {
			return nil, false
		}
		body = fields[main].val
	default:
		return nil, false
	}
	out := make([]byte, 0, len(body)+len(summary)+48*len(fields)+16)
	if summary != "" {
		out = append(out, "summary: "...)
		out = append(out, summary...)
		out = append(out, '\n')
	}
	for i, f := range fields {
		if i == main {
			continue
		}
		out = appendUnescaped(out, f.key)
		out = append(out, ':', ' ')
		if f.str {
			out = appendUnescaped(out, f.val)
		} else {
			out = append(out, f.val...)
		}
		out = append(out, '\n')
	}
	if len(out) > 0 {
		out = append(out, '\n')
	}
	return appendUnescaped(out, body), true
}

// scanFlatObject splits a valid JSON object into its fields; false when a value is an
// object or an array.
func scanFlatObject(raw []byte, fields []jsonField) ([]jsonField, bool) {
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return fields, true
	}
	for {
		i = skipSpace(raw, i)
		end := stringEnd(raw, i+1)
		f := jsonField{key: raw[i+1 : end]}
		i = skipSpace(raw, end+1) + 1 // past ':'
		i = skipSpace(raw, i)
		switch raw[i] {
		case '{', '[':
			return nil, false
		case '"':
			end = stringEnd(raw, i+1)
			f.val, f.str = raw[i+1:end], true
			i = end + 1
		default:
			start := i
			for i < len(raw) && raw[i] != ',' && raw[i] != '}' && !isSpace(raw[i]) {
				i++
			}
			f.val = raw[start:i]
		}
		fields = append(fields, f)
		i = skipSpace(raw, i)
		if raw[i] == '}' {
			return fields, true
		}
		i++ // past ','
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

// stringEnd is the index of the quote ending the string whose text starts at i: the first
// quote not escaped (preceded by an even number of backslashes).
func stringEnd(raw []byte, i int) int {
	for {
		j := i + bytes.IndexByte(raw[i:], '"')
		k := j
		for k > i && raw[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
		i = j + 1
	}
}

// hasLineBreak reports whether an escaped JSON string holds a line break (\n or \u000a).
func hasLineBreak(s []byte) bool {
	for {
		j := bytes.IndexByte(s, '\\')
		if j < 0 || j+1 >= len(s) {
			return false
		}
		switch s[j+1] {
		case 'n':
			return true
		case 'u':
			if j+6 <= len(s) && string(s[j+2:j+5]) == "000" && (s[j+5] == 'a' || s[j+5] == 'A') {
				return true
			}
		}
		s = s[j+2:]
	}
}

// appendUnescaped appends the text of a valid escaped JSON string, as encoding/json reads
// it (a lone surrogate becomes U+FFFD). Runs without a backslash are copied at once.
func appendUnescaped(dst, s []byte) []byte {
	for {
		j := bytes.IndexByte(s, '\\')
		if j < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:j]...)
		c := s[j+1]
		s = s[j+2:]
		switch c {
		case 'n':
			dst = append(dst, '\n')
		case 't':
			dst = append(dst, '\t')
		case 'r':
			dst = append(dst, '\r')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			var r rune
			r, s = unescapeRune(s)
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
	}
}

// unescapeRune reads the four hex digits after \u (and a low surrogate's \uXXXX after a
// high one) from s, returning the rune and the rest.
func unescapeRune(s []byte) (rune, []byte) {
	r := hex4(s)
	s = s[4:]
	if utf16.IsSurrogate(r) {
		if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
			if pair := utf16.DecodeRune(r, hex4(s[2:])); pair != utf8.RuneError {
				return pair, s[6:]
			}
		}
		return utf8.RuneError, s
	}
	return r, s
}

func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
