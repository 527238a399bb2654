package tool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

func TestCheckVisualizationAcceptsEveryType(t *testing.T) {
	good := []string{
		`{"type":"diff","path":"a.ts","hunks":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"changes":[{"type":"removed","content":"a","oldLineNumber":1},{"type":"added","content":"b","newLineNumber":1}]}],"additions":1,"deletions":1}`,
		`{"type":"diffs","title":"Two files","items":[{"type":"diff","path":"a","hunks":[],"additions":0,"deletions":0}]}`,
		`{"type":"code","path":"a.ts","content":"x","language":"typescript","created":true,"lineCount":1,"collapsed":true}`,
		`{"type":"file-list","files":[{"path":"a","action":"created"}],"groups":[{"label":"Edited","icon":"edit","files":[{"path":"b"}]}],"total":2}`,
		`{"type":"table","columns":[{"key":"n","label":"Name"}],"rows":[{"n":"x"}],"totalRows":1,"hasMore":false}`,
		`{"type":"markdown","content":"# hi"}`,
		`{"type":"shell-output","command":"ls","stdout":"a","exitCode":0}`,
		`{"type":"todo-list","items":[{"content":"do","status":"in_progress","priority":"high"}]}`,
		`{"type":"structured-response","data":{"a":1},"formatName":"x"}`,
		`{"type":"none","message":"Word count: a.txt"}`,
	}
	for _, g := range good {
		if err := tool.CheckVisualization(json.RawMessage(g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
}

func TestCheckVisualizationNamesTheProblem(t *testing.T) {
	bad := map[string]string{
		`[]`:               "visualization is not an object",
		`{"type":"chart"}`: `visualization.type "chart" is not a visualization type`,
		`{"type":"code","path":"a","content":"x"}`:                                           "visualization.created is missing",
		`{"type":"shell-output","command":"ls","exitCode":"0"}`:                              "visualization.exitCode must be a number",
		`{"type":"todo-list","items":[{"content":"a","status":"done"}]}`:                     `visualization.items[0].status is "done"`,
		`{"type":"diffs","items":[{"type":"code","path":"a","content":"","created":false}]}`: `visualization.items[0].type is "code"; "diff" expected`,
		`{"type":"none","title":5}`:                                                          "visualization.title must be a string",
		`{"type":"diff","path":"a","hunks":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"changes":[{"type":"moved","content":""}]}],"additions":0,"deletions":0}`: "visualization.hunks[0].changes[0].type",
	}
	for in, want := range bad {
		err := tool.CheckVisualization(json.RawMessage(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}
