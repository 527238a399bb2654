package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/sandbox"
)

const toolsUsage = `Usage:
  jean2 tools list [--json]
  jean2 tools run NAME --input JSON|@FILE [--workspace DIR] [--answers FILE]
  jean2 tools new NAME [--lang ts|js|go] [--dir DIR]
  jean2 tools validate [DIR|NAME] [--json] [--typecheck]
  jean2 tools test [NAME|DIR] [--update] [--run PATTERN] [--json]
  jean2 tools install SOURCE... [--name NAME] [--json] [--index URL]
        SOURCE: a tool folder, a .tar.gz/.tgz/.zip file, an http(s) URL of one,
        or a tool name from the index (JEAN2_TOOL_REGISTRY_URL or toolRegistryUrl
        in $JEAN2_HOME/config.json; default: jean2's catalogue)
  jean2 tools install --recommended|--all|--installed [--json]
  jean2 tools search [WORDS...] [--installed] [--json]
  jean2 tools remove NAME...
  jean2 tools update [NAME...] [--json]
  jean2 tools outdated [--json]
  jean2 tools approve NAME [--yes] [--revoke] [--grant POWER...]

jean2 tools SUBCOMMAND --help describes one.
`

// toolsSubUsage is each tools subcommand's own usage, which `jean2 tools SUB --help` prints.
var toolsSubUsage = map[string]string{
	"list": `Usage: jean2 tools list [--json]

List every tool with its version, runtime, status, what it declares beyond its context, and
why it does not load. A declared variable jean2 never passes to tools shows as "withheld".
`,
	"run": `Usage: jean2 tools run NAME --input JSON|@FILE [--workspace DIR] [--answers FILE] [--session ID]

Run one call of a tool and print its result as JSON. Exit 0 on success, 1 on a failed
result, 2 on a usage error. A thrown error's stack (mapped to tool.ts:LINE) goes to stderr.
  --input      the arguments as JSON, or @FILE to read them from a file (default {})
  --workspace  the workspace folder (default: the current folder)
  --answers    a JSON file of answers to the tool's asks (labels and yes/no accepted)
  --session    a session id (default: a new one)
`,
	"new": `Usage: jean2 tools new NAME [--lang ts|js|go] [--dir DIR]

Write a working tool folder, with a passing test case (tests/*.json) and editor types.
  --lang  ts (default), js or go
  --dir   where to write it (default: $JEAN2_TOOLS_PATH/NAME)
`,
	"validate": `Usage: jean2 tools validate [DIR|NAME] [--json] [--typecheck]

Load a tool folder (default: the current folder) and report what is wrong, with file:line.
Also writes the editor types (.jean2/types) so that @jean2/sdk resolves in the folder.
  --json       print the tool's entry as JSON
  --typecheck  run the TypeScript compiler (installed from npm once, cached under
               $JEAN2_HOME/cache) and print tool.ts:LINE:COL for each error
`,
	"test": `Usage: jean2 tools test [NAME|DIR] [--update] [--run PATTERN] [--json]

Run the test cases kept in the tool folder (tests/*.json, default: the current folder) in a
real worker under the real policy. Exit 0 when all pass, 1 when one fails.
  --update  rewrite the golden visualization snapshots (tests/__snapshots__)
  --run     run only the cases whose name contains PATTERN
  --json    print the report as JSON
See docs/writing-tools.md, "Testing a tool".
`,
	"install": `Usage:
  jean2 tools install SOURCE... [--name NAME] [--json] [--index URL]
  jean2 tools install --recommended|--all|--installed [--json]

SOURCE: a tool folder, a .tar.gz/.tgz/.zip file, an http(s) URL of one, or a tool name from
the index (JEAN2_TOOL_REGISTRY_URL or toolRegistryUrl in $JEAN2_HOME/config.json; without
either, jean2's catalogue: the tools.json of the latest release, docs/tools.md).
  --recommended  every tool the index recommends
  --all          every tool of the index that is not installed yet
  --installed    every installed tool the index lists, installed again from it
`,
	"search": `Usage: jean2 tools search [WORDS...] [--installed] [--json] [--index URL]

List the tool index's tools whose name, description or category holds every word (all of
them without words), with their version where the index gives one and whether each is
installed.
`,
	"remove": `Usage: jean2 tools remove NAME... [--force]

Remove installed tools (aliases: rm, uninstall). A tool folder jean2 did not install (one
you wrote, or made with tools new) is refused: it holds your only copy of its source;
--force removes it too. A tool folder that is a link loses the link only.
`,
	"update": `Usage: jean2 tools update [NAME...] [--json]

Reinstall the tools whose index version is newer (all when no NAME is given).
`,
	"outdated": `Usage: jean2 tools outdated [--json]

Compare the installed versions with the tool index.
`,
	"approve": `Usage: jean2 tools approve NAME [--yes] [--revoke]
       jean2 tools approve NAME --grant POWER... [--yes]

Approve what a tool declares beyond its context (paths, processes, network hosts, a raised
memory cap, install scripts), once per version.
  --grant   grant the serving version a power it does not declare (repeatable):
            childProcess, network=HOST, read=PATH, write=PATH or data=TOOL
            (share TOOL's data folder at $JEAN2_HOME/data)
  --revoke  take back its approvals and grants
`,
}

