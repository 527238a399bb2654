package builtin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jean2/jean2/tool"
)

// multieditAskAbove is how many edits one call may make before the person is asked.
const multieditAskAbove = 10

type multieditIn struct {
	Path  string `json:"path"`
	Edits []struct {
		OldString string `json:"oldString"`
		NewString string `json:"newString"`
		Strategy  string `json:"strategy"`
	} `json:"edits"`
}

// MultiEdit is multiedit: several replacements in one file, all or none.
func MultiEdit() tool.Tool {
	return define(tool.Definition{
		Name: "multiedit",
		Description: "Performs multiple string replacements in a single file atomically.\n\n" +
			"Every edit matches against the in-memory result of preceding edits. No filesystem write occurs until all edits succeed, so either all edits are applied or none are and the file is left unchanged.\n\n" +
			"## Parameters\n\n- path (required): Absolute path to the file to edit\n- edits (required): At least one { oldString, newString, strategy? }, each as in the edit tool (oldString copied VERBATIM from the file).\n\n" +
			"## Matching behavior\n\nEach edit uses edit's safe ordered passes (exact, line-endings, trailing-whitespace, indentation). An ambiguous match fails that edit and leaves the whole file unchanged; the failing edit reports its zero-based index.\n\n" +
			fmt.Sprintf("## Permission model\n\nThis tool requires explicit permission for files outside the workspace, sensitive files, and more than %d edits at once. Editing system directories is blocked entirely.", multieditAskAbove),
		InputSchema: []byte(`{"type":"object","properties":{
			"path":{"type":"string","description":"Absolute path to the file to edit"},
			"edits":{"type":"array","description":"Array of edits to apply atomically","minItems":1,"items":{"type":"object","properties":{
				"oldString":{"type":"string","description":"The text to find and replace","minLength":1},
				"newString":{"type":"string","description":"The replacement text"},
				"strategy":` + editSchemaStrategy + `},
				"required":["oldString","newString"]}}},
			"required":["path","edits"]}`),
		Timeout:     180000,
		Annotations: destructive(),
	}, multiedit)
}

func multiedit(ctx context.Context, c *tool.Context, in multieditIn) tool.Result {
	if len(in.Edits) == 0 {
		return fail("edits must be a non-empty array.", editFailure{Code: "INVALID_INPUT", Path: in.Path})
	}
	for i, e := range in.Edits {
		if e.OldString == "" {
			return fail(fmt.Sprintf("edits[%d].oldString must be a non-empty string.", i), editFailure{Code: "INVALID_INPUT", Path: in.Path, EditIndex: &i})
		}
		if e.Strategy != "" && !knownStrategies[e.Strategy] {
			return fail(fmt.Sprintf("edits[%d].strategy is unknown: %s.", i, e.Strategy), editFailure{Code: "INVALID_INPUT", Path: in.Path, EditIndex: &i})
		}
	}
	if len(in.Edits) > multieditAskAbove {
		meta, _ := json.Marshal(map[string]any{"permissionKey": "edit_count:excessive", "permissionType": "action", "editCount": len(in.Edits)})
		if err := askYes(ctx, c, tool.Ask{Type: tool.AskPermission, Risk: "medium", Metadata: meta,
			Question: fmt.Sprintf("Editing more than %d edits at once requires approval.", multieditAskAbove)}); err != nil {
			return rejection(err)
		}
	}
	resolved, content, res := openForEdit(ctx, c, in.Path)
	if res != nil {
		return *res
	}
	type done struct {
		MatchInfo matchInfo `json:"matchInfo"`
	}
	results := make([]done, 0, len(in.Edits))
	cur := content
	for i, e := range in.Edits {
		r := findMatches(cur, e.OldString, e.Strategy)
		if f := matchFailure(r, cur, e.NewString, resolved, &i); f != nil {
			return *f
		}
		m := r.matches[0]
		repl := adaptReplacement(e.NewString, m, cur)
		results = append(results, done{matchInfo{Mode: r.mode, LineNumber: m.line}})
		cur = cur[:m.start] + repl + cur[m.end:]
	}
	if err := c.FS.WriteFile(ctx, resolved, []byte(cur)); err != nil {
		return fsFailure(err, "")
	}
	// One diff of the whole change: a diff per edit would number the lines of in-between
	// states the file never had on disk.
	return ok(struct {
		Results []done `json:"results"`
	}{results}, fileDiff(resolved, content, cur))
}
