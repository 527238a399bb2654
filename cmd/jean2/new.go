package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/runtime/gotool"
	"github.com/jean2/jean2/sdkjs"
	"github.com/jean2/jean2/tool"
)

var scaffoldName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

func toolsNew(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools new", e)
	lang := fs.String("lang", "ts", "ts, js or go")
	dir := fs.String("dir", "", "where to write the folder (default: $JEAN2_TOOLS_PATH/NAME)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("tools new needs exactly one tool name\n\n%s", toolsUsage)
	}
	name := pos[0]
	if !scaffoldName.MatchString(name) {
		return usagef("tool name %q: use lower-case letters, digits, '-' and '_' (at most 64), starting with a letter or digit", name)
	}
	target := *dir
	if target == "" {
		layout, err := host.LayoutFromEnv(e.getenv)
		if err != nil {
			return err
		}
		target = filepath.Join(layout.Tools, name)
	}
	if _, err := os.Stat(target); err == nil {
		return fmt.Errorf("%s already exists: choose another name or remove it", target)
	}
	files, err := scaffold(name, *lang)
	if err != nil {
		return err
	}
	// Write into a scratch folder beside the target and rename it into place, so a running
	// server never loads a half-written tool.
	scratch := target + ".staging"
	if err := os.RemoveAll(scratch); err != nil {
		return err
	}
	for rel, content := range files {
		p := filepath.Join(scratch, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if *lang != "go" {
		if err := sdkjs.WriteEditorTypes(scratch); err != nil {
			return fmt.Errorf("write SDK types: %w", err)
		}
	}
	if err := os.Rename(scratch, target); err != nil {
		return fmt.Errorf("move scaffold into place: %w", err)
	}
	if *lang == "go" {
		if layout, err := host.LayoutFromEnv(e.getenv); err == nil {
			if err := writeGoWork(layout, target); err != nil {
				fmt.Fprintf(e.stderr, "warning: go.work for editors not written: %v\n", err)
			}
		}
	}
	fmt.Fprintf(e.stdout, "Created %s\n", target)
	fmt.Fprintf(e.stdout, "Try it:  jean2 tools run %s --input '{\"path\":\"README.md\"}'\n", name)
	fmt.Fprintf(e.stdout, "Test it: jean2 tools test %s   (cases in %s)\n", name, filepath.Join(target, "tests"))
	return nil
}

func scaffold(name, lang string) (map[string]string, error) {
	pkg := map[string]any{
		"name": "@jean2/tool-" + name, "version": "0.1.0", "private": true, "type": "module",
		// A local folder jean2 fills (.jean2/types), so `npm install` works here: no registry
		// has @jean2/sdk. jean2's own installer skips it; the host provides the SDK.
		"dependencies": map[string]string{"@jean2/sdk": sdkjs.EditorDependency()},
	}
	pkgJSON, _ := json.MarshalIndent(pkg, "", "  ")
	switch lang {
	case "ts":
		return map[string]string{
			"package.json":    string(pkgJSON) + "\n",
			"VERSION":         "0.1.0\n",
			"tool.ts":         strings.ReplaceAll(tsScaffold, "NAME", name),
			"tsconfig.json":   editorConfig("tool.ts"),
			"tests/head.json": scaffoldTest(true),
			".gitignore":      ".jean2/\nnode_modules/\n",
		}, nil
	case "js":
		return map[string]string{
			"package.json":    string(pkgJSON) + "\n",
			"VERSION":         "0.1.0\n",
			"tool.js":         strings.ReplaceAll(jsScaffold, "NAME", name),
			"tests/head.json": scaffoldTest(false),
			".gitignore":      ".jean2/\nnode_modules/\n",
		}, nil
	case "go":
		files := gotool.Scaffold(name)
		files["tests/head.json"] = scaffoldTest(false)
		return files, nil
	}
	return nil, usagef("--lang %q: use ts, js or go", lang)
}

// scaffoldTest is the test cases `tools new` writes: they pass as the scaffold stands
// (`jean2 tools test NAME`), and show the format.
func scaffoldTest(visualization bool) string {
	viz := ""
	if visualization {
		viz = `,
      "visualization": { "type": "code", "content": "one\ntwo" }`
	}
	return `[
  {
    "name": "shows the first lines",
    "input": { "path": "notes.txt", "lines": 2 },
    "workspace": { "files": { "notes.txt": "one\ntwo\nthree\n" } },
    "expect": {
      "success": true,
      "result": { "path": "notes.txt", "head": "one\ntwo" }` + viz + `,
      "asks": [],
      "refused": []
    }
  },
  {
    "name": "a missing file fails",
    "input": { "path": "missing.txt" },
    "expect": { "success": false, "error": "missing.txt" }
  }
]
`
}

const tsScaffold = `import type { ToolDefinition, ToolContext, ToolResult, CodeVisualization } from '@jean2/sdk';

interface Input {
  path: string;
}

export const definition: ToolDefinition = {
  name: 'NAME',
  description: 'Show the first lines of a text file in the workspace.',
  inputSchema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'The file to read, relative to the workspace' },
      lines: { type: 'number', description: 'How many lines to show (default 20)' },
    },
    required: ['path'],
  },
  timeout: 10000,
};

export async function execute(input: Input & { lines?: number }, ctx: ToolContext): Promise<ToolResult> {
  const content = await ctx.fs.readFile(input.path, 'utf-8');
  const head = content.split('\n').slice(0, input.lines ?? 20).join('\n');
  ctx.logger.info('read file', { path: input.path, bytes: content.length });
  return {
    success: true,
    result: { path: input.path, head },
    visualization: {
      type: 'code',
      path: ctx.resolvePath(input.path),
      content: head,
      language: ctx.fs.detectLanguage(input.path),
      created: false,
    } satisfies CodeVisualization,
  };
}
`

const jsScaffold = `// @ts-check
/** @type {import('@jean2/sdk').ToolDefinition} */
export const definition = {
  name: 'NAME',
  description: 'Show the first lines of a text file in the workspace.',
  inputSchema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'The file to read, relative to the workspace' },
      lines: { type: 'number', description: 'How many lines to show (default 20)' },
    },
    required: ['path'],
  },
  timeout: 10000,
};

/**
 * @param {{ path: string, lines?: number }} input
 * @param {import('@jean2/sdk').ToolContext} ctx
 * @returns {Promise<import('@jean2/sdk').ToolResult>}
 */
export async function execute(input, ctx) {
  const content = await ctx.fs.readFile(input.path, 'utf-8');
  const head = content.split('\n').slice(0, input.lines ?? 20).join('\n');
  return { success: true, result: { path: input.path, head } };
}
`

// editorConfig is the tsconfig.json (jsconfig.json for JavaScript) of a tool folder: the
// compiler options esbuild also reads, and "paths" that send the SDK's specifiers to the
// types jean2 writes in .jean2/types, so an editor and tsc resolve them with no install.
func editorConfig(entry string) string {
	cfg := map[string]any{
		"compilerOptions": map[string]any{
			"target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler",
			"strict": true, "noEmit": true, "skipLibCheck": true, "types": []string{},
			"allowJs": true, "checkJs": strings.HasSuffix(entry, ".js"),
			"paths": sdkjs.EditorPaths(),
		},
		"include": []string{entry},
	}
	raw, _ := json.MarshalIndent(cfg, "", "  ")
	return string(raw) + "\n"
}

func toolsValidate(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools validate", e)
	asJSON := fs.Bool("json", false, "print JSON")
	typecheck := fs.Bool("typecheck", false, "run the TypeScript compiler")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("tools validate takes at most one folder or tool name\n\n%s", toolsSubUsage["validate"])
	}
	arg := ""
	if len(pos) == 1 {
		arg = pos[0]
	}
	dir, err := toolFolderArg(e, arg)
	if err != nil {
		return err
	}
	// Only this folder is loaded: the others in the tools folder are not being validated.
	h, err := openHostTuned(ctx, e, func(o *host.Options) { o.Folders = []string{} })
	if err != nil {
		return err
	}
	defer closeHost(h)
	entry := h.Validate(ctx, dir)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(entry); err != nil {
			return err
		}
	} else if entry.Status == host.StatusOK {
		fmt.Fprintf(e.stdout, "ok: %s %s (%s)\n", entry.Name, entry.Version, entry.Runtime)
		if m := missingEnv(entry); m != "" {
			fmt.Fprintln(e.stdout, "note:", m)
		}
	} else {
		fmt.Fprintf(e.stdout, "error: %s\n", entry.Error)
	}
	for _, w := range definitionWarnings(entry) {
		fmt.Fprintln(e.stderr, "warning:", w)
	}
	failed := entry.Status != host.StatusOK
	if err := writeEditorTypes(e, h.Layout(), dir); err != nil {
		fmt.Fprintf(e.stderr, "warning: editor types not written: %v\n", err)
	}
	if *typecheck {
		n, err := typecheckFolder(ctx, e, h.Layout(), dir)
		if err != nil {
			return err
		}
		if n > 0 {
			failed = true
		}
	}
	if failed {
		return exitError{code: 1}
	}
	return nil
}