// toolsAliases maps the subcommands' other names to the names toolsSubUsage knows.
var toolsAliases = map[string]string{"ls": "list", "rm": "remove", "uninstall": "remove"}

// wantsHelp reports whether args ask for help (-h, -help, --help) before a "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func runTools(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return usagef("tools needs a subcommand\n\n%s", toolsUsage)
	}
	sub := args[0]
	if a, ok := toolsAliases[sub]; ok {
		sub = a
	}
	if u, ok := toolsSubUsage[sub]; ok && wantsHelp(args[1:]) {
		fmt.Fprint(e.stdout, u)
		return nil
	}
	switch args[0] {
	case "list", "ls":
		return toolsList(ctx, e, args[1:])
	case "run":
		return toolsRun(ctx, e, args[1:])
	case "new":
		return toolsNew(ctx, e, args[1:])
	case "validate":
		return toolsValidate(ctx, e, args[1:])
	case "install":
		return toolsInstall(ctx, e, args[1:])
	case "remove", "rm", "uninstall":
		return toolsRemove(ctx, e, args[1:])
	case "update":
		return toolsUpdate(ctx, e, args[1:])
	case "outdated":
		return toolsOutdated(ctx, e, args[1:])
	case "search":
		return toolsSearch(ctx, e, args[1:])
	case "approve":
		return toolsApprove(ctx, e, args[1:])
	case "test":
		return toolsTest(ctx, e, args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(e.stdout, toolsUsage)
		return nil
	}
	return usagef("unknown tools subcommand %q\n\n%s", args[0], toolsUsage)
}

// newFlags makes a flag set whose errors become usage errors instead of exiting.
func newFlags(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses the flags of a subcommand that takes no positional arguments. help is
// true when --help was asked for: the usage is printed and the command has nothing left to do.
func parseFlags(fs *flag.FlagSet, e env, args []string, usage, noArgs string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, usage)
			return true, nil
		}
		return false, usagef("%v\n\n%s", err, usage)
	}
	if fs.NArg() > 0 {
		return false, usagef("%s takes no arguments, got %q%s\n\n%s", fs.Name(), fs.Args(), noArgs, usage)
	}
	return false, nil
}

// parseInterspersed parses flags that may come before or after positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usagef("%v\n\n%s", err, toolsUsage)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// openHost starts a host on the layout the environment names.
func openHost(ctx context.Context, e env, sources ...host.ToolSource) (*host.Host, error) {
	return openHostTuned(ctx, e, nil, sources...)
}

// openHostTuned is openHost with a last say on the host's options (nil: none).
func openHostTuned(ctx context.Context, e env, tune func(*host.Options), sources ...host.ToolSource) (*host.Host, error) {
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return nil, err
	}
	sb, err := sandboxOptions(e)
	if err != nil {
		return nil, err
	}
	builtinTools, disabledBuiltins, err := builtins(layout, sb)
	if err != nil {
		return nil, err
	}
	limits, err := configLimits(layout)
	if err != nil {
		return nil, err
	}
	opts := host.Options{
		Limits:            limits,
		LLM:               cliLLM(e, layout.Home),
		Builtins:          builtinTools,
		DisabledBuiltins:  disabledBuiltins,
		Sandbox:           sb,
		Layout:            layout,
		RuntimePreference: e.getenv("JEAN2_RUNTIME"),
		BunPath:           e.getenv("JEAN2_BUN"),
		NodePath:          e.getenv("JEAN2_NODE"),
		ServerEnv:         os.Environ(),
		Logger:            cliLogger(e),
		Sources:           sources,
	}
	if tune != nil {
		tune(&opts)
	}
	return host.New(ctx, opts)
}

func closeHost(h *host.Host) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.Close(ctx)
}

