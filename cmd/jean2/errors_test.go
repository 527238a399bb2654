package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTool writes a tool folder into the CLI's tools folder.
func (c *cli) writeTool(name string, files map[string]string) string {
	c.t.Helper()
	dir := filepath.Join(c.home, "tools", name)
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	return dir
}

const throwerTool = `export const definition = { name: 'thrower', description: 'd', inputSchema: { type: 'object' } };

function helper(n: number): number {
  if (n > 1) throw new Error('too big: ' + n);
  return n;
}

export async function execute(input: { n: number }) {
  return { success: true, result: helper(input.n) };
}
`

// A thrown error's stack, mapped to tool.ts, goes to tools run's stderr under Node and Bun;
// the result (what a model sees) holds the message only.
func TestThrownErrorPointsAtTheLine(t *testing.T) {
	c := newCLI(t)
	c.writeTool("thrower", map[string]string{"tool.ts": throwerTool})
	for _, rt := range []string{"node", "bun"} {
		t.Run(rt, func(t *testing.T) {
			env := append(c.env(), "JEAN2_RUNTIME="+rt, "JEAN2_BUN="+bunForCLI(t))
			out, stderr, code := c.runEnv(env, "tools", "run", "thrower", "--input", `{"n":5}`)
			if code != 1 {
				t.Fatalf("exit %d: %s %s", code, out, stderr)
			}
			var res struct{ Error string }
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.Error != "too big: 5" {
				t.Fatalf("result %s", out)
			}
			for _, want := range []string{"jean2: the tool threw Error: too big: 5 at tool.ts:4:", "    at helper (tool.ts:4:", "execute (tool.ts:9:"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stderr, "cache/bundles") || strings.Contains(stderr, "worker.mjs") {
				t.Errorf("stderr names the bundle or the worker:\n%s", stderr)
			}
		})
	}
}

func bunForCLI(t *testing.T) string {
	p, _ := filepath.Abs("../../.deps/node_modules/.bin/bun")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("bun is not installed at %s: run scripts/setup", p)
	}
	return p
}

// Mistakes that load badly say where, in the author's terms.
func TestLoadErrorsSayWhere(t *testing.T) {
	c := newCLI(t)
	c.writeTool("noexec", map[string]string{"tool.ts": "export const definition = { name: 'noexec', description: 'd', inputSchema: { type: 'object' } };\n"})
	c.writeTool("typo", map[string]string{"tool.ts": "import { createFilePermisionAsk } from '@jean2/sdk';\nexport const definition = { name: 'typo', description: 'd', inputSchema: { type: 'object' } };\nexport async function execute() { return { success: true, result: createFilePermisionAsk({}) }; }\n"})
	c.writeTool("badschema", map[string]string{"tool.ts": "export const definition = { name: 'badschema', description: 'd', inputSchema: { type: 'object', properties: { a: { type: 'strng' } } } };\nexport async function execute() { return { success: true, result: 1 }; }\n"})
	c.writeTool("misspelt", map[string]string{"tool.ts": "export const definition = { name: 'misspelt', description: 'd', timout: 5, inputSchema: { type: 'object', propertes: { a: { type: 'string' } }, requried: ['a'] } };\nexport async function execute() { return { success: true, result: 1 }; }\n"})
	for _, tc := range []struct {
		name, stream string
		code         int
		want         []string
		not          string
	}{
		{"noexec", "stdout", 1, []string{"failed to load at " + filepath.Join(c.home, "tools", "noexec", "tool.ts") + ": the module exports `definition` but no `execute` function"}, "cache/bundles"},
		{"typo", "stdout", 1, []string{`tool.ts:1:10: @jean2/sdk has no export named "createFilePermisionAsk"; did you mean "createFilePermissionAsk"?`}, "jean2-sdk:"},
		{"badschema", "stdout", 1, []string{"definition.inputSchema: properties.a.type: value must be one of"}, "allOf"},
		{"misspelt", "stderr", 0, []string{`warning: definition.inputSchema.propertes: "propertes" is not a JSON Schema keyword and is ignored; did you mean "properties"?`, `definition.inputSchema.requried:`, `warning: definition.timout: "timout" is not a definition field and is ignored; did you mean "timeout"?`}, ""},
	} {
		out, stderr, code := c.run("", "tools", "validate", tc.name)
		text := out
		if tc.stream == "stderr" {
			text = stderr
		}
		if code != tc.code {
			t.Errorf("%s: exit %d: %s %s", tc.name, code, out, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %s lacks %q:\n%s", tc.name, tc.stream, w, text)
			}
		}
		if tc.not != "" && strings.Contains(out+stderr, tc.not) {
			t.Errorf("%s: output holds %q:\n%s%s", tc.name, tc.not, out, stderr)
		}
	}
}

// A result holding a Map, a Set or a function is reported, not silently sent as {}.
func TestLossyResultIsReported(t *testing.T) {
	c := newCLI(t)
	c.writeTool("lossy", map[string]string{"tool.ts": "export const definition = { name: 'lossy', description: 'd', inputSchema: { type: 'object' } };\nexport async function execute() { return { success: true, result: { counts: new Map([['a', 1]]), tags: new Set(['x']), fn: () => 1, list: [{ m: new Map() }] } }; }\n"})
	env := append(c.env()[:3], "JEAN2_LOG=info")
	_, stderr, code := c.runEnv(env, "tools", "run", "lossy")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"result.counts is a Map", "result.tags is a Set", "result.fn is a function", "result.list[0].m is a Map"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// A CommonJS package that uses __filename and __dirname works in a bundle under Node, in the
// real sandbox: each file gets its own values.
func TestCommonJSModulePaths(t *testing.T) {
	c := newCLI(t)
	dir := c.writeTool("cjs", map[string]string{
		"tool.ts":                              "import { where } from 'cjs-paths';\nimport { nested } from 'cjs-paths/lib/nested.js';\nexport const definition = { name: 'cjs', description: 'd', inputSchema: { type: 'object' } };\nexport async function execute() { return { success: true, result: { ...where(), nested: nested() } }; }\n",
		"node_modules/cjs-paths/package.json":  `{"name":"cjs-paths","version":"1.0.0","main":"index.js"}`,
		"node_modules/cjs-paths/index.js":      "'use strict';\nconst fs = require('fs');\nconst path = require('path');\nexports.where = () => ({ file: __filename, data: fs.readFileSync(path.join(__dirname, 'data.txt'), 'utf8').trim() });\n",
		"node_modules/cjs-paths/data.txt":      "beside the package\n",
		"node_modules/cjs-paths/lib/nested.js": "exports.nested = () => __dirname;\n",
	})
	out, stderr, code := c.run("", "tools", "run", "cjs")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	var res struct {
		Result struct{ File, Data, Nested string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if res.Result.File != filepath.Join(real, "node_modules/cjs-paths/index.js") || res.Result.Data != "beside the package" || res.Result.Nested != filepath.Join(real, "node_modules/cjs-paths/lib") {
		t.Fatalf("result %s", out)
	}
}
