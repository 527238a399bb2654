package loader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const jean2Tool = `import type { ToolDefinition, ToolContext, ToolResult } from '@jean2/sdk';
import { createFilePermissionAsk, SENSITIVE_FILE_PATTERNS } from '@jean2/sdk';
import { shout } from './lib/shout';

export const definition: ToolDefinition = {
  name: 'echo',
  description: 'Echo the text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
};

export async function execute(input: { text: string }, ctx: ToolContext): Promise<ToolResult> {
  const ask = createFilePermissionAsk({ path: '/w/.env', operation: 'read', risk: 'low', isSensitiveFile: true });
  return { success: true, result: { text: shout(input.text), ask: ask.question, patterns: SENSITIVE_FILE_PATTERNS.length } };
}
`

const jxTool = `import { createToolDefinition, toolSuccess, createToolContext } from "@jxsuite/ai/tools";
import * as root from "@jxsuite/ai";
import { createLedger } from "@jean2/sdk";

export default createToolDefinition({
  name: "rename_page",
  description: "Rename a page file.",
  parameters: { type: "object", properties: { from: { type: "string" }, to: { type: "string" } }, required: ["from", "to"] },
  interactive: false,
  async execute(args, ctx) {
    const { from, to } = args;
    ctx.ledger.record({ disk: true, ok: true, path: to, tool: "rename_page" });
    return toolSuccess({ from, to, sameModule: root.createLedger === createLedger }, "Renamed " + from + " to " + to + ".");
  },
});

export const detached = () => createToolContext({});
`

