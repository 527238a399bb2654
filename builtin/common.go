package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

// builtinTool is a built-in: a definition whose schema is written out as JSON (to match the
// catalogue's byte for byte in meaning) and a function of the raw arguments.
type builtinTool struct {
	def tool.Definition
	run func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result
}

func (t *builtinTool) Definition() tool.Definition { return t.def }

func (t *builtinTool) Execute(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
	return t.run(ctx, c, args)
}

// define builds a built-in; a definition that fails its own check is a programming error.
func define[In any](def tool.Definition, run func(ctx context.Context, c *tool.Context, in In) tool.Result) tool.Tool {
	if err := def.Check(); err != nil {
		panic(fmt.Sprintf("builtin %s: %v", def.Name, err))
	}
	return &builtinTool{def: def, run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
		var in In
		if len(args) > 0 && string(args) != "null" {
			if err := json.Unmarshal(args, &in); err != nil {
				return tool.Errorf("invalid arguments for %s: %v", def.Name, err)
			}
		}
		return run(ctx, c, in)
	}}
}

func readOnly() *tool.Annotations {
	t := true
	return &tool.Annotations{ReadOnlyHint: &t}
}

func destructive() *tool.Annotations {
	t, f := true, false
	return &tool.Annotations{ReadOnlyHint: &f, DestructiveHint: &t}
}

// ok builds a successful result with a visualization.
func ok(result any, viz any) tool.Result {
	return withViz(tool.Success(result), viz)
}

// withViz adds the visualization viz to a successful result r.
func withViz(r tool.Result, viz any) tool.Result {
	if !r.Success || viz == nil {
		return r
	}
	raw, err := json.Marshal(viz)
	if err != nil {
		return tool.Errorf("visualization cannot be serialized: %v", err)
	}
	r.Visualization = raw
	return r
}

// fail builds a failed result that also carries a structured result (edit's failure codes).
func fail(msg string, result any) tool.Result {
	r := tool.Result{Success: false, Error: msg}
	if result != nil {
		r.Result, _ = json.Marshal(result)
	}
	return r
}

func failf(format string, args ...any) tool.Result { return tool.Errorf(format, args...) }

// noneViz is the "none" visualization: a one-line message.
type noneViz struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func none(format string, args ...any) noneViz {
	return noneViz{Type: tool.VizNone, Message: fmt.Sprintf(format, args...)}
}

// inSessionTemp reports whether p lies in the session's temporary folder, where the host
// puts overflow files: reading it never needs asking.
func inSessionTemp(c *tool.Context, p string) bool {
	return c.TempDir != "" && policy.Within(p, c.TempDir)
}

// lexicallyInside reports, without a system call, whether p (absolute, cleaned) lies in
// the workspace, an allowed path or the session's temporary folder as written. It is the
// fast path of the common call: such a path needs no ask up front, and ctx.FS, which
// resolves every link, still refuses it if a link leads it elsewhere (then needAccess
// asks and the operation is tried once more).
func lexicallyInside(c *tool.Context, p string) bool {
	if inSessionTemp(c, p) || (c.Workspace != "" && policy.Within(p, filepath.Clean(c.Workspace))) {
		return true
	}
	for _, a := range c.AllowedPaths {
		if a != "" && policy.Within(p, filepath.Clean(a)) {
			return true
		}
	}
	return false
}

// precheck refuses a blocked path and asks for one outside the workspace or a sensitive
// file, as the catalogue tools do before touching it; blockedMsg is the tool's refusal.
// A path inside the workspace as written skips the checks that resolve links (ctx.FS
// makes them anyway) unless it looks sensitive.
func precheck(ctx context.Context, c *tool.Context, resolved, op, blockedMsg string) *tool.Result {
	if lexicallyInside(c, resolved) {
		if c.IsSensitivePath(resolved) {
			if err := approveFile(ctx, c, resolved, op); err != nil {
				r := rejection(err)
				return &r
			}
		}
		return nil
	}
	if c.IsBlockedPath(resolved) {
		r := failf("%s", blockedMsg)
		return &r
	}
	if err := approveFile(ctx, c, resolved, op); err != nil {
		r := rejection(err)
		return &r
	}
	return nil
}

// needAccess runs an operation on resolved and, when ctx.FS refuses it as outside the
// workspace (a link inside the workspace that leads out), asks for it as the catalogue
// tools ask for a place outside and runs it once more.
func needAccess(ctx context.Context, c *tool.Context, resolved, op string, fn func() error) error {
	err := fn()
	if !errors.Is(err, toolfs.ErrOutsideScope) {
		return err
	}
	a := tool.CreateFilePermissionAsk(tool.FilePermission{Path: resolved, Operation: op, Risk: "medium", IsOutsideWorkspace: true,
		Reason: "It lies in the workspace but leads outside it."})
	if aerr := askYes(ctx, c, a); aerr != nil {
		return aerr
	}
	return fn()
}

