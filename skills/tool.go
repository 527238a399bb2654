package skills

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jean2/jean2/tool"
)

// skillIn is the skill tool's input.
type skillIn struct {
	Name string `json:"name"`
	File string `json:"file"`
}

// skillOut is what the model reads: text-shaped (tool.ModelText), so the body arrives as
// Markdown, not as an escaped JSON string.
type skillOut struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	File    string `json:"file,omitempty"`
	Content string `json:"content"`
}

// Tool is the skill tool: it loads one skill of the call's workspace (its body and the list
// of its files) or one of its files. home is $JEAN2_HOME.
func Tool(home string) tool.Tool {
	t := true
	return tool.Func{Def: tool.Definition{
		Name: "skill",
		Description: "Load a skill: the instructions of the skill named in the system prompt's skill list, and the list of the files in its folder. " +
			"Load a skill when the task matches its description, before you start, and follow it. " +
			"To read one of the skill's files, call again with file set to its path relative to the skill's folder.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The skill's name, as listed"},` +
			`"file":{"type":"string","description":"A file of the skill's folder to read instead, relative to the folder (e.g. reference/forms.md)"}},` +
			`"required":["name"],"additionalProperties":false}`),
		Timeout:     10000,
		Annotations: &tool.Annotations{ReadOnlyHint: &t},
	}, Run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
		var in skillIn
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Errorf("invalid arguments for skill: %v", err)
		}
		if in.File != "" {
			text, err := ReadFile(home, c.Workspace, in.Name, in.File)
			if err != nil {
				return tool.Errorf("%v", err)
			}
			sk, _ := find(home, c.Workspace, in.Name)
			return tool.Success(skillOut{Name: in.Name, Path: sk.Dir, File: in.File, Content: text})
		}
		l, err := Load(home, c.Workspace, in.Name)
		if err != nil {
			return tool.Errorf("%v", err)
		}
		return tool.Success(skillOut{Name: l.Name, Path: l.Dir, Content: l.text()})
	}}
}

// text is the loaded skill as the model reads it: the body, then the folder's files.
func (l Loaded) text() string {
	var b strings.Builder
	b.WriteString(l.Body)
	if len(l.Files) == 0 {
		return b.String()
	}
	b.WriteString("\n\n---\nFiles in this skill's folder (read one with the skill tool's file argument):\n")
	for _, f := range l.Files {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	if l.Truncated {
		fmt.Fprintf(&b, "(only the first %d files are listed)\n", MaxFiles)
	}
	return b.String()
}
