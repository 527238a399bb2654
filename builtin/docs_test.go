package builtin_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/jean2/jean2/builtin"
)

// docs/tools.md has a section for every built-in and names each of its parameters, so a
// tool added or changed without its documentation fails here.
func TestDocsDescribeEveryBuiltin(t *testing.T) {
	doc, err := os.ReadFile("../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, tl := range builtin.Tools(builtin.Options{}) {
		d := tl.Definition()
		i := strings.Index(text, "### "+d.Name)
		if i < 0 {
			i = strings.Index(text, "/ "+d.Name+"\n")
		}
		if i < 0 && !strings.Contains(text, " / "+d.Name) {
			t.Errorf("docs/tools.md has no section for %s", d.Name)
			continue
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(d.InputSchema, &s)
		for p := range s.Properties {
			if !strings.Contains(text, p) {
				t.Errorf("docs/tools.md does not mention %s's parameter %s", d.Name, p)
			}
		}
	}
}
