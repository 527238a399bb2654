package tool

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSchemaWarningsNameMisspeltKeywords(t *testing.T) {
	doc := json.RawMessage(`{"type":"object","propertes":{"a":{}},"requried":["a"],"x-ui":1,
		"properties":{"b":{"type":"object","properties":{"c":{"tpye":"string","description":"ok"}}},
		"d":{"type":"array","items":{"enmu":[1]}}},"anyOf":[{"minLenght":1}]}`)
	got := strings.Join(SchemaWarnings(doc), "\n")
	for _, want := range []string{
		`propertes: "propertes" is not a JSON Schema keyword and is ignored; did you mean "properties"?`,
		`requried: "requried" is not a JSON Schema keyword and is ignored; did you mean "required"?`,
		`properties.b.properties.c.tpye: "tpye" is not a JSON Schema keyword and is ignored; did you mean "type"?`,
		`properties.d.items.enmu:`,
		`anyOf[0].minLenght:`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "x-ui") || strings.Contains(got, "description") || strings.Contains(got, "properties.a") {
		t.Errorf("warned about a valid key:\n%s", got)
	}
	if w := SchemaWarnings(json.RawMessage(`{"type":"object","properties":{"propertes":{"type":"string"}},"required":["propertes"]}`)); len(w) != 0 {
		t.Errorf("a property named like a keyword is no keyword: %v", w)
	}
}

func TestSchemaProblemNamesTheKeywordPath(t *testing.T) {
	_, err := CompileSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"strng"}}}`))
	if err == nil || !strings.HasPrefix(err.Error(), "properties.a.type: value must be one of") || strings.Contains(err.Error(), "allOf") {
		t.Fatalf("error: %v", err)
	}
	_, err = CompileSchema(json.RawMessage(`{"type":"object","required":"a"}`))
	if err == nil || !strings.HasPrefix(err.Error(), "required: ") {
		t.Fatalf("error: %v", err)
	}
}
