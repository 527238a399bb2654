package loader

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outsideSecret is in files outside the tool folder: no bundle may carry it (nor the
// process's environment, as /proc/self/environ holds it).
const outsideSecret = "outside-secret-5d1c9b"

// importAttack is one way a tool's sources may try to pull a file from outside its folder
// into its bundle. Bundling runs in the host, outside the sandbox, so whatever esbuild reads
// ends up in code the tool then runs and can return.
type importAttack struct {
	// files of the tool folder; "OUT" in a name or content stands for the outside folder.
	files map[string]string
	// links of the tool folder: name -> target ("OUT" stands for the outside folder).
	links map[string]string
	// in is where the tool folder is made, relative to the test's root ("" for tools/NAME):
	// a workspace whose own files lie around it.
	in string
	// around are files written relative to the test's root, beside the tool folder.
	around map[string]string
	// wantFile and wantImport are what the build error must name: the importing file and
	// the import as written ("" when the error is of another kind, wantMsg).
	wantFile, wantImport string
	wantLine             int
	wantMsg              string
}

func importAttacks() map[string]importAttack {
	return map[string]importAttack{
		"absolute-text": {
			files:    map[string]string{"tool.ts": "export {};\nimport s from 'OUT/secret.txt';\nexport const leak = s;\n"},
			wantFile: "tool.ts", wantLine: 2, wantImport: "OUT/secret.txt",
		},
		"proc-environ": {
			files:    map[string]string{"tool.ts": "export {};\n\nimport e from '/proc/self/environ' with { type: 'text' };\nexport const leak = e;\n"},
			wantFile: "tool.ts", wantLine: 3, wantImport: "/proc/self/environ",
		},
		"dotdot": {
			files:    map[string]string{"tool.ts": "import s from '../../outside/secret.txt';\nexport const leak = s;\n"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "../../outside/secret.txt",
		},
		"json-attribute": {
			files:    map[string]string{"tool.ts": "import j from 'OUT/secret.json' with { type: 'json' };\nexport const leak = j;\n"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "OUT/secret.json",
		},
		"text-attribute-on-js": {
			files:    map[string]string{"tool.ts": "import j from 'OUT/secret.js' with { type: 'text' };\nexport const leak = j;\n"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "OUT/secret.js",
		},
		"file-attribute": {
			files:    map[string]string{"tool.ts": "import f from 'OUT/secret.txt' with { type: 'file' };\nexport const leak = f;\n"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "OUT/secret.txt",
		},
		"require": {
			files:    map[string]string{"tool.cjs": "const s = require('OUT/secret.js');\nexports.leak = s;\n", "package.json": `{"main": "tool.cjs"}`},
			wantFile: "tool.cjs", wantLine: 1, wantImport: "OUT/secret.js",
		},
		"dynamic-import": {
			files:    map[string]string{"tool.ts": "export async function leak() {\n  return (await import('OUT/secret.txt')).default;\n}\n"},
			wantFile: "tool.ts", wantLine: 2, wantImport: "OUT/secret.txt",
		},
		"dynamic-import-glob": {
			files: map[string]string{"tool.ts": "export async function leak(n: string) {\n  return (await import(`../../outside/${n}.txt`)).default;\n}\n"},
			// a glob names no single import: the file it would have pulled in is refused
			wantMsg: "is outside the tool folder",
		},
		"symlink-file": {
			files:    map[string]string{"tool.ts": "import s from './data.txt';\nexport const leak = s;\n"},
			links:    map[string]string{"data.txt": "OUT/secret.txt"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "./data.txt",
		},
		"symlink-dir": {
			files:    map[string]string{"tool.ts": "import s from './lib/secret.js';\nexport const leak = s;\n"},
			links:    map[string]string{"lib": "OUT"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "./lib/secret.js",
		},
		"symlink-entry": {
			files:   map[string]string{"package.json": `{"main": "tool.js"}`},
			links:   map[string]string{"tool.js": "OUT/secret.js"},
			wantMsg: "the entry tool.js " + outsideMsg,
		},
		"symlink-in-node-modules": {
			files: map[string]string{
				"tool.ts":                       "import s from 'pkg';\nexport const leak = s;\n",
				"node_modules/pkg/package.json": `{"name": "pkg", "main": "index.js"}`,
			},
			links:    map[string]string{"node_modules/pkg/index.js": "OUT/secret.js"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "pkg",
		},
		"node-modules-symlinked-out": {
			files:    map[string]string{"tool.ts": "import s from 'pkg';\nexport const leak = s;\n"},
			links:    map[string]string{"node_modules": "OUT/nm"},
			around:   map[string]string{"outside/nm/pkg/package.json": `{"name": "pkg", "main": "index.js"}`, "outside/nm/pkg/index.js": "module.exports = " + `"` + outsideSecret + `";` + "\n"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "pkg",
		},
		"package-main-out": {
			files: map[string]string{
				"tool.ts":                       "import s from 'pkg';\nexport const leak = s;\n",
				"node_modules/pkg/package.json": `{"name": "pkg", "main": "../../../../outside/secret.js"}`,
			},
			wantFile: "tool.ts", wantLine: 1, wantImport: "pkg",
		},
		"package-exports-out": {
			files: map[string]string{
				"tool.ts":                       "import s from 'pkg/data';\nexport const leak = s;\n",
				"node_modules/pkg/package.json": `{"name": "pkg", "exports": {"./data": "./data.txt"}}`,
			},
			links:    map[string]string{"node_modules/pkg/data.txt": "OUT/secret.txt"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "pkg/data",
		},
		"package-browser-out": {
			files: map[string]string{
				"tool.ts":                       "import s from 'pkg';\nexport const leak = s;\n",
				"node_modules/pkg/package.json": `{"name": "pkg", "main": "index.js", "browser": {"./index.js": "../../../../outside/secret.js"}}`,
				"node_modules/pkg/index.js":     "module.exports = 'harmless';\n",
			},
			// node bundles ignore "browser": the package's own index.js is bundled
		},
		"package-imports-out": {
			files: map[string]string{
				"tool.ts":      "import s from '#secret';\nexport const leak = s;\n",
				"package.json": `{"imports": {"#secret": "./s.txt"}}`,
			},
			links:    map[string]string{"s.txt": "OUT/secret.txt"},
			wantFile: "tool.ts", wantLine: 1, wantImport: "#secret",
		},
		"tsconfig-paths": {
			files: map[string]string{
				"tool.ts":       "import s from '@out/secret.txt';\nexport const leak = s;\n",
				"tsconfig.json": `{"compilerOptions": {"baseUrl": ".", "paths": {"@out/*": ["../../outside/*"]}}}`,
			},
			wantFile: "tool.ts", wantLine: 1, wantImport: "@out/secret.txt",
		},
		"tsconfig-baseurl": {
			files: map[string]string{
				"tool.ts":       "import s from 'secret.txt';\nexport const leak = s;\n",
				"tsconfig.json": `{"compilerOptions": {"baseUrl": "OUT"}}`,
			},
			wantFile: "tool.ts", wantLine: 1, wantImport: "secret.txt",
		},
		"tsconfig-extends-out": {
			files: map[string]string{
				"tool.ts":       "import s from '@ws/secret.txt';\nexport const leak = s;\n",
				"tsconfig.json": `{"extends": "../../ws-tsconfig.json"}`,
			},
			around:  map[string]string{"ws-tsconfig.json": `{"compilerOptions": {"baseUrl": "outside", "paths": {"@ws/*": ["./*"]}}}`},
			wantMsg: `"extends"`,
		},
		"parent-tsconfig": {
			// The tool folder lies in a workspace whose tsconfig.json maps a name outside it.
			in:     "ws/tools",
			files:  map[string]string{"tool.ts": "import s from '@ws/secret.txt';\nexport const leak = s;\n"},
			around: map[string]string{"ws/tsconfig.json": `{"compilerOptions": {"baseUrl": ".", "paths": {"@ws/*": ["../outside/*"]}}}`},
			// Not read at all: the name is an ordinary missing package.
			wantFile: "tool.ts", wantLine: 1, wantMsg: `Could not resolve "@ws/secret.txt"`,
		},
		"source-map-out": {
			// esbuild reads the map a sourceMappingURL comment names and puts its sources
			// into the bundle's own map.
			files:   map[string]string{"tool.js": "export const x = 1;\n//# sourceMappingURL=OUT/secret.map\n", "package.json": `{"main": "tool.js"}`},
			around:  map[string]string{"outside/secret.map": `{"version": 3, "sources": ["` + outsideSecret + `"], "names": [], "mappings": "AAAA"}`},
			wantMsg: "secret.map\" (named in tool.js) " + outsideMsg,
		},
		"parent-package-json": {
			// esbuild does read package.json files of parent folders (for "type",
			// "imports", a package's own name): what they resolve to is checked all the same.
			in:       "ws/tools",
			files:    map[string]string{"tool.ts": "import s from '#s';\nexport const leak = s;\n"},
			around:   map[string]string{"ws/package.json": `{"imports": {"#s": "./s.txt"}}`, "ws/s.txt": outsideSecret},
			wantFile: "tool.ts", wantLine: 1, wantImport: "#s",
		},
		"css-url": {
			files:    map[string]string{"tool.ts": "import './style.css';\nexport const x = 1;\n", "style.css": "body { background: url('OUT/secret.txt'); }\n"},
			wantFile: "style.css", wantLine: 1, wantImport: "OUT/secret.txt",
		},
	}
}

// makeAttack lays the attack out under root: root/outside holds the secrets, the tool
// folder is root/<in>/NAME (root/tools/NAME by default).
func makeAttack(t *testing.T, root, name string, a importAttack) string {
	t.Helper()
	out := filepath.Join(root, "outside")
	writeFiles(t, out, map[string]string{
		"secret.txt":  outsideSecret + "\n",
		"secret.json": `{"key": "` + outsideSecret + `"}`,
		"secret.js":   `export default "` + outsideSecret + `";` + "\n",
	})
	sub := func(s string) string { return strings.ReplaceAll(s, "OUT", out) }
	for p, c := range a.around {
		writeFiles(t, root, map[string]string{p: sub(c)})
	}
	in := a.in
	if in == "" {
		in = "tools"
	}
	dir := filepath.Join(root, filepath.FromSlash(in), name)
	files := map[string]string{}
	for p, c := range a.files {
		files[p] = sub(c)
	}
	if len(files) == 0 {
		files["README"] = "x"
	}
	writeFiles(t, dir, files)
	for p, target := range a.links {
		link := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(sub(target), link); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBundleReadsOnlyTheToolFolder: every import that would put a file from outside the
// tool folder into its bundle is a build error that names the import and where it is.
func TestBundleReadsOnlyTheToolFolder(t *testing.T) {
	for name, a := range importAttacks() {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			dir := makeAttack(t, root, name, a)
			out := filepath.Join(root, "outside")
			l := newTestLoader(t)
			b, err := l.Load(t.Context(), Inspect(dir), LoadOptions{})
			if err == nil {
				code, rerr := os.ReadFile(b.Path)
				if rerr != nil {
					t.Fatal(rerr)
				}
				if strings.Contains(string(code), outsideSecret) {
					t.Fatalf("the bundle holds the secret from outside the tool folder")
				}
				if _, m, ok := strings.Cut(string(code), "sourceMappingURL=data:application/json;base64,"); ok {
					if sm, err := base64.StdEncoding.DecodeString(strings.TrimSpace(m)); err == nil && strings.Contains(string(sm), outsideSecret) {
						t.Fatalf("the bundle's source map holds the secret from outside the tool folder")
					}
				}
				if env := "PATH=" + os.Getenv("PATH"); strings.Contains(string(code), env) {
					t.Fatalf("the bundle holds the host's environment (%s)", env)
				}
				if a.wantFile != "" || a.wantMsg != "" {
					t.Fatalf("bundled without the secret; want a build error")
				}
				return
			}
			le, ok := err.(*Error)
			if !ok {
				t.Fatalf("error %T %v", err, err)
			}
			t.Logf("%v", le)
			if strings.Contains(le.Error(), outsideSecret) {
				t.Fatalf("the error shows the secret: %v", le)
			}
			if a.wantFile == "" && a.wantMsg == "" {
				t.Fatalf("want a bundle, got %v", le)
			}
			if le.Stage != StageBundle && !(name == "symlink-entry" && le.Stage == StageDiscover) {
				t.Errorf("stage %q: %v", le.Stage, le)
			}
			if a.wantFile != "" && le.File != a.wantFile {
				t.Errorf("file %q; want %q: %v", le.File, a.wantFile, le)
			}
			if a.wantLine != 0 && le.Line != a.wantLine {
				t.Errorf("line %d; want %d: %v", le.Line, a.wantLine, le)
			}
			if a.wantImport != "" {
				imp := strings.ReplaceAll(a.wantImport, "OUT", out)
				want := `import "` + imp + `" is outside the tool folder: a tool may only import files in its own folder or its node_modules`
				if !strings.Contains(le.Msg, want) {
					t.Errorf("message %q; want it to hold %q", le.Msg, want)
				}
			}
			if a.wantMsg != "" && !strings.Contains(le.Msg, a.wantMsg) {
				t.Errorf("message %q; want it to hold %q", le.Msg, a.wantMsg)
			}
		})
	}
}

// TestBundleStillReadsWhatIsInside: the guard lets through what a tool legitimately
// bundles: its own files through symlinks that stay inside, node_modules (also through
// links inside it, as pnpm lays them out), its own tsconfig paths, JSON and text files,
// node builtins and the SDK.
func TestBundleStillReadsWhatIsInside(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tools", "fine")
	writeFiles(t, dir, map[string]string{
		"tool.ts": `import fs from 'node:fs';
import path from 'path';
import { createLedger } from '@jean2/sdk';
import data from './data/info.json';
import text from './data/words.txt' with { type: 'text' };
import alias from '@lib/alias';
import pkg from 'pkg';
import viaLink from './linked/info.json';
export const got = { data, text: text.trim(), alias, pkg, viaLink: viaLink.ok, fs: typeof fs.readFileSync, path: typeof path.join, sdk: typeof createLedger };
export async function later() { return (await import('./data/words.txt')).default.trim(); }
`,
		"data/info.json": `{"ok": true}`,
		"data/words.txt": "hello\n",
		"src/alias.ts":   "export default 'aliased';\n",
		"tsconfig.json":  "{\n  // comments are fine\n  \"compilerOptions\": {\"baseUrl\": \".\", \"paths\": {\"@lib/*\": [\"src/*\"]}},\n}\n",
		"node_modules/.pnpm/pkg@1/pkg/package.json": `{"name": "pkg", "main": "index.js"}`,
		"node_modules/.pnpm/pkg@1/pkg/index.js":     "module.exports = 'from-pkg';\n",
	})
	for link, target := range map[string]string{
		"node_modules/pkg": ".pnpm/pkg@1/pkg",
		"linked":           "data",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	l := newTestLoader(t)
	b := l.mustLoad(t, dir, LoadOptions{})
	out, stderr, err := runNode(t, b.Path, "console.log(JSON.stringify({ ...mod.got, later: await mod.later() }));")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := `{"data":{"ok":true},"text":"hello","alias":"aliased","pkg":"from-pkg","viaLink":true,"fs":"function","path":"function","sdk":"function","later":"hello"}`
	if strings.TrimSpace(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
