package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jean2/jean2/internal/textdist"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema.
type Schema struct {
	s    *jsonschema.Schema
	fast *fastSchema // nil when the schema needs the full validator (schema_fast.go)
}

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless $schema says otherwise).
// Remote references are not fetched.
func CompileSchema(doc json.RawMessage) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noRemoteLoader{})
	const url = "mem:///schema.json"
	if err := c.AddResource(url, v); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		if msg, ok := schemaProblem(err); ok {
			return nil, errors.New(msg)
		}
		return nil, errors.New(strings.ReplaceAll(err.Error(), url, "schema"))
	}
	return &Schema{s: s, fast: compileFast(doc)}, nil
}

type noRemoteLoader struct{}

func (noRemoteLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("remote schema %s is not loaded: inline it", url)
}

// Validate checks a JSON document against the schema. The error lists every violation with
// its location in the document, so a model can fix its arguments.
func (s *Schema) Validate(doc json.RawMessage) error {
	if s.fast != nil && s.fast.acceptsDocument(doc) {
		return nil
	}
	v, err := decodeInstance(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotJSON, err)
	}
	if err := s.s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &ValidationError{Problems: flatten(ve)}
		}
		return err
	}
	return nil
}

// errNotJSON marks a document that did not decode.
var errNotJSON = errors.New("not valid JSON")

// ValidationError lists what is wrong with a document, one problem per entry.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string {
	return strings.Join(e.Problems, "; ")
}

func flatten(ve *jsonschema.ValidationError) []string {
	printer := message.NewPrinter(language.English)
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			if loc == "/" {
				loc = "(root)"
			}
			out = append(out, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(out) == 0 {
		out = append(out, ve.Error())
	}
	return out
}

// decodeInstance decodes a document for validation. Numbers decode to float64, which is
// exact for up to 15 significant digits; a document with a longer digit run takes the
// validator's own decoder, which keeps numbers exact. (The cheap path matters: it runs on
// every call.)
func decodeInstance(doc json.RawMessage) (any, error) {
	run := 0
	for _, c := range doc {
		if c >= '0' && c <= '9' {
			run++
			if run > 15 {
				return jsonschema.UnmarshalJSON(bytes.NewReader(doc))
			}
		} else {
			run = 0
		}
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// schemaProblem turns "the schema is not valid against the metaschema" into the keyword path
// of the first problem and what is wrong there ("properties.a.type: value must be one of
// …"), instead of the validator's tree of allOf/anyOf failures.
func schemaProblem(err error) (string, bool) {
	var sve *jsonschema.SchemaValidationError
	if !errors.As(err, &sve) {
		return "", false
	}
	var ve *jsonschema.ValidationError
	if !errors.As(sve.Err, &ve) {
		return "", false
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	where := "the schema"
	if len(leaf.InstanceLocation) > 0 {
		where = strings.Join(leaf.InstanceLocation, ".")
	}
	return fmt.Sprintf("%s: %s", where, leaf.ErrorKind.LocalizedString(message.NewPrinter(language.English))), true
}

// schemaKeywords are the JSON Schema (2020-12 and draft-07) keywords and the annotations
// tools commonly carry; a key that is none of them, where keywords are expected, is most
// likely a misspelt one (propertes, requried), which a validator ignores silently.
var schemaKeywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`$schema $id $ref $defs $anchor $dynamicRef $dynamicAnchor
		$vocabulary $comment definitions type enum const multipleOf maximum exclusiveMaximum
		minimum exclusiveMinimum maxLength minLength pattern maxItems minItems uniqueItems
		maxContains minContains maxProperties minProperties required dependentRequired
		dependencies properties patternProperties additionalProperties unevaluatedProperties
		propertyNames items prefixItems additionalItems unevaluatedItems contains allOf anyOf
		oneOf not if then else dependentSchemas title description default deprecated readOnly
		writeOnly examples format contentEncoding contentMediaType contentSchema nullable
		discriminator example`) {
		schemaKeywords[k] = true
	}
}

// SchemaWarnings lists keys of a JSON Schema that are no keyword (a misspelling the
// validator ignores), each with its path ("properties.path.requried") and the keyword it
// most likely meant. Keys starting with "x-" are extensions and pass.
func SchemaWarnings(doc json.RawMessage) []string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return nil
	}
	var out []string
	var walk func(node any, path string)
	walk = func(node any, path string) {
		m, ok := node.(map[string]any)
		if !ok {
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		at := func(k string) string {
			if path == "" {
				return k
			}
			return path + "." + k
		}
		for _, k := range keys {
			val := m[k]
			switch {
			case strings.HasPrefix(k, "x-"):
			case !schemaKeywords[k]:
				msg := fmt.Sprintf("%s: %q is not a JSON Schema keyword and is ignored", at(k), k)
				if near := nearestKeyword(k); near != "" {
					msg += fmt.Sprintf("; did you mean %q?", near)
				}
				out = append(out, msg)
			case k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions" || k == "dependentSchemas":
				if sub, ok := val.(map[string]any); ok {
					names := make([]string, 0, len(sub))
					for n := range sub {
						names = append(names, n)
					}
					sort.Strings(names)
					for _, n := range names {
						walk(sub[n], at(k)+"."+n)
					}
				}
			case k == "allOf" || k == "anyOf" || k == "oneOf" || k == "prefixItems":
				if arr, ok := val.([]any); ok {
					for i, x := range arr {
						walk(x, fmt.Sprintf("%s[%d]", at(k), i))
					}
				}
			case k == "items" || k == "additionalProperties" || k == "not" || k == "if" || k == "then" ||
				k == "else" || k == "contains" || k == "propertyNames" || k == "unevaluatedProperties" ||
				k == "unevaluatedItems" || k == "additionalItems" || k == "contentSchema":
				walk(val, at(k))
			}
		}
	}
	walk(v, "")
	return out
}

func nearestKeyword(k string) string {
	best, bestD := "", 3
	lk := strings.ToLower(k)
	for kw := range schemaKeywords {
		if d := textdist.Distance(lk, strings.ToLower(kw)); d < bestD || (d == bestD && best != "" && kw < best) {
			best, bestD = kw, d
		}
	}
	return best
}
