package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
