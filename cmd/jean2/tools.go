package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

const toolsUsage = `Usage:
  jean2 tools list [--json]
  jean2 tools run NAME --input JSON|@FILE [--workspace DIR] [--answers FILE]
  jean2 tools new NAME [--lang ts|js|go] [--dir DIR]
  jean2 tools validate [DIR]
  jean2 tools install SOURCE... [--name NAME] [--json] [--index URL]
        SOURCE: a tool folder, a .tar.gz/.tgz/.zip file, an http(s) URL of one,
        or a tool name from the index (JEAN2_TOOL_REGISTRY_URL or toolRegistryUrl
        in $JEAN2_HOME/config.json)
  jean2 tools install --recommended|--all [--json]
  jean2 tools remove NAME...
  jean2 tools update [NAME...] [--json]
  jean2 tools outdated [--json]
  jean2 tools approve NAME [--yes] [--revoke]
`

func runTools(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return usagef("tools needs a subcommand\n\n%s", toolsUsage)
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
	case "approve":
		return toolsApprove(ctx, e, args[1:])
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
	return host.New(ctx, host.Options{
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
	})
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
	h, closeAll, err := openHostWithMCP(ctx, e, workingDir())
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
		if st, ok := h.Permissions(t.Name); ok && (sandbox.Declares(st.Declared) || st.InstallScripts != nil) {
			perms = sandbox.DescribePermissions(st.Declared)
			if st.InstallScripts != nil {
				perms = strings.TrimPrefix(perms, "nothing beyond its context")
				if perms != "" {
					perms += "; "
				}
				perms += "run install scripts"
			}
			if st.NeedsApproval() {
				status = "needs approval"
				msg = strings.TrimSpace(msg + " (jean2 tools approve " + t.Name + ")")
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Version, t.Runtime, status, perms, firstLine(msg))
	}
	return tw.Flush()
}

// listedTool is a tool as `tools list --json` prints it: the host's entry and what it
// declares beyond its context, with the approval state.
type listedTool struct {
	host.Entry
	Permissions *host.PermissionState `json:"permissions,omitempty"`
}

// missingEnv names the declared variables that have no value (never the values).
func missingEnv(t host.Entry) string {
	var missing []string
	for _, v := range t.Env {
		if !v.Set {
			missing = append(missing, v.Name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "(env not set: " + strings.Join(missing, ", ") + ")"
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

	h, closeAll, err := openHostWithMCP(ctx, e, ws)
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
		Workspace: host.Workspace{Path: ws},
		Asker:     a,
		Progress:  cliProgress(e),
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