func TestBundleBothShapesOffline(t *testing.T) {
	tools := t.TempDir()
	writeFiles(t, tools, map[string]string{
		"echo/tool.ts":        jean2Tool,
		"echo/lib/shout.ts":   "export const shout = (s: string): string => s.toUpperCase() + '!';\n",
		"echo/package.json":   `{"name": "@jean2/tool-echo", "version": "1.0.0", "type": "module", "dependencies": {"@jean2/sdk": "^0.9.0"}}`,
		"rename/tool.js":      jxTool,
		"rename/package.json": `{"type": "module", "dependencies": {"@jxsuite/ai": "^1.0.0", "@jean2/sdk": "*"}}`,
	})
	l := newTestLoader(t)

	echo := l.mustLoad(t, filepath.Join(tools, "echo"), LoadOptions{})
	if echo.Cached || echo.Kind != KindJS || echo.Entry != "tool.ts" || echo.Version != "1.0.0" || echo.Name != "echo" {
		t.Errorf("echo bundle = %+v", echo)
	}
	if echo.Path != filepath.Join(l.opts.CacheDir, "bundles", echo.Hash+".mjs") {
		t.Errorf("bundle path %s", echo.Path)
	}
	// The SDK was never fetched: nothing was installed, and no node_modules appeared.
	for _, dir := range []string{"echo", "rename"} {
		if _, err := os.Stat(filepath.Join(tools, dir, "node_modules")); !os.IsNotExist(err) {
			t.Errorf("%s/node_modules exists (%v); the SDK must come from the binary", dir, err)
		}
	}
	out, stderr, err := runNode(t, echo.Path, `
const res = await mod.execute({ text: 'hi' }, {});
console.log(JSON.stringify({ name: mod.definition.name, res }));`)
	if err != nil {
		t.Fatalf("run echo bundle: %v\n%s", err, stderr)
	}
	var got struct {
		Name string `json:"name"`
		Res  struct {
			Success bool `json:"success"`
			Result  struct {
				Text     string `json:"text"`
				Ask      string `json:"ask"`
				Patterns int    `json:"patterns"`
			} `json:"result"`
		} `json:"res"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Name != "echo" || got.Res.Result.Text != "HI!" || got.Res.Result.Ask != `Reading file ".env" (sensitive file) requires approval.` || got.Res.Result.Patterns != 12 {
		t.Errorf("echo ran as %+v", got)
	}

	rename := l.mustLoad(t, filepath.Join(tools, "rename"), LoadOptions{})
	out, stderr, err = runNode(t, rename.Path, `
const def = mod.default;
const ctx = mod.detached();
const res = await def.execute({ from: 'a.md', to: 'b.md' }, ctx);
console.log(JSON.stringify({ keys: Object.keys(def), params: def.parameters.required, res, ledger: ctx.ledger.summary() }));`)
	if err != nil {
		t.Fatalf("run rename bundle: %v\n%s", err, stderr)
	}
	want := `{"keys":["name","description","parameters","interactive","execute"],"params":["from","to"],"res":{"success":true,"data":{"from":"a.md","to":"b.md","sameModule":true},"summary":"Renamed a.md to b.md."},"ledger":{"changed":["b.md"],"failed":[]}}`
	if strings.TrimSpace(out) != want {
		t.Errorf("rename ran as\n%s\nwant\n%s", out, want)
	}
	// Three specifiers, one copy of the SDK in the bundle.
	code, err := os.ReadFile(rename.Path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(code), "function createLedger("); n != 1 {
		t.Errorf("bundle holds %d copies of the SDK", n)
	}
	if !strings.Contains(string(code), "//# sourceMappingURL=data:application/json;base64,") {
		t.Error("bundle has no inline source map")
	}
}

func TestBundleErrorsAreLocated(t *testing.T) {
	tools := t.TempDir()
	writeFiles(t, tools, map[string]string{
		"syntax/tool.ts":     "export const definition = {\n  name: 'x',\n};\n\nexport function execute() {\n  const a = 1\n  let b = 2 x\n}\n",
		"unicode/tool.ts":    "const s = 'héllo'; let = ;\n",
		"missing/tool.ts":    "import { helper } from './helpers/missing';\n\nexport const x = helper;\n",
		"bare/tool.ts":       "export {};\nimport chalk from 'chalk/index.js';\nconsole.log(chalk);\n",
		"scoped/tool.ts":     "import { z } from '@acme/zed';\nconsole.log(z);\n",
		"jx-other/tool.ts":   "import { x } from '@jxsuite/ai/agents';\nconsole.log(x);\n",
		"sdk-sub/tool.ts":    "import { x } from '@jean2/sdk/internal';\nconsole.log(x);\n",
		"two-errors/tool.ts": "import './a';\nimport './b';\n",
		"nested/tool.ts":     "import { f } from './src/f';\nexport const g = f;\n",
		"nested/src/f.ts":    "export const f = () => {\n  return 1 +;\n};\n",
	})
	l := newTestLoader(t)
	cases := map[string]string{
		"syntax":     `syntax: bundle: tool.ts:7:13: Expected ";" but found "x"`,
		"unicode":    `unicode: bundle: tool.ts:1:26: Unexpected ";"`, // characters, not bytes: é is two bytes,
		"missing":    `missing: bundle: tool.ts:1:24: Could not resolve "./helpers/missing"`,
		"bare":       `bare: bundle: tool.ts:2:19: Could not resolve "chalk/index.js": add "chalk" to "dependencies" in package.json`,
		"scoped":     `scoped: bundle: tool.ts:1:19: Could not resolve "@acme/zed": add "@acme/zed" to "dependencies" in package.json`,
		"jx-other":   `jx-other: bundle: tool.ts:1:19: "@jxsuite/ai/agents" is not provided by the jean2 host: import @jean2/sdk, @jxsuite/ai, @jxsuite/ai/tools`,
		"sdk-sub":    `sdk-sub: bundle: tool.ts:1:19: "@jean2/sdk/internal" is not provided by the jean2 host: import @jean2/sdk, @jxsuite/ai, @jxsuite/ai/tools`,
		"two-errors": `two-errors: bundle: tool.ts:1:8: Could not resolve "./a" (and 1 more error)`,
		"nested":     `nested: bundle: src/f.ts:2:13: Unexpected ";"`,
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			le := l.loadErr(t, filepath.Join(tools, name))
			if le.Error() != want {
				t.Errorf("\n got %s\nwant %s", le.Error(), want)
			}
			if le.Stage != StageBundle || le.Folder != name {
				t.Errorf("stage %q folder %q", le.Stage, le.Folder)
			}
		})
	}
	le := l.loadErr(t, filepath.Join(tools, "syntax"))
	if le.File != "tool.ts" || le.Line != 7 || le.Column != 13 || le.Msg != `Expected ";" but found "x"` {
		t.Errorf("fields: %+v", le)
	}
	if entries, _ := os.ReadDir(filepath.Join(l.opts.CacheDir, "bundles")); len(entries) != 0 {
		t.Errorf("failed builds left %d files in the cache", len(entries))
	}
}

func TestCacheHitSkipsEsbuild(t *testing.T) {
	tools := t.TempDir()
	dir := filepath.Join(tools, "echo")
	writeFiles(t, dir, map[string]string{
		"tool.ts":      jean2Tool,
		"lib/shout.ts": "export const shout = (s: string): string => s.toUpperCase();\n",
		"package.json": `{"type": "module"}`,
	})
	l := newTestLoader(t)
	first := l.mustLoad(t, dir, LoadOptions{})
	var progress progressLog
	second := l.mustLoad(t, dir, LoadOptions{Progress: progress.report})
	if l.builds.Load() != 1 || !second.Cached || first.Cached || second.Hash != first.Hash || second.Path != first.Path {
		t.Fatalf("second load: builds %d, cached %v, hash %s vs %s", l.builds.Load(), second.Cached, second.Hash, first.Hash)
	}
	if progress.has(StageBundle) {
		t.Error("a cache hit reported bundling")
	}
	// A new Loader on the same cache (a host restart) hits too.
	again := New(Options{CacheDir: l.opts.CacheDir})
	built := false
	again.build = func(req buildRequest) buildResult { built = true; return esbuildBundle(req) }
	if b, err := again.Load(context.Background(), Inspect(dir), LoadOptions{}); err != nil || !b.Cached || built {
		t.Fatalf("restart: %+v %v built=%v", b, err, built)
	}

	// Files of node_modules and .git do not count; every other file does.
	writeFiles(t, dir, map[string]string{"node_modules/x/index.js": "x", ".git/HEAD": "ref"})
	if b := l.mustLoad(t, dir, LoadOptions{}); !b.Cached {
		t.Error("node_modules or .git changed the hash")
	}
	writeFiles(t, dir, map[string]string{"lib/shout.ts": "export const shout = (s: string): string => s + '?';\n"})
	changed := l.mustLoad(t, dir, LoadOptions{})
	if changed.Cached || changed.Hash == first.Hash || l.builds.Load() != 2 {
		t.Errorf("changed file: cached %v, builds %d", changed.Cached, l.builds.Load())
	}
	writeFiles(t, dir, map[string]string{"README.md": "docs"})
	if b := l.mustLoad(t, dir, LoadOptions{}); b.Cached || b.Hash == changed.Hash {
		t.Error("a new file did not change the hash")
	}

	// The definition cache.
	if _, ok := l.Meta(first.Hash); ok {
		t.Error("Meta before StoreMeta")
	}
	def := json.RawMessage(`{"name":"echo","description":"Echo."}`)
	if err := l.StoreMeta(first.Hash, def); err != nil {
		t.Fatal(err)
	}
	if raw, ok := again.Meta(first.Hash); !ok || string(raw) != string(def) {
		t.Errorf("Meta = %s, %v", raw, ok)
	}
	if err := l.StoreMeta("../../etc/passwd", def); err == nil {
		t.Error("StoreMeta took a path as a hash")
	}
	if err := l.StoreMeta(first.Hash, json.RawMessage(`{not json`)); err == nil {
		t.Error("StoreMeta took invalid JSON")
	}
	if _, ok := l.Meta("../x"); ok {
		t.Error("Meta took a path as a hash")
	}
}

func TestConcurrentLoadsBundleOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "echo")
	writeFiles(t, dir, map[string]string{"tool.ts": "export const definition = { name: 'x' };\n"})
	l := newTestLoader(t)
	var wg sync.WaitGroup
	hashes := make([]string, 6)
	for i := range hashes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := l.Load(context.Background(), Inspect(dir), LoadOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			hashes[i] = b.Hash
		}()
	}
	wg.Wait()
	if l.builds.Load() != 1 {
		t.Errorf("%d builds for one folder", l.builds.Load())
	}
	for _, h := range hashes[1:] {
		if h != hashes[0] {
			t.Errorf("hashes differ: %v", hashes)
		}
	}
}

// A load error in a tool's own code maps back to its file and line through the inline
// source map (node --enable-source-maps; Bun reads inline maps by itself).
func TestSourceMapPointsIntoToolFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "thrower")
	writeFiles(t, dir, map[string]string{
		"tool.ts":      "import { check } from './src/check';\n\nexport const definition = { name: 'thrower' };\ncheck();\n",
		"src/check.ts": "interface Unused { a: string }\n\nexport function check(): void {\n  throw new Error('broken at load');\n}\n",
	})
	l := newTestLoader(t)
	b := l.mustLoad(t, dir, LoadOptions{})
	_, stderr, err := runNode(t, b.Path, "")
	if err == nil {
		t.Fatal("the bundle loaded; it should throw")
	}
	if want := filepath.Join(dir, "src", "check.ts") + ":4:9"; !strings.Contains(stderr, want) {
		t.Errorf("stack does not point at %s:\n%s", want, stderr)
	}
	if want := filepath.Join(dir, "tool.ts") + ":4:"; !strings.Contains(stderr, want) {
		t.Errorf("stack does not point at %s:\n%s", want, stderr)
	}
}

// Bundles live in the cache; the tool still finds files beside it, CommonJS code still
// requires builtins, a tool's own `require` does not clash with the loader's, and Bun's
// modules stay imports.
func TestBundleRuntimeBehaviour(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "assets")
	writeFiles(t, dir, map[string]string{
		"tool.ts": `import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import legacy from './legacy.cjs';
const require = createRequire(import.meta.url);
export const data = readFileSync(new URL('./data.txt', import.meta.url), 'utf8').trim();
export const dirname = import.meta.dirname;
// Bun's names for them, which jean2's catalogue uses (file-to-markdown finds pdf.js's worker
// at import.meta.dir + '/node_modules/…').
export const bunNames = [(import.meta as any).dir, (import.meta as any).path];
export const sep = legacy.sep;
export const own = require('./data.json').own;
export const definition = { name: 'assets' };
`,
		"legacy.cjs": "const path = require('path');\nmodule.exports = { sep: path.sep };\n",
		"data.txt":   "beside the tool\n",
		"data.json":  `{"own": "required from the tool folder"}`,
	})
	bunDir := filepath.Join(t.TempDir(), "bun-only")
	writeFiles(t, bunDir, map[string]string{
		"tool.ts":      "import { Database } from 'bun:sqlite';\nimport { serve } from 'bun';\nexport const definition = { name: 'b' };\nexport const open = () => new Database(':memory:');\nexport const s = serve;\n",
		"package.json": `{"jean2": {"runtime": "bun"}}`,
	})
	l := newTestLoader(t)
	b := l.mustLoad(t, dir, LoadOptions{})
	out, stderr, err := runNode(t, b.Path, "console.log(JSON.stringify([mod.data, mod.dirname, mod.sep, mod.own, ...mod.bunNames]));")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := `["beside the tool",` + jsString(dir) + `,"/","required from the tool folder",` + jsString(dir) + `,` + jsString(filepath.Join(dir, "tool.ts")) + `]`
	if strings.TrimSpace(out) != want {
		t.Errorf("got %s\nwant %s", out, want)
	}

	bb := l.mustLoad(t, bunDir, LoadOptions{})
	if bb.RuntimePreference != RuntimeBun {
		t.Errorf("runtime preference %q", bb.RuntimePreference)
	}
	code, err := os.ReadFile(bb.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(code), `from "bun:sqlite"`) || !strings.Contains(string(code), `from "bun"`) {
		t.Errorf("bun imports were not kept external:\n%s", code)
	}
}

func TestGoFolderIsDetectedNotBuilt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gotool")
	writeFiles(t, dir, map[string]string{"tool.go": "package main\n", "go.mod": "module example.com/gotool\n", "VERSION": "1.0.0"})
	l := newTestLoader(t)
	b := l.mustLoad(t, dir, LoadOptions{})
	if b.Kind != KindGo || b.Path != "" || b.Hash == "" || b.Version != "1.0.0" || b.Entry != "tool.go" || l.builds.Load() != 0 {
		t.Errorf("go folder: %+v, builds %d", b, l.builds.Load())
	}
	writeFiles(t, dir, map[string]string{"tool.go": "package main\n\nfunc main() {}\n"})
	if b2 := l.mustLoad(t, dir, LoadOptions{}); b2.Hash == b.Hash {
		t.Error("editing tool.go did not change the hash")
	}
}

func TestLoadRejectsBrokenFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "empty")
	writeFiles(t, dir, map[string]string{"notes.txt": "x"})
	l := newTestLoader(t)
	le := l.loadErr(t, dir)
	if le.Stage != StageDiscover || !strings.Contains(le.Msg, "no tool.ts, tool.js or tool.go in "+dir) {
		t.Errorf("%v", le)
	}
	if _, err := l.Load(context.Background(), Folder{Name: "x", Dir: "relative/x"}, LoadOptions{}); err == nil {
		t.Error("a relative folder path was accepted")
	}
}

func TestEsbuildVersionMatchesGoMod(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "github.com/evanw/esbuild "+esbuildPinned) {
		t.Errorf("go.mod does not require esbuild %s: update esbuildPinned in cache.go", esbuildPinned)
	}
	if v := esbuildVersion(); v != esbuildPinned {
		t.Errorf("esbuildVersion() = %q", v)
	}
}

func TestSymlinkedFolderAndCommonJSEntry(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"src/linked/tool.ts":     "export const definition = {\n  name: 'x' +\n};\n",
		"tools/cjs/tool.js":      "const path = require('node:path');\nmodule.exports = { definition: { name: 'cjs' }, sep: path.sep };\n",
		"tools/cjs/package.json": `{"type": "commonjs"}`,
	})
	if err := os.Symlink(filepath.Join(root, "src", "linked"), filepath.Join(root, "tools", "linked")); err != nil {
		t.Fatal(err)
	}
	l := newTestLoader(t)
	le := l.loadErr(t, filepath.Join(root, "tools", "linked"))
	if le.Error() != `linked: bundle: tool.ts:3:1: Unexpected "}"` {
		t.Errorf("symlinked folder error: %v", le)
	}
	b := l.mustLoad(t, filepath.Join(root, "tools", "cjs"), LoadOptions{})
	out, stderr, err := runNode(t, b.Path, "console.log(JSON.stringify([mod.default.definition.name, mod.default.sep]));")
	if err != nil || strings.TrimSpace(out) != `["cjs","/"]` {
		t.Errorf("CommonJS entry ran as %q: %v\n%s", out, err, stderr)
	}
}
