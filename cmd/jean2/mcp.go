package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/mcpserver"
	"github.com/jean2/jean2/sandbox"
)

const mcpUsage = `Usage:
  jean2 mcp [--workspace DIR] [--auto-approve RISK]
  jean2 mcp trust [--workspace DIR] [--yes | --revoke]
  jean2 mcp login NAME [--workspace DIR] [--browser CMD] [--again]
  jean2 mcp logout NAME [--workspace DIR]
  jean2 mcp probe [--browser CMD] [--client-id ID ...] URL

Serves jean2's tools to an MCP client over stdio (one client; stdin and stdout carry the
protocol, log lines go to stderr). Tool folders are watched: a change sends
notifications/tools/list_changed. The servers of $JEAN2_HOME/mcp.json and DIR/.jean2/mcp.json
are connected and their tools served too — DIR's only once a person trusted that file's
content with jean2 mcp trust (a changed file asks again).

  --workspace DIR      the folder tool calls work in (default: the current folder)
  --auto-approve RISK  permissions granted without asking when the client cannot answer
                       asks (no elicitation): none (default), low, medium, high, critical
`

// mcpServe runs `jean2 mcp`: the tool registry as an MCP server on stdin/stdout.
func mcpServe(ctx context.Context, e env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "trust":
			return mcpTrust(e, args[1:])
		case "probe":
			return mcpProbe(ctx, e, args[1:])
		case "login":
			return mcpLogin(ctx, e, args[1:], false)
		case "logout":
			return mcpLogin(ctx, e, args[1:], true)
		}
	}
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

	h, clients, closeAll, err := openHostWithMCP(ctx, e, ws, nil)
	if err != nil {
		return err
	}
	defer closeAll()
	// Say once, at start, how tool workers are confined (jean2 doctor tells more).
	fmt.Fprintf(e.stderr, "jean2 mcp: tool workers: %s\n", h.Sandbox().Summary())
	stopProfiling, err := startProfiling(e, "jean2 mcp")
	if err != nil {
		return err
	}
	defer stopProfiling()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() { _ = h.Watch(watchCtx, host.WatchOptions{}) }()

	srv, err := mcpserver.New(h, mcpserver.Options{
		Workspace: host.Workspace{Path: ws}, Policy: policy, Version: version, Logger: cliLogger(e),
		Imports: clients,
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

const mcpTrustUsage = `Usage:
  jean2 mcp trust [--workspace DIR] [--yes | --revoke]

Shows what DIR/.jean2/mcp.json starts and, when you answer y, trusts that exact content
(its SHA-256, kept in $JEAN2_HOME/trusted-workspaces.json): from then on jean2 serve,
jean2 mcp and jean2 tools run start its servers. A changed file is not started until it is
trusted again. Each stdio server runs confined by jean2's sandbox (JEAN2_SANDBOX=off
aside): it writes only the workspace (not its .jean2) and its own cache folder under
$JEAN2_HOME/cache/mcp, sees nothing of $JEAN2_HOME, the credential folders or jean2's keys,
and reaches only the hosts its entry's "network" lists (npx and uvx: their registry too),
through jean2's proxy. The prompt shows each server's reach; trusting the file approves it.

  --workspace DIR  the workspace folder (default: the current folder)
  --yes            trust without asking (for scripts)
  --revoke         take the trust back
`

// mcpTrust runs `jean2 mcp trust`: a person trusts a workspace's mcp.json content.
func mcpTrust(e env, args []string) error {
	fs := newFlags("mcp trust", e)
	workspace := fs.String("workspace", "", "the workspace folder")
	yes := fs.Bool("yes", false, "trust without asking")
	revoke := fs.Bool("revoke", false, "take the trust back")
	if help, err := parseFlags(fs, e, args, mcpTrustUsage, ""); help || err != nil {
		return err
	}
	ws := *workspace
	if ws == "" {
		ws = workingDir()
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return usagef("--workspace %q: %v", *workspace, err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return usagef("--workspace %s is not a folder", ws)
	}
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return err
	}
	trust := mcpclient.NewTrust(layout.Home)
	if *revoke {
		if err := trust.Revoke(ws); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "The trust of %s was taken back; its servers are not started until it is trusted again.\n", mcpclient.WorkspaceConfigPath(ws))
		return nil
	}
	sb, err := sandboxOptions(e)
	if err != nil {
		return err
	}
	// The person is told what will really run: with the sandbox off, unconfined.
	file := mcpclient.ReadWorkspaceFile(ws).UnderSandbox(sb.Mode == sandbox.ModeOff)
	if !file.Present {
		fmt.Fprintf(e.stdout, "%s does not exist: there is nothing to trust.\n", file.Path)
		return nil
	}
	if file.Err != nil {
		return fmt.Errorf("%v: fix it, then trust it", file.Err)
	}
	if ok, err := trust.Trusted(file); err != nil {
		return err
	} else if ok {
		fmt.Fprintf(e.stdout, "%s (sha256 %s) is trusted already.\n", file.Path, shortHash(file.SHA256))
		return nil
	}
	if !confirmMCPTrust(e, file.Path, file.Workspace, file.Commands(), *yes) {
		return exitError{code: 1}
	}
	if err := trust.Set(file); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Trusted %s (sha256 %s); a changed file asks again.\n", file.Path, shortHash(file.SHA256))
	return nil
}

// confirmMCPTrust shows what a workspace's mcp.json starts and asks y/N on the terminal;
// yes answers for the person (a script's --yes). The chat asks with it too.
func confirmMCPTrust(e env, file, workspace string, commands []string, yes bool) bool {
	how := "each confined by jean2's sandbox, able to do what is said after it"
	if sb, err := sandboxOptions(e); err != nil || sb.Mode == sandbox.ModeOff {
		how = "as you, OUTSIDE the sandbox: JEAN2_SANDBOX is off"
	}
	fmt.Fprintf(e.stdout, "%s wants to start (%s):\n", termtext.Line(file), how)
	for _, c := range commands {
		// The workspace's file wrote it: nothing in it may redraw the terminal.
		fmt.Fprintf(e.stdout, "  %s\n", termtext.Line(c))
	}
	if len(commands) == 0 {
		fmt.Fprintln(e.stdout, "  (no servers)")
	}
	if yes {
		return true
	}
	if !e.stdinIsTerminal {
		fmt.Fprintf(e.stderr, "jean2: stdin is not a terminal to ask on: run jean2 mcp trust --workspace %s --yes to trust without asking\n", workspace)
		return false
	}
	fmt.Fprint(e.stdout, "Trust this file? [y/N] ")
	if a := strings.ToLower(strings.TrimSpace(readAnswer(e.stdin))); a != "y" && a != "yes" {
		fmt.Fprintln(e.stdout, "Not trusted.")
		return false
	}
	return true
}

// readAnswer reads one line a byte at a time, so nothing after it is taken from a reader
// another part (the chat's input) reads next.
func readAnswer(r io.Reader) string {
	var line []byte
	var b [1]byte
	for {
		n, err := r.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if err != nil {
			break
		}
	}
	return string(line)
}
