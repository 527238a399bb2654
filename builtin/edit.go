package builtin

import (
	"context"
	"errors"
	"fmt"

	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

// editFailure is the structured result of a failed edit, so a model can tell why.
type editFailure struct {
	Code                     string         `json:"code"`
	Path                     string         `json:"path"`
	EditIndex                *int           `json:"editIndex,omitempty"`
	Attempts                 []matchAttempt `json:"attempts,omitempty"`
	CandidateLines           []int          `json:"candidateLines,omitempty"`
	NewStringExactMatchCount *int           `json:"newStringExactMatchCount,omitempty"`
}

type matchInfo struct {
	Mode       string `json:"mode"`
	LineNumber int    `json:"lineNumber"`
}

type editIn struct {
	Path      string `json:"path"`
	OldString string `json:"oldString"`
	NewString string `json:"newString"`
	Strategy  string `json:"strategy"`
}

const editSchemaStrategy = `{"type":"string","description":"Matching strategy: omit for safe ordered passes, or use 'exact'. 'line_start', 'line_end', 'partial', and 'multi_line' are compatibility strategies.","enum":["exact","line_start","line_end","partial","multi_line"]}`

// Edit is edit: one replacement of text found once in a file.
func Edit() tool.Tool {
	return define(tool.Definition{
		Name: "edit",
		Description: "Performs string replacements in an existing file.\n\n" +
			"## When to use\n\n- Making targeted changes to an existing file (adding, modifying, or removing lines)\n- Replacing a specific block of code, function, or text\n\n" +
			"## When NOT to use\n\n- Creating a new file or replacing the whole content: use write-file\n- Many edits to the same file: use multiedit\n- Multi-file changes or git-style patches: use apply-patch\n\n" +
			"## Parameters\n\n- path (required): Absolute path to the file to edit\n- oldString (required): The text to find and replace, copied VERBATIM from the file with the same indentation and whitespace. Read the file first.\n- newString (required): The replacement text; may be empty to delete the matched text.\n- strategy (optional): omit for the safe formatting-tolerant passes, or 'exact'. 'line_start', 'line_end', 'partial' and 'multi_line' are compatibility strategies.\n\n" +
			"## Matching behavior\n\nPasses run strictest first and stop at the first that finds candidates: exact, line-endings (\\r\\n and \\n equal), trailing-whitespace (ignored before a line end), indentation (one consistent shift of all nonblank lines). More than one candidate fails rather than picking one: make oldString specific enough to be unique. oldString is literal text, not a regular expression.\n\n" +
			"## Permission model\n\nThis tool requires explicit permission for files outside the workspace and sensitive files (.env, .pem, .key, credentials, etc.). Editing system directories is blocked entirely.",
		InputSchema: []byte(`{"type":"object","properties":{
			"path":{"type":"string","description":"Absolute path to the file to edit"},
			"oldString":{"type":"string","description":"The text to find and replace","minLength":1},
			"newString":{"type":"string","description":"The replacement text"},
			"strategy":` + editSchemaStrategy + `},
			"required":["path","oldString","newString"]}`),
		Timeout:     180000,
		Annotations: destructive(),
	}, edit)
}

func edit(ctx context.Context, c *tool.Context, in editIn) tool.Result {
	if in.OldString == "" {
		return fail("oldString must be a non-empty string.", editFailure{Code: "INVALID_INPUT", Path: in.Path})
	}
	if in.Strategy != "" && !knownStrategies[in.Strategy] {
		return fail(fmt.Sprintf("Unknown strategy: %s.", in.Strategy), editFailure{Code: "INVALID_INPUT", Path: in.Path})
	}
	resolved, content, res := openForEdit(ctx, c, in.Path)
	if res != nil {
		return *res
	}
	r := findMatches(content, in.OldString, in.Strategy)
	if f := matchFailure(r, content, in.NewString, resolved, nil); f != nil {
		return *f
	}
	m := r.matches[0]
	repl := adaptReplacement(in.NewString, m, content)
	next := content[:m.start] + repl + content[m.end:]
	if err := c.FS.WriteFile(ctx, resolved, []byte(next)); err != nil {
		return fsFailure(err, "")
	}
	viz := fileDiff(resolved, content, next)
	viz.MatchInfo = &matchInfoViz{Strategy: r.mode, LineNumber: m.line}
	return ok(struct {
		MatchInfo matchInfo `json:"matchInfo"`
	}{matchInfo{Mode: r.mode, LineNumber: m.line}}, viz)
}

// openForEdit checks, asks for and reads a file to edit. A non-nil result is the failure.
func openForEdit(ctx context.Context, c *tool.Context, path string) (string, string, *tool.Result) {
	resolved := c.ResolvePath(path)
	blocked := fail("Editing system directories is not allowed: "+path, editFailure{Code: "FILE_NOT_FOUND", Path: path})
	if r := precheck(ctx, c, resolved, "edit", ""); r != nil {
		if r.Error == "" {
			r = &blocked
		}
		return "", "", r
	}
	var data []byte
	err := needAccess(ctx, c, resolved, "edit", func() (err error) {
		data, err = c.FS.ReadFile(ctx, resolved)
		return err
	})
	if err != nil {
		var r tool.Result
		switch {
		case errors.Is(err, toolfs.ErrBlocked):
			r = blocked
		case isNotExist(err):
			r = fail("File not found: "+resolved, editFailure{Code: "FILE_NOT_FOUND", Path: resolved})
		default:
			r = fsFailure(err, "")
		}
		return "", "", &r
	}
	return resolved, string(data), nil
}

// matchFailure is the failed result of a search that found no match or more than one;
// idx is the edit's index in multiedit.
func matchFailure(r matchSearch, content, newString, path string, idx *int) *tool.Result {
	which := ""
	if idx != nil {
		which = fmt.Sprintf(" for edit %d", *idx)
	}
	passes := ""
	if len(r.attempts) > 0 {
		passes = " Passes: " + summarizeAttempts(r.attempts) + "."
	}
	switch {
	case len(r.matches) == 0:
		f := editFailure{Code: "NO_MATCH", Path: path, EditIndex: idx, Attempts: r.attempts}
		if newString != "" {
			n := len(exactMatches(content, newString, modeExact))
			f.NewStringExactMatchCount = &n
		}
		msg := "No match found." + passes + " Re-read the file before retrying."
		if idx != nil {
			msg = fmt.Sprintf("No match%s.%s Re-read the file before retrying.", which, passes)
		}
		res := fail(msg, f)
		return &res
	case len(r.matches) > 1:
		lines := make([]int, len(r.matches))
		for i, m := range r.matches {
			lines[i] = m.line
		}
		res := fail(fmt.Sprintf("Found %d matches%s.%s Provide a more specific oldString.", len(r.matches), which, passes),
			editFailure{Code: "AMBIGUOUS_MATCH", Path: path, EditIndex: idx, Attempts: r.attempts, CandidateLines: lines})
		return &res
	}
	return nil
}
