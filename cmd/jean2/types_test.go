package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The scaffold's package.json lists the SDK so that `npm install` (real npm) works in the
// folder and links the types; `tools validate --typecheck` installs TypeScript once, runs
// it, and prints tool.ts:LINE:COL for each error, exiting 1.
func TestTypesInTheEditor(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	c := newCLI(t)
	if out, stderr, code := c.run("", "tools", "new", "typed"); code != 0 {
		t.Fatalf("new: %d %s %s", code, out, stderr)
	}
	dir := filepath.Join(c.home, "tools", "typed")
	install := exec.Command(npm, "install", "--no-audit", "--no-fund")
	install.Dir = dir
	install.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(t.TempDir(), "npm-cache"))
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install in the scaffold: %v\n%s", err, out)
	}
	if target, err := os.Readlink(filepath.Join(dir, "node_modules", "@jean2", "sdk")); err != nil || !strings.Contains(target, ".jean2/types/@jean2/sdk") {
		t.Fatalf("npm did not link the SDK types: %q %v", target, err)
	}
	out, stderr, code := c.run("", "tools", "validate", "typed", "--typecheck")
	if code != 0 || !strings.Contains(out, "typecheck: no errors") {
		t.Fatalf("typecheck of the scaffold: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(c.home, "cache", "typescript", typescriptVersion, "node_modules", "typescript", "bin", "tsc")); err != nil {
		t.Fatalf("TypeScript is not cached under $JEAN2_HOME/cache: %v", err)
	}
	// The tool still loads and passes its test after npm install.
	if out, stderr, code := c.run("", "tools", "test", "typed"); code != 0 {
		t.Fatalf("tools test after npm install: %d %s %s", code, out, stderr)
	}

	// A hand-made folder: validate writes the types and a tsconfig whose paths find them;
	// a type error and a misspelt SDK type are reported at their line.
	hand := filepath.Join(t.TempDir(), "hand")
	_ = os.MkdirAll(hand, 0o755)
	src := "import type { ToolDefinition, ToolContex } from '@jean2/sdk';\n" +
		"export const definition: ToolDefinition = { name: 'hand', description: 'd', inputSchema: { type: 'object' } };\n" +
		"export async function execute(_input: unknown, ctx: ToolContex) {\n" +
		"  const n: number = 'not a number';\n" +
		"  return { success: true, result: n };\n" +
		"}\n"
	_ = os.WriteFile(filepath.Join(hand, "tool.ts"), []byte(src), 0o644)
	out, stderr, code = c.run("", "tools", "validate", hand, "--typecheck")
	if code != 1 {
		t.Fatalf("typecheck with errors: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"ok: hand ", "tool.ts:1:31: error TS2724:", "ToolContex", "tool.ts:4:9: error TS2322: Type 'string' is not assignable to type 'number'.", "typecheck: 2 errors"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(hand, "tsconfig.json")); err != nil {
		t.Errorf("no tsconfig.json written for the editor: %v", err)
	}
	// A package.json that asks npm for @jean2/sdk is pointed out.
	_ = os.WriteFile(filepath.Join(hand, "package.json"), []byte(`{"name":"hand","type":"module","dependencies":{"@jean2/sdk":"^0.9.0"}}`), 0o644)
	if _, stderr, _ := c.run("", "tools", "validate", hand); !strings.Contains(stderr, `use "file:.jean2/types/@jean2/sdk"`) {
		t.Errorf("no note about the registry dependency:\n%s", stderr)
	}

	// The real-world CommonJS package that reads __filename: typescript, as npm installed it
	// above, bundled into a tool and run under Node in the sandbox.
	tsTool := c.writeTool("ts-in-a-tool", map[string]string{"tool.ts": "import ts from 'typescript';\n" +
		"export const definition = { name: 'ts-in-a-tool', description: 'd', inputSchema: { type: 'object' } };\n" +
		"export async function execute() {\n" +
		"  const lib = ts.getDirectoryPath(ts.sys.getExecutingFilePath());\n" +
		"  return { success: true, result: { js: ts.transpileModule('let x: number = 1', {}).outputText.trim(), lib: ts.sys.fileExists(lib + '/lib.d.ts') } };\n" +
		"}\n"})
	copyDir(t, filepath.Join(c.home, "cache", "typescript", typescriptVersion, "node_modules"), filepath.Join(tsTool, "node_modules"))
	out, stderr, code = c.run("", "tools", "run", "ts-in-a-tool")
	if code != 0 || !strings.Contains(out, `"js": "var x = 1;"`) || !strings.Contains(out, `"lib": true`) {
		t.Fatalf("typescript in a tool: exit %d\n%s\n%s", code, out, stderr)
	}
}

// A tool written against jean2's own @jean2/sdk, importing every tool-facing name it
// exports (sdkjs/testdata/typecheck/catalogue-sdk-names.ts), passes
// `tools validate --typecheck` as it is.
func TestTypecheckJean2SDKNames(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "sdkjs", "testdata", "typecheck", "catalogue-sdk-names.ts"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	dir := c.writeTool("catalogue-sdk-names", map[string]string{"tool.ts": string(src),
		"package.json": `{"name": "@jean2/tool-catalogue-sdk-names", "version": "1.0.0", "private": true, "type": "module", "dependencies": {"@jean2/sdk": "^0.9.0"}}`})
	out, stderr, code := c.run("", "tools", "validate", dir, "--typecheck")
	if code != 0 || !strings.Contains(out, "typecheck: no errors") {
		t.Fatalf("typecheck: exit %d\n%s\n%s", code, out, stderr)
	}
}
