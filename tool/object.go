package tool

import (
	"strconv"
	"unicode/utf8"
)

// Object builds a result's JSON object field by field, for a tool whose result is a few
// plain fields around a large text (read-file's numbered lines): faster than json.Marshal,
// and valid by construction, so the host need not check it again. Only strings, integers
// and booleans can be put in it; keys are written as given and must be unique.
type Object struct {
	// buf starts with modelPrefix: Success leaves the model's whole JSON around the object,
	// so ModelJSON hands it out without copying the object again.
	buf []byte
}

// modelPrefix is how ModelJSON starts a successful result; the result follows, then '}'.
const modelPrefix = `{"success":true,"result":`

// NewObject starts an object, with room for about size bytes.
func NewObject(size int) *Object {
	o := &Object{buf: make([]byte, 0, len(modelPrefix)+size+3)}
	o.buf = append(o.buf, modelPrefix...)
	o.buf = append(o.buf, '{')
	return o
}

func (o *Object) key(k string) {
	if len(o.buf) > len(modelPrefix)+1 {
		o.buf = append(o.buf, ',')
	}
	o.buf = appendString(o.buf, k)
	o.buf = append(o.buf, ':')
}

// String adds a string field.
func (o *Object) String(k, v string) *Object { o.key(k); o.buf = appendString(o.buf, v); return o }

// Int adds an integer field.
func (o *Object) Int(k string, v int) *Object {
	o.key(k)
	o.buf = strconv.AppendInt(o.buf, int64(v), 10)
	return o
}

// Bool adds a boolean field.
func (o *Object) Bool(k string, v bool) *Object {
	o.key(k)
	o.buf = strconv.AppendBool(o.buf, v)
	return o
}

// OpenString starts a string field whose text is given piece by piece (Append, AppendBytes)
// and ended by CloseString: a text put together from many pieces (numbered lines) is
// escaped straight into the object, never held whole on its own. A piece must not end
// inside a UTF-8 sequence that the next piece finishes (it would read as invalid).
func (o *Object) OpenString(k string) *Object {
	o.key(k)
	o.buf = append(o.buf, '"')
	return o
}

// Append adds a piece of the open string field.
func (o *Object) Append(s string) *Object { o.buf = appendEscaped(o.buf, s); return o }

// AppendBytes adds a piece of the open string field.
func (o *Object) AppendBytes(b []byte) *Object { o.buf = appendEscaped(o.buf, b); return o }

// CloseString ends the string field OpenString began.
func (o *Object) CloseString() *Object { o.buf = append(o.buf, '"'); return o }

// Success is the successful result holding the object. Its model JSON is the same buffer.
func (o *Object) Success() Result {
	model := append(o.buf, '}', '}')
	// The cap ends at the result: an append to it must not write over the closing brace.
	raw := model[len(modelPrefix) : len(model)-1 : len(model)-1]
	return Result{Success: true, Result: raw, known: model, knownAt: len(modelPrefix)}
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 as U+FFFD, and U+2028/U+2029 escaped (as encoding/json does, so a
// result reads the same either way). Runs of plain bytes are copied at once.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped appends s escaped as the inside of a JSON string (appendString's rules).
func appendEscaped[T string | []byte](dst []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); {
		// Eight plain bytes at a time: none below 0x20, none a quote or a backslash, none
		// past ASCII (the tests of "Bit Twiddling Hacks": a byte less than n, a zero byte).
		for i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if special(w) {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

func decodeRune[T string | []byte](s T) (rune, int) {
	switch v := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(v)
	case []byte:
		return utf8.DecodeRune(v)
	}
	panic("unreachable")
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special reports whether one of the eight bytes of w needs a look: below 0x20, '"', '\\'
// or not ASCII.
func special(w uint64) bool {
	below := (w - ones*0x20) & ^w
	quote := w ^ (ones * '"')
	slash := w ^ (ones * '\\')
	zeroQ := (quote - ones) & ^quote
	zeroS := (slash - ones) & ^slash
	return (below|zeroQ|zeroS|w)&highs != 0
}
