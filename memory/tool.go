package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/jean2/jean2/tool"
)

type toolIn struct {
	Action  string `json:"action"`
	Target  string `json:"target"`
	Content string `json:"content"`
	Old     string `json:"old"`
}

type toolOut struct {
	Action string `json:"action"`
	File   string `json:"file"`
	Bytes  int    `json:"bytes"`
	Limit  int    `json:"limit"`
}

// Tool is the memory tool: it adds, replaces and removes entries of USER.md and MEMORY.md in
// home ($JEAN2_HOME). The files are the person's own notes to the agent, so the tool
// writes them without asking; it changes only the text it names (see Apply).
func Tool(home string) tool.Tool {
	return tool.Func{Def: tool.Definition{
		Name: "memory",
		Description: "Keep facts across sessions. The memory files are in your instructions: target user (USER.md: the person's preferences and ways of working) " +
			"or memory (MEMORY.md: your notes on their projects, machine and conventions). " +
			"add appends content as a new entry; replace changes the exact text old into content; remove deletes the exact text old. " +
			fmt.Sprintf("Keep entries short and lasting; the files are capped (USER.md %d bytes, MEMORY.md %d): replace or remove entries to make room. ", MaxUserBytes, MaxMemoryBytes) +
			"Do not keep secrets, or what only this session needs.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["add","replace","remove"]},` +
			`"target":{"type":"string","enum":["memory","user"],"description":"memory (MEMORY.md, the default) or user (USER.md)"},` +
			`"content":{"type":"string","description":"add: the new entry; replace: the text that replaces old"},` +
			`"old":{"type":"string","description":"replace, remove: the exact text, found once in the file"}},` +
			`"required":["action"],"additionalProperties":false}`),
		Timeout: 30000,
	}, Run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
		var in toolIn
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Errorf("invalid arguments for memory: %v", err)
		}
		if home == "" {
			return tool.Errorf("memory: this jean2 has no home folder to keep memory in")
		}
		name, limit, err := fileOf(in.Target)
		if err != nil {
			return tool.Errorf("memory: %v", err)
		}
		text, err := Apply(ctx, home, Change{Action: in.Action, Target: in.Target, Content: in.Content, Old: in.Old})
		if err != nil {
			return tool.Errorf("memory %s: %v", in.Action, err)
		}
		return tool.Success(toolOut{Action: in.Action, File: filepath.Join(home, name), Bytes: len(text), Limit: limit})
	}}
}
