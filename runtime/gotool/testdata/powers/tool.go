// Command powers is the test tool of package gotool: one binary whose modes exercise every
// power of the context, a panic, a cancel it honours and one it ignores.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/jean2/jean2/tool"
)

type input struct {
	Mode  string `json:"mode"`
	Sleep int    `json:"sleep,omitempty"`
}

func run(ctx context.Context, c *tool.Context, in input) (any, error) {
	switch in.Mode {
	case "pid":
		return os.Getpid(), nil
	case "panic":
		panic("boom")
	case "sleep":
		time.Sleep(time.Duration(in.Sleep) * time.Millisecond)
		return "slept", nil
	case "wait":
		<-ctx.Done()
		c.Logger.Warn("saw cancel: " + context.Cause(ctx).Error())
		return nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
	case "ignore":
		time.Sleep(time.Hour)
		return "never", nil
	case "stdout":
		fmt.Println(`{"jsonrpc":"2.0","id":1,"result":"not the protocol"}`)
		fmt.Fprintln(os.Stderr, "a line on stderr")
		return "printed", nil
	case "powers":
		return powers(ctx, c)
	}
	return nil, fmt.Errorf("unknown mode %q", in.Mode)
}

func powers(ctx context.Context, c *tool.Context) (map[string]any, error) {
	seen := map[string]any{}
	text, err := c.FS.ReadFile(ctx, "notes.txt")
	if err != nil {
		return nil, fmt.Errorf("readFile: %w", err)
	}
	seen["read"] = string(text)
	if err := c.FS.WriteFile(ctx, "out.txt", []byte("written")); err != nil {
		return nil, fmt.Errorf("writeFile: %w", err)
	}
	if err := c.FS.AppendFile(ctx, "out.txt", []byte{0xff, 0x01}); err != nil {
		return nil, fmt.Errorf("appendFile: %w", err)
	}
	entries, err := c.FS.ReadDir(ctx, ".")
	if err != nil {
		return nil, fmt.Errorf("readDir: %w", err)
	}
	seen["entries"] = len(entries)
	if ok, err := c.FS.Exists(ctx, "out.txt"); err != nil || !ok {
		return nil, fmt.Errorf("exists: %v %w", ok, err)
	}
	st, err := c.FS.Stat(ctx, "out.txt")
	if err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	seen["size"] = st.Size
	if err := c.FS.Mkdir(ctx, "d", true); err != nil {
		return nil, fmt.Errorf("mkdir: %w", err)
	}
	if err := c.FS.Rename(ctx, "out.txt", "d/out.txt"); err != nil {
		return nil, fmt.Errorf("rename: %w", err)
	}
	if err := c.FS.Remove(ctx, "d", true); err != nil {
		return nil, fmt.Errorf("rm: %w", err)
	}
	_, err = c.FS.ReadFile(ctx, "missing.txt")
	var he *tool.HostError
	if !errors.As(err, &he) || !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("missing file gave %v", err)
	}
	seen["missingCode"] = he.Code
	seen["missing"] = err.Error()

	answer, err := c.Asker.Ask(ctx, tool.Ask{Type: tool.AskConfirm, Question: "Proceed?"})
	if err != nil {
		return nil, fmt.Errorf("ask: %w", err)
	}
	seen["ask"] = answer
	reply, err := c.LLM.GenerateText(ctx, tool.TextRequest{Prompt: "hi"})
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	seen["text"] = reply
	obj, err := c.LLM.GenerateStructured(ctx, tool.StructuredRequest{TextRequest: tool.TextRequest{Prompt: "obj"}, Schema: json.RawMessage(`{"type":"object"}`)})
	if err != nil {
		return nil, fmt.Errorf("llm structured: %w", err)
	}
	seen["structured"] = obj

	if err := c.Session.Set("local", json.RawMessage(`true`)); err != nil {
		return nil, err
	}
	v, ok, err := c.SessionStore().Get(ctx, "color")
	if err != nil {
		return nil, fmt.Errorf("session get: %w", err)
	}
	seen["color"] = v
	seen["colorFound"] = ok
	if err := c.SessionStore().Set(ctx, "shape", json.RawMessage(`"round"`)); err != nil {
		return nil, fmt.Errorf("session set: %w", err)
	}

	c.Ledger.Record(tool.Change{Path: "external.db", Tool: "powers", Disk: true, OK: true})
	c.Progress(tool.Progress{Message: "half", Current: 1, Total: 2})
	c.Logger.Info("working", "step", 3, slog.Group("g", "ok", true))

	key, err := c.Env.Require("API_KEY")
	if err != nil {
		return nil, err
	}
	seen["env"] = key
	_, hasHome := c.Env.Get("HOME")
	seen["envHasHome"] = hasHome
	seen["processEnv"] = os.Getenv("API_KEY") // only the context carries declared variables

	if err := c.Workspaces.AddWorkspacePath(ctx, "/data"); err != nil {
		return nil, fmt.Errorf("addWorkspacePath: %w", err)
	}
	seen["allowed"] = c.AllowedPaths
	seen["ids"] = []string{c.CallID, c.SessionID, c.WorkspaceID, c.Workspace, c.TempDir, c.Home, c.Tool}
	return seen, nil
}

func main() {
	t, err := tool.NewTyped(tool.Definition{Name: "powers", Description: "Exercises every power of the context.", Env: []string{"API_KEY"}}, run)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := tool.Serve(t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
