// Command jean2 hosts tools for LLM agents: tool folders under ~/.jean2/tools are picked up
// with no build step, run in isolated workers, and given a context whose powers the host
// enforces. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/jean2/jean2/sandbox"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// usageError marks a mistake in how jean2 was called; main exits 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code chosen by a subcommand (1 for a failed tool result).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// env is what a subcommand may read from its surroundings; tests fill it in.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// stdinIsTerminal reports whether stdin is a terminal a person can answer asks on.
	stdinIsTerminal bool
	// tempMounter mounts the temporary folders' tmpfs for an ordinary user's jean2, run
	// in namespaces of its own (sandbox.EnterTempNamespace); nil for root, or where none.
	tempMounter *sandbox.TempMounter
}

const topUsage = `jean2 hosts tools for LLM agents.

Usage:
  jean2 tools list [--json]                 list tools with version, runtime, status
  jean2 tools run NAME --input JSON|@FILE   run a tool once and print its result
  jean2 tools new NAME [--lang ts|js|go]    write a working tool scaffold
  jean2 tools validate [DIR|NAME]           load a tool folder and report problems
  jean2 tools test [NAME|DIR] [--update]    run the test cases kept in a tool folder
  jean2 tools install SOURCE...             install from a folder, archive, URL or index name
  jean2 tools remove NAME...               remove installed tools (--force: your own too)
  jean2 tools update [NAME...]              reinstall tools whose index version is newer
  jean2 tools outdated [--json]             compare installed versions with the index
  jean2 tools search [WORDS...]             search the tool index
  jean2 tools approve NAME [--yes]          approve what a tool declares (paths, processes)
  jean2 mcp [--workspace DIR]               serve the tools to an MCP client over stdio
  jean2 mcp trust [--workspace DIR] [--yes] trust what a workspace's .jean2/mcp.json starts
  jean2 mcp login NAME                      sign in (OAuth) to a hosted MCP server of mcp.json
                                            (jean2 mcp logout NAME forgets it)
  jean2 mcp probe URL                       connect to an MCP server, list and try its tools
  jean2 serve [--host H] [--port N]         run the agent server: API, web client, MCP over HTTP
  jean2 signin [--open]                     print a one-time address that signs a browser in
  jean2 chat [--workspace DIR] [--server URL] [--session ID]   talk with the agent in the terminal
  jean2 run [--workspace DIR] [--format json] [--allow RULE] "PROMPT"   one turn, no person (docs/automation.md)
  jean2 schedule add|list|show|pause|resume|rm   prompts sent on a cron schedule (docs/automation.md)
  jean2 doctor [--json]                     check runtimes, the sandbox and jean2's folders
  jean2 version                             print the version

Environment:
  JEAN2_HOME        where jean2 keeps its files (default ~/.jean2)
  JEAN2_TOOLS_PATH  the tools folder (default $JEAN2_HOME/tools)
  JEAN2_RUNTIME     node or bun (default: node when installed, else bun)
  JEAN2_SANDBOX     auto, landlock, require, node or off (default auto; require is landlock
                    plus no network but the egress proxy; see docs/security.md)
  JEAN2_TOKEN       the server's API token for chat and signin (default: $JEAN2_HOME/token)
  JEAN2_SERVER      the server chat, run and signin talk to (default: this home's server.json)
  JEAN2_DATABASE_URL  postgres://… puts the database on PostgreSQL (docs/store.md)
  OPENAI_API_KEY, OPENAI_MODEL, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_MODEL
                    the model provider (docs/providers.md)
  JEAN2_TEMP_NAMESPACE  off: an ordinary user's jean2 does not run in namespaces of its own,
                    and the temporary folders' quota is measured instead of a tmpfs
  JEAN2_TOOL_REGISTRY_URL  the tool index for install/search/update/outdated (default: jean2's catalogue)
`

func run(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stdout, topUsage)
		return nil
	}
	switch args[0] {
	case "tools":
		return runTools(ctx, e, args[1:])
	case "mcp":
		return mcpServe(ctx, e, args[1:])
	case "serve":
		return serve(ctx, e, args[1:])
	case "chat":
		return runChat(ctx, e, args[1:])
	case "run":
		return runHeadless(ctx, e, args[1:])
	case "schedule":
		return runSchedule(ctx, e, args[1:])
	case "signin":
		return signin(ctx, e, args[1:])
	case "doctor":
		return doctor(ctx, e, args[1:])
	case "version", "--version":
		if len(args) > 1 && wantsHelp(args[1:]) {
			fmt.Fprint(e.stdout, "Usage: jean2 version\n\nPrint jean2's version.\n")
			return nil
		}
		fmt.Fprintln(e.stdout, "jean2", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(e.stdout, topUsage)
		return nil
	default:
		return usagef("unknown command %q\n\n%s", args[0], topUsage)
	}
}

// leaveACoreForWorkers sets GOMAXPROCS to one less than the CPUs, unless the GOMAXPROCS
// variable says otherwise. The host's own work is mostly waiting on pipes; its tool workers
// (separate processes) need the CPU. On 2 cores this took 32 calls in flight from ~33,000 to
// ~40,000 calls/s and the warm p50 from 96 to 84 µs (docs/performance.md).
func leaveACoreForWorkers() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if n := runtime.NumCPU(); n > 1 {
		runtime.GOMAXPROCS(n - 1)
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ExecArg {
		os.Exit(runLauncher(os.Args[2:]))
	}
	// An ordinary user's jean2 that hosts tools runs in a user and mount namespace of its
	// own, so that the temporary folders' quota is a tmpfs the kernel holds
	// (sandbox/tempns_linux.go).
	if hostsTools(os.Args[1:]) {
		if code, ran := sandbox.EnterTempNamespace(); ran {
			os.Exit(code)
		}
	}
	mounter := sandbox.TakeTempMounter()
	leaveACoreForWorkers()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, stdinIsTerminal: isTerminal(os.Stdin), tempMounter: mounter}
	err := run(ctx, e, os.Args[1:])
	stop()
	os.Exit(exitCode(err, e.stderr))
}

// hostsTools reports whether the subcommand of args may start tool workers or shell
// commands, whose temporary folders the namespaces are for; the others (version, signin,
// schedule) are not worth the two process starts they cost.
func hostsTools(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "tools", "mcp", "serve", "chat", "run", "doctor":
		return true
	}
	return false
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "jean2:", ue.msg)
		return 2
	default:
		fmt.Fprintln(stderr, "jean2:", err)
		return 1
	}
}
