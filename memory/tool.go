package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
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
// home ($JEAN2_HOME); it changes only the text it names (see Apply). The files join every
// later session's instructions, so each change is asked of the person first, as a write
// outside the workspace would be, unless the person's config.json says
// {"memory": {"autoApprove": true}} (AutoApproved); and each is on the turn's ledger, so
// Restore of the turn takes it back.
func Tool(home string) tool.Tool {
	return tool.Func{Def: tool.Definition{
		Name: "memory",
		Description: "Keep facts across sessions. The memory files are in your instructions: target user (USER.md: the person's preferences and ways of working) " +
			"or memory (MEMORY.md: your notes on their projects, machine and conventions). " +
			"add appends content as a new entry; replace changes the exact text old into content; remove deletes the exact text old. " +
			fmt.Sprintf("Keep entries short and lasting; the files are capped (USER.md %d bytes, MEMORY.md %d): replace or remove entries to make room. ", MaxUserBytes, MaxMemoryBytes) +
			"Do not keep secrets, or what only this session needs. The person may be asked before each change.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["add","replace","remove"]},` +
			`"target":{"type":"string","enum":["memory","user"],"description":"memory (MEMORY.md, the default) or user (USER.md)"},` +
			`"content":{"type":"string","description":"add: the new entry; replace: the text that replaces old"},` +
			`"old":{"type":"string","description":"replace, remove: the exact text, found once in the file"}},` +
			`"required":["action"],"additionalProperties":false}`),
		Timeout: 600000, // the person's answer may take a while
	}, Run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
		var in toolIn
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Errorf("invalid arguments for memory: %v", err)
		}
		if home == "" {
			return tool.Errorf("memory: this jean2 has no home folder to keep memory in")
		}
		out, err := change(ctx, c, home, Change{Action: in.Action, Target: in.Target, Content: in.Content, Old: in.Old})
		if err != nil {
			return tool.Errorf("memory %s: %v", in.Action, err)
		}
		return tool.Success(out)
	}}
}

// change checks a change, asks the person for it, makes it and puts it on the ledger.
func change(ctx context.Context, c *tool.Context, home string, ch Change) (toolOut, error) {
	name, limit, err := fileOf(ch.Target)
	if err != nil {
		return toolOut{}, err
	}
	path := filepath.Join(home, name)
	if err := Check(home, ch); err != nil {
		return toolOut{}, err
	}
	if err := askChange(ctx, c, home, path); err != nil {
		return toolOut{}, err
	}
	text, before, err := apply(ctx, home, ch, nil)
	if before != nil || err != nil {
		rec := tool.Change{Path: path, Tool: c.Tool, CallID: c.CallID, Op: "write", Disk: before != nil, OK: err == nil, Before: before}
		if err != nil {
			rec.Error = err.Error()
		}
		c.Ledger.Record(rec)
	}
	if err != nil {
		return toolOut{}, err
	}
	return toolOut{Action: ch.Action, File: path, Bytes: len(text), Limit: limit}, nil
}

// ErrRejected is the error of a change the person refused.
var ErrRejected = errors.New(tool.UserRejection + ": the person did not allow this change to the memory")

// askChange asks the person to allow a change of a memory file, unless their config.json
// allows every change. The file is in jean2's home: the host's assessment makes the ask a
// person's alone (an unattended policy refuses it), so only the person's own setting,
// which the agent cannot write, lets the tool go on unasked.
func askChange(ctx context.Context, c *tool.Context, home, path string) error {
	auto, err := AutoApproved(home)
	if err != nil {
		c.Logger.Warn("memory: asking, as the setting could not be read", "error", err)
	}
	if auto {
		return nil
	}
	ans, err := c.Asker.Ask(ctx, tool.CreateFilePermissionAsk(tool.FilePermission{Path: path, Operation: "edit",
		Risk: "high", IsOutsideWorkspace: true, Reason: "The memory files join the instructions of every later session."}))
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrRejected, err)
	}
	var yes bool
	if json.Unmarshal(ans, &yes) != nil || !yes {
		return ErrRejected
	}
	return nil
}

// AutoApproved reads "memory"."autoApprove" of home's config.json: true lets the memory tool
// change the files without asking. Read at each call, so a saved change counts at once.
func AutoApproved(home string) (bool, error) {
	path := filepath.Join(home, "config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	var cfg struct {
		Memory struct {
			AutoApprove bool `json:"autoApprove"`
		} `json:"memory"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return cfg.Memory.AutoApprove, nil
}