func toolsList(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools list", e)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	h, _, closeAll, err := openHostWithMCP(ctx, e, workingDir(), nil)
	if err != nil {
		return err
	}
	defer closeAll()
	entries := h.Tools()
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		listed := make([]listedTool, 0, len(entries))
		for _, t := range entries {
			lt := listedTool{Entry: t}
			if st, ok := h.Permissions(t.Name); ok {
				lt.Permissions = &st
			}
			listed = append(listed, lt)
		}
		return enc.Encode(listed)
	}
	if len(entries) == 0 {
		fmt.Fprintf(e.stdout, "No tools in %s. Create one with: jean2 tools new my-tool\n", h.Layout().Tools)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tRUNTIME\tSTATUS\tPERMISSIONS\tERROR")
	for _, t := range entries {
		msg := t.Error
		if var_ := missingEnv(t); var_ != "" {
			msg = strings.TrimSpace(msg + " " + var_)
		}
		status, perms := t.Status, "-"
		if st, ok := h.Permissions(t.Name); ok {
			perms = permissionsColumn(st)
			if st.NeedsApproval() {
				status = "needs approval"
				msg = strings.TrimSpace(msg + " (jean2 tools approve " + t.Name + ")")
			}
		}
		// A tool's strings (its declaration, its error) are printed with control characters
		// escaped: none may redraw the terminal.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termtext.Line(t.Name), termtext.Line(t.Version), t.Runtime, status, termtext.Line(perms), termtext.Line(firstLine(msg)))
	}
	return tw.Flush()
}

// permissionsColumn says what a tool declares (install scripts included) and what a person
// granted it beyond that; "-" for neither.
func permissionsColumn(st host.PermissionState) string {
	var parts []string
	if sandbox.Declares(st.Declared) {
		parts = append(parts, sandbox.DescribePermissions(st.Declared))
	}
	if st.InstallScripts != nil {
		parts = append(parts, "run install scripts")
	}
	if sandbox.Declares(st.Granted) {
		parts = append(parts, "granted: "+sandbox.DescribePermissions(st.Granted))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// listedTool is a tool as `tools list --json` prints it: the host's entry and what it
// declares beyond its context, with the approval state.
type listedTool struct {
	host.Entry
	Permissions *host.PermissionState `json:"permissions,omitempty"`
}

// missingEnv names the declared variables that have no value (never the values): those
// jean2 withholds from every tool (provider keys, its own variables) apart, since setting
// them changes nothing.
func missingEnv(t host.Entry) string {
	var missing, withheld []string
	for _, v := range t.Env {
		switch {
		case v.Withheld:
			withheld = append(withheld, v.Name)
		case !v.Set:
			missing = append(missing, v.Name)
		}
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "(env not set: "+strings.Join(missing, ", ")+")")
	}
	if len(withheld) > 0 {
		parts = append(parts, "(withheld: "+strings.Join(withheld, ", ")+": jean2 never passes these to tools)")
	}
	return strings.Join(parts, " ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func toolsRun(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools run", e)
	input := fs.String("input", "{}", "arguments as JSON, or @FILE to read them from a file")
	workspace := fs.String("workspace", "", "the workspace folder (default: the current folder)")
	answers := fs.String("answers", "", "a JSON file of answers to the tool's asks")
	session := fs.String("session", "", "a session id (default: a new one)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("tools run needs exactly one tool name\n\n%s", toolsUsage)
	}
	argsJSON, err := readInput(*input)
	if err != nil {
		return err
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

	a, err := cliAsker(e, *answers)
	if err != nil {
		return err
	}

	// The host loads every tool; what it logs about the others (a broken folder the person
	// is not working on) is not this command's business.
	h, _, closeAll, err := openHostWithMCP(ctx, e, ws, func(o *host.Options) {
		o.Logger = slog.New(onlyTool{Handler: o.Logger.Handler(), name: pos[0]})
	})
	if err != nil {
		return err
	}
	defer closeAll()
	sessionID := *session
	if sessionID == "" {
		sessionID = fmt.Sprintf("cli-%d", time.Now().UnixNano())
	}
	out := h.Invoke(ctx, host.Call{
		Tool: pos[0], Args: argsJSON, SessionID: sessionID,
		Workspace:  host.Workspace{Path: ws},
		Asker:      a,
		Progress:   cliProgress(e),
		LogHandler: throwPrinter{w: e.stderr},
	})
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out.Result); err != nil {
		return err
	}
	if out.Overflow != nil {
		fmt.Fprintf(e.stderr, "jean2: the result is %d characters; a model would see the first %d, the whole is in %s\n", out.Overflow.Chars, host.OverflowPreview, out.Overflow.Path)
	}
	if out.VisualizationError != "" {
		fmt.Fprintf(e.stderr, "jean2: the visualization was dropped: %s\n", out.VisualizationError)
	}
	if !out.Result.Success {
		return exitError{code: 1}
	}
	return nil
}

// readInput reads --input: JSON text, or @FILE.
func readInput(s string) (json.RawMessage, error) {
	raw := []byte(s)
	if strings.HasPrefix(s, "@") {
		var err error
		if raw, err = os.ReadFile(s[1:]); err != nil {
			return nil, usagef("--input %s: %v", s, err)
		}
	}
	if !json.Valid(raw) {
		return nil, usagef("--input is not valid JSON: give a JSON object such as '{\"path\":\"README.md\"}' or @FILE")
	}
	return raw, nil
}
