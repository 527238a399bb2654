package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpserver"
)

const mcpUsage = `Usage:
  jean2 mcp [--workspace DIR] [--auto-approve RISK]

Serves jean2's tools to an MCP client over stdio (one client; stdin and stdout carry the
protocol, log lines go to stderr). Tool folders are watched: a change sends
notifications/tools/list_changed. The servers of $JEAN2_HOME/mcp.json and DIR/.jean2/mcp.json
are connected and their tools served too.

  --workspace DIR      the folder tool calls work in (default: the current folder)
  --auto-approve RISK  permissions granted without asking when the client cannot answer
                       asks (no elicitation): none (default), low, medium, high, critical
`

// mcpServe runs `jean2 mcp`: the tool registry as an MCP server on stdin/stdout.
func mcpServe(ctx context.Context, e env, args []string) error {
	fs := newFlags("mcp", e)
	workspace := fs.String("workspace", "", "the workspace folder")
	autoApprove := fs.String("auto-approve", "none", "risk granted without asking when the client cannot answer")
	if help, err := parseFlags(fs, e, args, mcpUsage, ""); help || err != nil {
		return err
	}
	policy, err := ask.NewPolicy(*autoApprove)
	if err != nil {
		return usagef("--auto-approve: %v", err)
	}
	ws := *workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return err
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return usagef("--workspace %q: %v", *workspace, err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return usagef("--workspace %s is not a folder", ws)
	}

	h, closeAll, err := openHostWithMCP(ctx, e, ws)
	if err != nil {
		return err
	}
	defer closeAll()
	// Say once, at start, how tool workers are confined (jean2 doctor tells more).
	fmt.Fprintf(e.stderr, "jean2 mcp: tool workers: %s\n", h.Sandbox().Summary())
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() { _ = h.Watch(watchCtx, host.WatchOptions{}) }()

	srv, err := mcpserver.New(h, mcpserver.Options{
		Workspace: host.Workspace{Path: ws}, Policy: policy, Version: version, Logger: cliLogger(e),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	err = srv.Run(ctx, &mcpserver.StdioTransport{Reader: e.stdin, Writer: e.stdout})
	if ctx.Err() != nil {
		return nil // interrupted: a normal way to stop a server
	}
	return err
}
