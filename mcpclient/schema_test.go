package mcpclient_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jean2/jean2/mcpclient"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool's input schema is kept as the server wrote it, 2020-12 keywords and all: $schema,
// $defs with an $anchor, a $ref left unresolved, allOf/anyOf, if/then/else,
// additionalProperties (SEP-1613, SEP-2106). The go-sdk client decodes it from the
// tools/list answer, as here.
func TestInputSchemaKeptAsWritten(t *testing.T) {
	const written = `{
	  "$schema": "https://json-schema.org/draft/2020-12/schema",
	  "type": "object",
	  "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"city": {"type": "string"}}}},
	  "properties": {"address": {"$ref": "#/$defs/address"}, "phone": {"type": "string"}, "email": {"type": "string"},
	                 "contactMethod": {"type": "string", "enum": ["phone", "email"]}},
	  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	  "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	  "then": {"required": ["phone"]},
	  "else": {"required": ["email"]},
	  "additionalProperties": false
	}`
	var listed mcp.ListToolsResult
	if err := json.Unmarshal([]byte(`{"tools":[{"name":"t","inputSchema":`+written+`}]}`), &listed); err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(mcpclient.InputSchema(listed.Tools[0]), &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(written), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("kept %s\nwant %s", mcpclient.InputSchema(listed.Tools[0]), written)
	}
	if got := string(mcpclient.InputSchema(&mcp.Tool{Name: "bare"})); got != `{"type":"object"}` {
		t.Fatalf("a tool with no schema: %s", got)
	}
}
