package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var namedForm = `{"asks":[{"type":"form","question":"Profile","questions":[
 {"type":"text","name":"name","question":"Name","defaultValue":"John Doe"},
 {"type":"number","name":"age","question":"Age","integer":true,"minimum":0,"defaultValue":30},
 {"type":"number","name":"score","question":"Score","defaultValue":95.5},
 {"type":"single_select","name":"status","question":"Status","defaultValue":"active","options":[{"label":"active","value":"active"},{"label":"inactive","value":"inactive"}]},
 {"type":"single_select","name":"titled","question":"Titled","options":[{"label":"One","value":1},{"label":"Two","value":2}]},
 {"type":"single_select","name":"legacy","question":"Legacy","legacyEnumNames":true,"options":[{"label":"One","value":"o1"},{"label":"Two","value":"o2"}]},
 {"type":"multi_select","name":"tags","question":"Tags","defaultValue":["a"],"options":[{"label":"a","value":"a"},{"label":"b","value":"b"}]},
 {"type":"multi_select","name":"titledTags","question":"Titled tags","options":[{"label":"Alpha","value":"a"},{"label":"Beta","value":"b"}]},
 {"type":"confirm","name":"verified","question":"Verified","defaultValue":true}
]}]}`

// A form's questions reach the client under their names, with their defaults, numbers as
// integer or number fields, and choices in the variant their options call for (plain enum,
// oneOf / anyOf with titles, enum with enumNames); an option whose values are distinct
// strings is answered by its value (the const), others by their label; the answers come
// back by name.
func TestAskFormsNamedWithDefaultsAndEnumVariants(t *testing.T) {
	for _, version := range []string{newest, classic} {
		r := newRig(t)
		var schema string
		cs := r.connect(version, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			schema = toJSON(req.Params.RequestedSchema)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
				"name": "Jane", "age": 25.0, "score": 88.5, "status": "inactive", "titled": "Two", "legacy": "o1",
				"tags": []any{"b"}, "titledTags": []any{"a", "b"}, "verified": false,
			}}, nil
		}})
		res := call(t, cs, "asker", obj(namedForm))
		for _, want := range []string{
			`"name":{"default":"John Doe","title":"Name","type":"string"}`,
			`"age":{"default":30,"minimum":0,"title":"Age","type":"integer"}`,
			`"score":{"default":95.5,"title":"Score","type":"number"}`,
			`"status":{"default":"active","enum":["active","inactive"],"title":"Status","type":"string"}`,
			`"titled":{"oneOf":[{"const":"One","title":"One"},{"const":"Two","title":"Two"}],"title":"Titled","type":"string"}`,
			`"legacy":{"enum":["o1","o2"],"enumNames":["One","Two"],"title":"Legacy","type":"string"}`,
			`"tags":{"default":["a"],"items":{"enum":["a","b"],"type":"string"},"title":"Tags","type":"array"}`,
			`"titledTags":{"items":{"anyOf":[{"const":"a","title":"Alpha"},{"const":"b","title":"Beta"}]},"title":"Titled tags","type":"array"}`,
			`"verified":{"default":true,"title":"Verified","type":"boolean"}`,
		} {
			if !strings.Contains(schema, want) {
				t.Errorf("%s: the form lacks %s:\n%s", version, want, schema)
			}
		}
		want := `{"success":true,"result":[{"type":"form","answers":[{"question":"Name","answer":"Jane"},{"question":"Age","answer":25},{"question":"Score","answer":88.5},{"question":"Status","answer":"inactive"},{"question":"Titled","answer":2},{"question":"Legacy","answer":"o1"},{"question":"Tags","answer":["b"]},{"question":"Titled tags","answer":["a","b"]},{"question":"Verified","answer":false}]}]}`
		if text(res) != want {
			t.Errorf("%s: got  %s\nwant %s", version, text(res), want)
		}
	}
}
