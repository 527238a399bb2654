package tool

import (
	"encoding/json"
	"testing"
)

// Schemas of the shapes tools have; the first ones take the fast path.
var fastPathSchemas = []string{
	`{"type":"object","properties":{"n":{"type":"number"}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string","description":"p"},"count":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"mode":{"type":"string","enum":["read","write"]},"opts":{"type":"object","properties":{"deep":{"type":["boolean","null"]}},"required":["deep"],"additionalProperties":false}},"required":["path","mode"],"additionalProperties":false}`,
	`{"type":"object","required":["a","b"]}`,
	`{"type":"object","properties":{"x":{}},"additionalProperties":false}`,
}

// Schemas the fast path must leave to the full validator.
var fullPathSchemas = []string{
	`{"type":"object","properties":{"n":{"type":"number","minimum":0}}}`,
	`{"type":"object","properties":{"s":{"type":"string","format":"email"}}}`,
	`{"type":"object","properties":{"e":{"enum":[1,2]}}}`,
	`{"type":"object","additionalProperties":{"type":"string"}}`,
	`{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}]}}}`,
	`{"$schema":"https://example.com/custom","type":"object"}`,
	`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`,
	`{"oneOf":[{"type":"object"}]}`,
}

func TestFastPathCoversCommonSchemas(t *testing.T) {
	for _, doc := range fastPathSchemas {
		if compileFast(json.RawMessage(doc)) == nil {
			t.Errorf("no fast path for %s", doc)
		}
	}
	for _, doc := range fullPathSchemas {
		if compileFast(json.RawMessage(doc)) != nil {
			t.Errorf("a fast path for %s", doc)
		}
	}
	s, err := CompileSchema(json.RawMessage(fastPathSchemas[1]))
	if err != nil {
		t.Fatal(err)
	}
	for doc, valid := range map[string]bool{
		`{"path":"a","mode":"read"}`: true,
		`{"path":"a","mode":"read","count":3,"tags":["x"],"opts":{"deep":null}}`: true,
		`{"path":"a","mode":"exec"}`:                   false,
		`{"path":"a"}`:                                 false,
		`{"path":"a","mode":"read","count":1.5}`:       false,
		`{"path":"a","mode":"read","other":1}`:         false,
		`{"path":"a","mode":"read","tags":[1]}`:        false,
		`{"path":"a","mode":"read","opts":{}}`:         false,
		`{"path":"a","mode":"read","opts":{"deep":1}}`: false,
		`{"path":1,"mode":"read"}`:                     false,
		`{"path":"a","mode":"read"`:                    false,
	} {
		if err := s.Validate(json.RawMessage(doc)); (err == nil) != valid {
			t.Errorf("%s: valid=%v, got %v", doc, valid, err)
		}
	}
}

// FuzzSchemaFastPath: whatever the fast path accepts, the full validator accepts.
func FuzzSchemaFastPath(f *testing.F) {
	for _, doc := range []string{
		`{"path":"a","mode":"read","count":3,"tags":["x"],"opts":{"deep":true}}`,
		`{"n":1,"n":"x"}`, `{"n":"x","n":1}`, `{"a":1,"b":2}`, `{"x":[1,{"y":null}]}`,
		`{"count":1e400,"path":"a","mode":"read"}`, `{"count":12345678901234567890123,"path":"a","mode":"read"}`,
		`{"p\u0061th":"a","mode":"read"}`, `{"path":"a","mode":"re\u0061d"}`, `{"n":-0.0}`, `[]`, `{}`,
	} {
		f.Add([]byte(doc))
	}
	var schemas []*Schema
	for _, doc := range fastPathSchemas {
		s, err := CompileSchema(json.RawMessage(doc))
		if err != nil {
			f.Fatal(err)
		}
		schemas = append(schemas, s)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for i, s := range schemas {
			if !s.fast.acceptsDocument(doc) {
				continue
			}
			v, err := decodeInstance(doc)
			if err != nil {
				t.Fatalf("schema %d: fast path accepted %q, which does not decode: %v", i, doc, err)
			}
			if err := s.s.Validate(v); err != nil {
				t.Fatalf("schema %d: fast path accepted %q, the validator refuses it: %v", i, doc, err)
			}
		}
	})
}

// BenchmarkCompileFast is the fast path's compile of a typical tool's schema: what a
// change to fastNode must not make cost more.
func BenchmarkCompileFast(b *testing.B) {
	doc := json.RawMessage(fastPathSchemas[1])
	b.ReportAllocs()
	for b.Loop() {
		if compileFast(doc) == nil {
			b.Fatal("no fast path")
		}
	}
}
