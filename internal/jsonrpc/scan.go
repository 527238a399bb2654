package jsonrpc

// A small JSON scanner for the hot path: it walks the members of one object and checks
// every value's grammar in a single pass, without building anything. encoding/json first
// checks a whole document and then decodes it in a second pass, through reflection, copying
// every raw field; on a worker's answer, which arrives for every call, that was most of the
// host's decoding cost.
//
// The scanner accepts exactly the grammar encoding/json accepts (RFC 8259; string bytes are
// not checked for UTF-8, as there), and is only ever a fast path: callers fall back to
// encoding/json whenever the scanner fails or meets something it leaves alone (escaped keys,
// keys that differ only in case from one they know, duplicates), so every error message and
// every corner case stays encoding/json's.

// maxDepth matches encoding/json's nesting limit; deeper documents take the slow path,
// which reports the error.
const maxDepth = 10000

// ObjectFields calls field for each member of the JSON object data, in order, with the key
// as written between its quotes (escapes not decoded; escaped reports whether it has any)
// and the value's raw bytes. The value slices alias data. It reports false when data is not
// one valid JSON object (surrounding white space allowed) or when field returned false.
func ObjectFields(data []byte, field func(key []byte, escaped bool, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		kEnd, escaped, ok := scanString(data, i)
		if !ok {
			return false
		}
		key := data[i+1 : kEnd-1]
		i = skipSpace(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		vEnd, ok := scanValue(data, i, 1)
		if !ok {
			return false
		}
		if !field(key, escaped, data[i:vEnd]) {
			return false
		}
		i = skipSpace(data, vEnd)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// ValidValue reports whether data is one valid JSON value, like json.Valid.
func ValidValue(data []byte) bool {
	i := skipSpace(data, 0)
	end, ok := scanValue(data, i, 0)
	return ok && skipSpace(data, end) == len(data)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue checks the value starting at data[i] and returns the offset just past it.
func scanValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '"':
		end, _, ok := scanString(data, i)
		return end, ok
	case c == '{':
		return scanObject(data, i, depth+1)
	case c == '[':
		return scanArray(data, i, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(data, i)
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	}
	return i, false
}

func literal(data []byte, i int, word string) (int, bool) {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

func scanObject(data []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return i, false
		}
		end, _, ok := scanString(data, i)
		if !ok {
			return i, false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return i, false
		}
		i = skipSpace(data, i+1)
		if i, ok = scanValue(data, i, depth); !ok {
			return i, false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func scanArray(data []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = scanValue(data, i, depth); !ok {
			return i, false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// scanString checks the string whose opening quote is data[i]; end is just past the
// closing quote, escaped reports a backslash inside.
func scanString(data []byte, i int) (end int, escaped, ok bool) {
	i++
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			return i + 1, escaped, true
		case c < 0x20:
			return i, escaped, false
		case c == '\\':
			escaped = true
			if i+1 >= len(data) {
				return i, escaped, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(data)-i < 6 || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return i, escaped, false
				}
				i += 6
			default:
				return i, escaped, false
			}
		default:
			i++
		}
	}
	return i, escaped, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func scanNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return i, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == start {
			return i, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == start {
			return i, false
		}
	}
	return i, true
}

// ArrayElements calls elem for each element of the JSON array data, in order, with its raw
// bytes (aliasing data). It reports false when data is not one valid JSON array or when
// elem returned false.
func ArrayElements(data []byte, elem func(value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		end, ok := scanValue(data, i, 1)
		if !ok || !elem(data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}
