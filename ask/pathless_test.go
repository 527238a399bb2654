package ask

import (
	"encoding/json"
	"testing"

	"github.com/jean2/jean2/tool"
)

// TestGrantsPathlessOpensReadsOnly: the pathless asks of jean2's catalogue (resource unset,
// metadata permissionKey "path:outside_workspace") and of the guide (resource "file", no
// paths) open reads of their call, never writes, never a sensitive or protected path; a
// permission with a different key, or that names a pattern, opens nothing.
func TestGrantsPathlessOpensReadsOnly(t *testing.T) {
	catalogue := tool.Ask{Type: tool.AskPermission, Question: "Searching in files outside the workspace requires approval.", Risk: "medium",
		Metadata: json.RawMessage(`{"permissionKey":"path:outside_workspace","permissionType":"action"}`)}
	writeAsk := tool.Ask{Type: tool.AskPermission, Question: "Write files outside the workspace?", Risk: "high", Resource: "file"}
	for name, a := range map[string]tool.Ask{"catalogue": catalogue, "guide write": writeAsk} {
		if !OpensReads(a) {
			t.Fatalf("%s: OpensReads = false", name)
		}
		g := newGrants(t)
		c := baseCall()
		c.Protected = []string{"/home/u/.jean2"}
		record(t, g, c, a, tool.DurationSession)
		if !g.Covers(c, "/srv/docs/a.txt", false) {
			t.Errorf("%s: a granted pathless ask does not open reads in its call", name)
		}
		if g.Covers(c, "/srv/docs/a.txt", true) {
			t.Errorf("%s: a pathless grant opens writes", name)
		}
		for _, p := range []string{"/srv/docs/.env", "/srv/keys/id_rsa", "/home/u/.jean2/.env", "/home/u/.jean2/jean2.db", "/home/u"} {
			if g.Covers(c, p, false) {
				t.Errorf("%s: a pathless grant opens %s (sensitive or protected)", name, p)
			}
		}
	}
	for name, a := range map[string]tool.Ask{
		"other key":    {Type: tool.AskPermission, Question: "q", Metadata: json.RawMessage(`{"permissionKey":"file_pattern:sensitive"}`)},
		"with pattern": {Type: tool.AskPermission, Question: "q", Patterns: []string{"grep"}, Metadata: catalogue.Metadata},
		"network":      {Type: tool.AskPermission, Question: "q", Resource: "network", Metadata: catalogue.Metadata},
		"not json":     {Type: tool.AskPermission, Question: "q", Metadata: json.RawMessage(`"path:outside_workspace"`)},
	} {
		if OpensReads(a) {
			t.Errorf("%s: OpensReads = true", name)
		}
		g := newGrants(t)
		c := baseCall()
		record(t, g, c, a, tool.DurationSession)
		if g.Covers(c, "/srv/docs/a.txt", false) {
			t.Errorf("%s: opens reads", name)
		}
	}
	if got := Assess(baseCall(), catalogue); !got.PersonOnly || got.Risk != "critical" {
		t.Errorf("Assess(catalogue pathless ask) = %+v; want person-only, critical", got)
	}
}
