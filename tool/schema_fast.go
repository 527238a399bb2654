package tool

import (
	"encoding/json"

	"github.com/jean2/jean2/internal/jsonrpc"
)

// A fast path for the schemas most tools have: an object of typed properties, some
// required, perhaps no others allowed, arrays of typed items. Validating arguments against
// one of them needs no decoding: the raw JSON says each value's type. Full validation
// decodes the arguments into Go values and walks the compiled schema, a dozen allocations
// on every call.
//
// The fast path only ever accepts. Whenever it cannot tell, or the arguments look wrong, the
// full validator runs and has the last word (and writes the message the model sees), so the
// fast path can only be wrong by accepting what the full validator would refuse; it is kept
// to keywords whose meaning is the same in every draft, and fuzzed against the validator.

// typeSet is a set of JSON Schema types.
type typeSet uint8

const (
	tString typeSet = 1 << iota
	tNumber
	tInteger
	tBoolean
	tNull
	tArray
	tObject
	tAny typeSet = 1<<7 - 1
)

func typeNamed(name string) typeSet {
	switch name {
	case "string":
		return tString
	case "number":
		return tNumber
	case "integer":
		return tInteger
	case "boolean":
		return tBoolean
	case "null":
		return tNull
	case "array":
		return tArray
	case "object":
		return tObject
	}
	return 0
}

// fastSchema is a schema the fast path understands.
type fastSchema struct {
	types      typeSet
	properties map[string]*fastSchema // object members with a schema of their own
	required   []string
	closed     bool        // additionalProperties: false
	items      *fastSchema // every array element; nil for any
	enum       []string    // allowed strings, when the schema is an enum of plain strings
}

// annotation reports keywords that never change what validates.
func annotation(k string) bool {
	switch k {
	case "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly":
		return true
	}
	return false
}

// knownDraft reports the $schema values under which the keywords below mean the same.
func knownDraft(s string) bool {
	switch s {
	case "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema",
		"https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema":
		return true
	}
	return false
}

// compileFast makes the fast path of a schema document, or nil when the schema uses
// anything beyond type, properties, required, additionalProperties (a boolean), items (one
// schema) and annotations.
func compileFast(doc json.RawMessage) *fastSchema {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if d, has := root["$schema"]; has {
		s, ok := d.(string)
		if !ok || !knownDraft(s) {
			return nil
		}
		delete(root, "$schema")
	}
	return fastNode(root, 0)
}

// fastNode makes the fast path of one schema object, or nil when any of its keywords is
// beyond the fast path.
func fastNode(v any, depth int) *fastSchema {
	m, ok := v.(map[string]any)
	if !ok || depth > 8 {
		return nil // boolean schemas and deep ones take the full path
	}
	s := &fastSchema{types: tAny}
	for k, val := range m {
		if !s.setKeyword(k, val, depth) {
			return nil
		}
	}
	return s
}

// setKeyword records one keyword of a schema object at depth, reporting false for a keyword
// (or a form of one) the fast path does not understand.
func (s *fastSchema) setKeyword(k string, val any, depth int) bool {
	switch {
	case annotation(k):
		return true
	case k == "type":
		s.types = typesOf(val)
		return s.types != 0
	case k == "properties":
		props, ok := fastProperties(val, depth)
		s.properties = props
		return ok
	case k == "required":
		req, ok := plainStrings(val)
		s.required = req
		return ok
	case k == "additionalProperties":
		b, ok := val.(bool)
		s.closed = !b
		return ok
	case k == "enum":
		// Numbers, objects and escapes are left to the full path, which compares them.
		vals, ok := plainStrings(val)
		s.enum = vals
		return ok && len(vals) > 0
	case k == "items":
		s.items = fastNode(val, depth+1)
		return s.items != nil // includes the draft-04..07 array form of items
	}
	return false
}

// typesOf reads a "type" keyword, a name or a list of names; 0 when it is neither or names
// an unknown type.
func typesOf(val any) typeSet {
	switch t := val.(type) {
	case string:
		return typeNamed(t)
	case []any:
		var types typeSet
		for _, e := range t {
			name, ok := e.(string)
			if !ok || typeNamed(name) == 0 {
				return 0
			}
			types |= typeNamed(name)
		}
		return types
	}
	return 0
}