// toolFolderArg finds the folder a command names: a folder path, or the name of a tool in
// the tools folder; "" is the current folder.
func toolFolderArg(e env, arg string) (string, error) {
	if arg == "" {
		arg = "."
	}
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return filepath.Abs(arg)
	}
	if scaffoldName.MatchString(arg) && !strings.ContainsRune(arg, filepath.Separator) {
		layout, err := host.LayoutFromEnv(e.getenv)
		if err != nil {
			return "", err
		}
		dir := filepath.Join(layout.Tools, arg)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir, nil
		}
		return "", usagef("%s is neither a folder nor a tool in %s", arg, layout.Tools)
	}
	return "", usagef("%s is not a folder", arg)
}

// definitionWarnings are what a loaded definition has that is most likely a mistake though
// it loads: keys of its schemas that are no JSON Schema keyword (propertes, requried), which
// validators ignore.
func definitionWarnings(entry host.Entry) []string {
	if entry.Definition == nil {
		return entry.Warnings
	}
	out := append([]string(nil), entry.Warnings...)
	for _, w := range tool.SchemaWarnings(entry.Definition.InputSchema) {
		out = append(out, "definition.inputSchema."+w)
	}
	for _, w := range tool.SchemaWarnings(entry.Definition.OutputSchema) {
		out = append(out, "definition.outputSchema."+w)
	}
	return out
}