// fsFailure is the result of a refused or failed file operation: a person's refusal as
// USER_REJECTION, a blocked path with the tool's own words (blockedMsg, when given), else
// ctx.FS's error, which says what failed and why.
func fsFailure(err error, blockedMsg string) tool.Result {
	switch {
	case errors.Is(err, errRejected):
		return rejection(err)
	case blockedMsg != "" && errors.Is(err, toolfs.ErrBlocked):
		return failf("%s", blockedMsg)
	case errors.Is(err, toolfs.ErrOutsideScope):
		// ctx.fs's own words tell a tool's author to call ctx.ask; a person reads this.
		where := ""
		var fe *toolfs.Error
		if errors.As(err, &fe) {
			where = cmp.Or(fe.Resolved, fe.Path)
		}
		return failf("%s lies outside the workspace and its allowed paths, and no permission covers it: allow it when asked, or add it to the workspace's allowed paths.", where)
	}
	return failf("%v", err)
}

// errRejected is the conventional refusal of a person.
var errRejected = errors.New(tool.UserRejection)

// approveFile asks for a file access the host would otherwise refuse or that touches a
// sensitive file, as the catalogue tools do: once for a place outside the workspace, once
// for a sensitive file. The asks name the resolved path, so a grant covers exactly it and
// ctx.FS lets the access through. It returns errRejected when the person said no.
func approveFile(ctx context.Context, c *tool.Context, resolved, op string) error {
	if !inSessionTemp(c, resolved) && !c.IsWithinWorkspace(resolved) {
		a := tool.CreateFilePermissionAsk(tool.FilePermission{Path: resolved, Operation: op, Risk: "medium", IsOutsideWorkspace: true})
		if err := askYes(ctx, c, a); err != nil {
			return err
		}
	}
	if c.IsSensitivePath(resolved) {
		a := tool.CreateFilePermissionAsk(tool.FilePermission{Path: resolved, Operation: op, Risk: "medium", IsSensitiveFile: true,
			Reason: "This file may contain credentials or secrets."})
		if err := askYes(ctx, c, a); err != nil {
			return err
		}
	}
	return nil
}

// approveTree asks to search a folder outside the workspace (glob, grep).
func approveTree(ctx context.Context, c *tool.Context, resolved, question string) error {
	if inSessionTemp(c, resolved) || c.IsWithinWorkspace(resolved) {
		return nil
	}
	meta, _ := json.Marshal(map[string]string{"permissionKey": "path:outside_workspace", "permissionType": "action"})
	return askYes(ctx, c, tool.Ask{Type: tool.AskPermission, Question: question, Risk: "medium", Resource: "file",
		Paths: []string{resolved}, Patterns: []string{"file:" + resolved, "outside-workspace"}, Metadata: meta})
}

// askYes asks a permission and reports errRejected unless the answer is true. An asker
// that cannot be reached (no one attached) counts as a refusal, with its reason kept.
func askYes(ctx context.Context, c *tool.Context, a tool.Ask) error {
	ans, err := c.Asker.Ask(ctx, a)
	if err != nil {
		return fmt.Errorf("%w: %v", errRejected, err)
	}
	var yes bool
	if json.Unmarshal(ans, &yes) != nil || !yes {
		return errRejected
	}
	return nil
}

// rejection turns an approveFile error into the result the catalogue tools give:
// USER_REJECTION when the person said no, and USER_REJECTION with the reason when no one
// could be asked (no person or client attached), as the docs promise an ask that fails says.
func rejection(err error) tool.Result {
	if err == nil || err == errRejected {
		return tool.Result{Success: false, Error: tool.UserRejection}
	}
	return tool.Result{Success: false, Error: err.Error()}
}

// isNotExist reports whether err says the path does not exist, through ctx.FS's wrapping.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || (err != nil && strings.Contains(err.Error(), "no such file"))
}

// languageOf names a file's language for code and diff visualizations, by extension.
func languageOf(p string) string {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(p)), ".")
	switch ext {
	case "ts", "tsx":
		return "typescript"
	case "js", "jsx", "mjs", "cjs":
		return "javascript"
	case "md":
		return "markdown"
	case "py":
		return "python"
	case "rs":
		return "rust"
	case "sh":
		return "bash"
	case "yml":
		return "yaml"
	case "":
		return "text"
	}
	return ext
}