// fastProperties compiles a "properties" keyword at depth; false when a name is not plain
// (see plainKey) or a property's schema is beyond the fast path.
func fastProperties(val any, depth int) (map[string]*fastSchema, bool) {
	props, ok := val.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]*fastSchema, len(props))
	for name, ps := range props {
		if !plainKey(name) {
			return nil, false
		}
		if out[name] = fastNode(ps, depth+1); out[name] == nil {
			return nil, false
		}
	}
	return out, true
}

// plainStrings reads a list of plain strings (see plainKey), as "required" and a string
// "enum" are; false for anything else.
func plainStrings(val any) ([]string, bool) {
	list, ok := val.([]any)
	if !ok {
		return nil, false
	}
	var out []string
	for _, e := range list {
		str, ok := e.(string)
		if !ok || !plainKey(str) {
			return nil, false
		}
		out = append(out, str)
	}
	return out, true
}

// plainKey reports whether a property name is written the same in raw JSON as decoded:
// printable ASCII without quotes or backslashes.
func plainKey(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// acceptsDocument reports that a whole document surely validates. Objects and arrays are
// checked for validity as they are read; other documents (and padded ones) take the full
// path.
func (s *fastSchema) acceptsDocument(doc []byte) bool {
	if len(doc) == 0 || (doc[0] != '{' && doc[0] != '[') || hasExponent(doc) {
		return false
	}
	return s.accepts(doc)
}

// hasExponent reports a number written with an exponent anywhere in doc. Such a number may
// not fit a float64, which the full path's decoding refuses; without an exponent a number
// that long has a digit run that sends the full path to its exact decoder, which takes it.
func hasExponent(doc []byte) bool {
	inString, escaped := false, false
	for i, c := range doc {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case (c == 'e' || c == 'E') && i > 0 && doc[i-1] >= '0' && doc[i-1] <= '9':
			return true
		}
	}
	return false
}

// accepts reports that raw, a valid JSON value, surely validates; false means "run the
// full validator".
func (s *fastSchema) accepts(raw []byte) bool {
	t, isInteger := rawType(raw)
	if t == 0 {
		return false
	}
	switch {
	case s.types&t != 0:
	case t == tNumber && isInteger && s.types&tInteger != 0:
	default:
		return false
	}
	if s.enum != nil {
		return t == tString && s.inEnum(raw)
	}
	switch t {
	case tObject:
		return s.acceptsObject(raw)
	case tArray:
		if s.items == nil {
			return true
		}
		return jsonrpc.ArrayElements(raw, s.items.accepts)
	}
	return true
}

// inEnum reports whether the raw string is one of the enum's, written without escapes.
func (s *fastSchema) inEnum(raw []byte) bool {
	str := raw[1 : len(raw)-1]
	for _, e := range s.enum {
		if string(str) == e {
			return true
		}
	}
	return false
}

// acceptsObject checks every member, each occurrence of a repeated one included: a
// decoder keeps one of them, and whichever it keeps has been checked.
func (s *fastSchema) acceptsObject(raw []byte) bool {
	if s.properties == nil && s.required == nil && !s.closed {
		return true
	}
	if len(s.required) > 64 {
		return false
	}
	var present uint64 // bit i: required[i] was seen
	ok := jsonrpc.ObjectFields(raw, func(key []byte, escaped bool, v []byte) bool {
		if escaped || !plainKey(string(key)) {
			return false
		}
		for i, r := range s.required {
			if string(key) == r {
				present |= 1 << i
			}
		}
		ps, known := s.properties[string(key)]
		if !known {
			return !s.closed
		}
		return ps.accepts(v)
	})
	return ok && present == 1<<len(s.required)-1
}

// rawType is the JSON type of a raw value (0 when it is not one), and whether a number is
// written as an integer (no fraction, no exponent).
func rawType(raw []byte) (typeSet, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	switch c := raw[0]; {
	case c == '"':
		return tString, false
	case c == '{':
		return tObject, false
	case c == '[':
		return tArray, false
	case c == 't' || c == 'f':
		return tBoolean, false
	case c == 'n':
		return tNull, false
	case c == '-' || (c >= '0' && c <= '9'):
		integer := true
		for _, d := range raw {
			switch d {
			case 'e', 'E':
				return 0, false // may not fit a float64: the full path decides
			case '.':
				integer = false
			}
		}
		return tNumber, integer
	}
	return 0, false
}
