package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// catalogueSDKTool imports, by name, every runtime export and type that jean2's public tool
// catalogue (tools/ of jean2ai/jean2) imports from '@jean2/sdk', the way those tools do, and
// calls each runtime export once. The list was taken from the catalogue's import lines and
// checked against the catalogue SDK's own export list (packages/sdk/src/shared-types).
const catalogueSDKTool = `
import type { ToolDefinition, ToolContext, ToolResult, AskFormResponse } from '@jean2/sdk';
import type {
  FileListVisualization, DiffHunk, DiffChange, DiffVisualization, DiffsVisualization, NoneVisualization,
  ShellOutputVisualization, MarkdownVisualization, TodoListVisualization, TodoListItem, CodeVisualization,
  PermissionIntent, ParsedShellSegment, ClientCapability, GrantScope, PermissionRiskLevel,
} from '@jean2/sdk';
import {
  SHELL_DANGEROUS_COMMANDS,
  SHELL_FILESYSTEM_COMMANDS,
  SHELL_SHELL_OPERATORS,
  createShellPermissionAskStructured,
  createOutsideWorkspaceAsk,
  createWorkspaceModificationAsk,
  getEffectiveShellCommandIdentity,
  splitShellCommandSegments,
  analyzeShellCommandEffects,
  getAllowedScopesForIntent,
  createWebfetchPermissionAsk,
  createFilePermissionAsk,
  SENSITIVE_FILE_PATTERNS,
  WELL_KNOWN_CLIENT_CAPABILITIES,
  type ShellRiskCategory,
} from '@jean2/sdk';

export const definition: ToolDefinition = {
  name: 'sdk-exports',
  description: 'calls every @jean2/sdk export the catalogue uses',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, _ctx: ToolContext): Promise<ToolResult> {
  const category: ShellRiskCategory = 'destructive';
  const item: TodoListItem = { content: 'x', status: 'pending', priority: 'low' };
  const segs: ParsedShellSegment[] = splitShellCommandSegments('cd /w && /usr/bin/git push origin -f | tee log');
  const intents: PermissionIntent[] = analyzeShellCommandEffects({
    command: 'rm -rf build', baseCommand: 'rm', resolvedPaths: ['/w/build'],
    hasOperators: false, workspaceBound: true, riskCategory: category,
  });
  const scopes: GrantScope[] = getAllowedScopesForIntent(intents[0]);
  const cap: ClientCapability = WELL_KNOWN_CLIENT_CAPABILITIES[0];
  const risk: PermissionRiskLevel = 'high';
  return {
    success: true,
    result: {
      lists: {
        dangerous: SHELL_DANGEROUS_COMMANDS.includes('rm') && SHELL_DANGEROUS_COMMANDS.includes('curl'),
        filesystem: SHELL_FILESYSTEM_COMMANDS.includes('git push'),
        operators: ['&&', '||', '|', '>', '>>', '` + "`" + `', '$(', ';'].every((o) => SHELL_SHELL_OPERATORS.includes(o)),
        sensitive: SENSITIVE_FILE_PATTERNS.includes('.env'),
        capabilities: WELL_KNOWN_CLIENT_CAPABILITIES.length,
        cap,
      },
      segments: segs.map((s) => [s.baseCommand, s.args.length, s.flags.join(',')]),
      identities: [
        getEffectiveShellCommandIdentity('ls -la && rm -rf build'),
        getEffectiveShellCommandIdentity('git push origin main'),
        getEffectiveShellCommandIdentity('npm --silent test'),
        getEffectiveShellCommandIdentity('echo hi; sudo reboot'),
        getEffectiveShellCommandIdentity(''),
      ],
      intents,
      scopes,
      structured: createShellPermissionAskStructured({
        command: 'curl https://api.example.com/v1/users', baseCommand: 'curl', flags: [], risk,
        riskCategory: 'network', reason: 'network access', workspaceBound: true, hasOperators: false,
      }),
      chained: createShellPermissionAskStructured({
        command: 'make && make install', baseCommand: 'make', flags: [], risk: 'medium',
        riskCategory: 'side-effect', reason: 'chain', workspaceBound: true, hasOperators: true,
      }),
      outside: createOutsideWorkspaceAsk({ command: 'cat notes.txt', cwd: '/srv/docs', resolvedPaths: ['/srv/docs/notes.txt'] }),
      modification: createWorkspaceModificationAsk({ command: 'mkdir -p out', baseCommand: 'mkdir', resolvedPaths: ['/w/out'] }),
      webfetch: createWebfetchPermissionAsk({ url: 'http://example.com/a', host: 'example.com', risk: 'low', isHttp: true }),
      file: createFilePermissionAsk({ path: '/w/src/a.ts', operation: 'edit', risk: 'medium', reason: 'Edits it.' }),
      item,
    },
  };
}
`

// TestCatalogueSDKExports: a tool written as jean2's catalogue tools are (named imports of
// every helper and type they use from '@jean2/sdk') loads through the bundler and runs in a
// real worker, and each helper gives what the catalogue's tools rely on.
func TestCatalogueSDKExports(t *testing.T) {
	f := newFixture(t)
	f.addTool("sdk-exports", map[string]string{"tool.ts": catalogueSDKTool})
	f.start()
	out := f.call("sdk-exports", `{}`)
	got := result[map[string]json.RawMessage](t, out)
	text := func(k string) string { return string(got[k]) }
	var lists struct {
		Dangerous, Filesystem, Operators, Sensitive bool
		Capabilities                                int
		Cap                                         string
	}
	if err := json.Unmarshal(got["lists"], &lists); err != nil {
		t.Fatal(err)
	}
	if !lists.Dangerous || !lists.Filesystem || !lists.Operators || !lists.Sensitive || lists.Capabilities != 13 || lists.Cap != "chat_ui" {
		t.Errorf("lists: %+v", lists)
	}
	for k, want := range map[string]string{
		"segments":   `[["cd",1,""],["git",3,"-f"],["tee",1,""]]`,
		"identities": `["rm","git push","npm test","sudo",""]`,
		"intents":    `[{"resource":"file","action":"delete","targets":[{"target":"/w/build/","matcher":"prefix"}],"persistable":true,"allowedScopes":["once","session"]}]`,
		"scopes":     `["once","session"]`,
		"item":       `{"content":"x","status":"pending","priority":"low"}`,
	} {
		if text(k) != want {
			t.Errorf("%s = %s, want %s", k, text(k), want)
		}
	}
	type ask struct {
		Question      string            `json:"question"`
		Resource      string            `json:"resource"`
		Action        string            `json:"action"`
		Patterns      []string          `json:"patterns"`
		Duration      string            `json:"duration"`
		Paths         []string          `json:"paths"`
		AllowedScopes []string          `json:"allowedScopes"`
		Scope         map[string]string `json:"scope"`
		Metadata      map[string]any    `json:"metadata"`
	}
	asks := map[string]ask{}
	for _, k := range []string{"structured", "chained", "outside", "modification", "webfetch", "file"} {
		var a ask
		if err := json.Unmarshal(got[k], &a); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		asks[k] = a
	}
	check := func(name string, ok bool, a ask) {
		t.Helper()
		if !ok {
			t.Errorf("%s ask: %+v", name, a)
		}
	}
	a := asks["structured"]
	check("structured", a.Resource == "network" && a.Action == "request" && a.Duration == "session" &&
		strings.Join(a.Patterns, " ") == "api.example.com https://api.example.com/" &&
		a.Question == `Network request to "api.example.com" via curl https://api.example.com/v1/users. Requires approval.` &&
		a.Metadata["riskCategory"] == "network" && a.Metadata["baseCommand"] == "curl", a)
	a = asks["chained"]
	check("chained", a.Resource == "shell-command" && a.Duration == "session" && strings.Join(a.Patterns, " ") == "make" &&
		strings.Join(a.AllowedScopes, " ") == "once session" && a.Metadata["description"] == "Side-effect command • Contains shell operators", a)
	a = asks["outside"]
	check("outside", a.Resource == "file" && a.Action == "read" && a.Scope["type"] == "path" && a.Scope["label"] == "docs" &&
		strings.Join(a.Patterns, " ") == "/srv/docs/notes.txt" && a.Metadata["cwd"] == "/srv/docs" && a.Paths == nil, a)
	a = asks["modification"]
	check("modification", a.Resource == "file" && a.Action == "write" && a.Question == `Write to "out" via mkdir -p out. Requires approval.` &&
		strings.Join(a.Paths, " ") == "/w/out", a)
	a = asks["webfetch"]
	check("webfetch", a.Resource == "network" && a.Duration == "session" && a.Question == `Fetch URL "example.com" (unencrypted HTTP) requires approval.` &&
		strings.Join(a.Patterns, " ") == "example.com http://example.com/a" && a.Metadata["isHttp"] == true, a)
	a = asks["file"]
	check("file", a.Question == `Editing file "a.ts" requires approval. Edits it.` && a.Metadata["operation"] == "edit" &&
		a.Metadata["fileName"] == "a.ts" && a.Metadata["path"] == "/w/src/a.ts" && a.Metadata["isOutsideWorkspace"] == false &&
		a.Metadata["reason"] == "Edits it.", a)
}

// outsideReader asks as jean2's catalogue grep and glob do before searching outside the
// workspace (a permission with no paths, resource unset, metadata permissionKey
// 'path:outside_workspace'), then tries each kind of access and reports what happened.
const outsideReader = `
export const definition = {
  name: 'outside-reader', description: 'reads outside the workspace after asking',
  inputSchema: { type: 'object', properties: { dir: { type: 'string' }, home: { type: 'string' }, ask: { type: 'boolean' } } },
};
export async function execute(input, ctx) {
  if (input.ask) {
    const ok = await ctx.ask({
      target: 'permission', type: 'permission',
      question: 'Searching in files outside the workspace requires approval.', risk: 'medium',
      metadata: { permissionKey: 'path:outside_workspace', permissionType: 'action' },
    });
    if (!ok) return { success: false, error: 'USER_REJECTION' };
  }
  const tryIt = async (f) => { try { return await f(); } catch (e) { return 'ERR ' + (e.code || '') + ' ' + e.message; } };
  return { success: true, result: {
    list: await tryIt(async () => (await ctx.fs.readDir(input.dir)).map((e) => e.name).sort().join(',')),
    read: await tryIt(() => ctx.fs.readFile(input.dir + '/sub/notes.txt', 'utf-8')),
    sensitive: await tryIt(() => ctx.fs.readFile(input.dir + '/.env', 'utf-8')),
    write: await tryIt(async () => { await ctx.fs.writeFile(input.dir + '/new.txt', 'x'); return 'wrote'; }),
    home: await tryIt(() => ctx.fs.readFile(input.home, 'utf-8')),
  } };
}
`

// sessionGranter grants every permission for the session, as a person who picks "for this
// session" would, and counts the asks.
type sessionGranter struct {
	mu    sync.Mutex
	asked []tool.Ask
}

func (s *sessionGranter) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	d, err := s.AskPermission(ctx, a)
	if err != nil {
		return nil, err
	}
	return json.Marshal(d.Granted)
}

func (s *sessionGranter) AskPermission(_ context.Context, a tool.Ask) (ask.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, a)
	return ask.Decision{Granted: true, Duration: tool.DurationSession}, nil
}

func (s *sessionGranter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.asked)
}

// TestPathlessOutsideWorkspaceGrantOpensReads: a person grants the catalogue's pathless
// "outside the workspace" ask; the call (and, for a session grant, the session's later
// calls) can then read outside the workspace through ctx.fs, while writes, sensitive files
// and jean2's home stay closed.
func TestPathlessOutsideWorkspaceGrantOpensReads(t *testing.T) {
	f := newFixture(t)
	outside := t.TempDir()
	for rel, content := range map[string]string{"sub/notes.txt": "needle here\n", ".env": "SECRET=1\n"} {
		p := filepath.Join(outside, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(f.layout.Home, "secret.txt")
	if err := os.WriteFile(secret, []byte("home secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.addTool("outside-reader", map[string]string{"tool.ts": outsideReader})
	f.start()
	type report struct{ List, Read, Sensitive, Write, Home string }
	args := func(askFirst bool) string {
		b, _ := json.Marshal(map[string]any{"dir": outside, "home": secret, "ask": askFirst})
		return string(b)
	}
	closed := func(t *testing.T, r report) {
		t.Helper()
		if !strings.HasPrefix(r.Sensitive, "ERR EACCES") {
			t.Errorf("a sensitive file outside the workspace was read after a pathless grant: %q", r.Sensitive)
		}
		if !strings.HasPrefix(r.Write, "ERR EACCES") {
			t.Errorf("a pathless grant let the tool write outside the workspace: %q", r.Write)
		}
		if !strings.HasPrefix(r.Home, "ERR EACCES") {
			t.Errorf("jean2's home was read after a pathless grant: %q", r.Home)
		}
		if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
			t.Error("new.txt was written outside the workspace")
		}
	}

	// Without a grant, nothing outside is open.
	r := result[report](t, f.call("outside-reader", args(false)))
	if !strings.HasPrefix(r.List, "ERR EACCES") || !strings.HasPrefix(r.Read, "ERR EACCES") {
		t.Fatalf("read outside the workspace without a grant: %+v", r)
	}

	// Granted once, with a scripted answer: reads open for this call.
	once := &answerer{byTyp: map[string]string{"permission": "true"}}
	r = result[report](t, f.call("outside-reader", args(true), func(c *host.Call) { c.Asker = once; c.CallID = "c-once" }))
	if r.List != ".env,sub" || r.Read != "needle here\n" {
		t.Errorf("after the person granted reads outside the workspace: list %q, read %q", r.List, r.Read)
	}
	closed(t, r)
	if len(once.asked) != 1 || once.asked[0].Risk != "critical" {
		t.Errorf("asks: %+v (a pathless file ask is critical and person-only)", once.asked)
	}
	// A once grant reaches no other call.
	r = result[report](t, f.call("outside-reader", args(false), func(c *host.Call) { c.CallID = "c-after-once" }))
	if !strings.HasPrefix(r.Read, "ERR EACCES") {
		t.Errorf("a once grant opened reads for a later call: %q", r.Read)
	}

	// Granted for the session: a later call of the session that asks again is answered from
	// the grant without the person and can read; one that does not ask cannot (the grant
	// names no path, so it opens reads only in calls that asked); another session cannot.
	sg := &sessionGranter{}
	r = result[report](t, f.call("outside-reader", args(true), func(c *host.Call) { c.Asker = sg; c.CallID = "c-s1"; c.SessionID = "s-grant" }))
	if r.Read != "needle here\n" {
		t.Errorf("session grant, first call: read %q", r.Read)
	}
	closed(t, r)
	r = result[report](t, f.call("outside-reader", args(false), func(c *host.Call) { c.CallID = "c-s2"; c.SessionID = "s-grant" }))
	if !strings.HasPrefix(r.Read, "ERR EACCES") {
		t.Errorf("session grant, later call of the session that did not ask: read %q", r.Read)
	}
	r = result[report](t, f.call("outside-reader", args(true), func(c *host.Call) { c.Asker = sg; c.CallID = "c-s3"; c.SessionID = "s-grant" }))
	if r.Read != "needle here\n" || r.List != ".env,sub" || sg.count() != 1 {
		t.Errorf("session grant, asking again: list %q, read %q, person asked %d times (want once)", r.List, r.Read, sg.count())
	}
	closed(t, r)
	r = result[report](t, f.call("outside-reader", args(false), func(c *host.Call) { c.CallID = "c-other"; c.SessionID = "s-other" }))
	if !strings.HasPrefix(r.Read, "ERR EACCES") {
		t.Errorf("a session grant opened reads for another session: %q", r.Read)
	}
}

// TestPathlessGrantIsCritical: the pathless outside-workspace ask is judged as a file
// permission that names no path: critical, and only a person may grant it.
func TestPathlessGrantIsCritical(t *testing.T) {
	c := ask.Call{Tool: "grep", Workspace: "/w"}
	a := tool.Ask{Type: tool.AskPermission, Question: "Searching in files outside the workspace requires approval.", Risk: "medium",
		Metadata: json.RawMessage(`{"permissionKey":"path:outside_workspace","permissionType":"action"}`)}
	if got := ask.Assess(c, a); !got.PersonOnly || got.Risk != "critical" {
		t.Errorf("Assess(pathless outside-workspace ask) = %+v; want person-only and critical", got)
	}
}

// bunSQLiteTool imports bun:sqlite on its third line.
const bunSQLiteTool = `// Keeps its data in SQLite, through Bun.
export const definition = { name: 'bun-db', description: 'sqlite', inputSchema: { type: 'object', properties: {} } };
import { Database } from 'bun:sqlite';
export async function execute() {
  const db = new Database(':memory:');
  const row = db.query('select 40 + 2 as n').get() as { n: number };
  return { success: true, result: { n: row.n, runtime: process.versions.bun ? 'bun' : 'node' } };
}
`

// bunGlobalTool uses the Bun global on its fifth line (the comment above names it too, and
// does not count).
const bunGlobalTool = `// Hashes with Bun.hash, not node:crypto.
export const definition = { name: 'bun-hash', description: 'hash', inputSchema: { type: 'object', properties: {} } };
const note = "Bun.spawn in a string is no use";
export async function execute() {
  const h = Bun.hash('x');
  return { success: true, result: { ok: typeof h === 'bigint' || typeof h === 'number', runtime: process.versions.bun ? 'bun' : 'node', note } };
}
`

// maybeBunTool's dependency (in node_modules, no install needed) tests for Bun and falls
// back: it runs on Node.
var maybeBunTool = map[string]string{
	"tool.ts": `import { where } from 'dual';
export const definition = { name: 'maybe-bun', description: 'either', inputSchema: { type: 'object', properties: {} } };
export async function execute() { return { success: true, result: { where: where(), runtime: process.versions.bun ? 'bun' : 'node' } }; }
`,
	"node_modules/dual/package.json": `{"name":"dual","version":"1.0.0","type":"module","main":"index.js"}`,
	"node_modules/dual/index.js":     "export function where() { return typeof Bun !== 'undefined' ? Bun.version : process.version; }\n",
}

// TestBunToolsRunOnBun: with Node the default, a tool that imports bun:* or uses the Bun
// global runs on Bun when Bun is installed; a dependency that only tests for Bun does not
// move its tool.
func TestBunToolsRunOnBun(t *testing.T) {
	f := newFixture(t)
	f.opts.BunPath = bunPath(t)
	f.opts.RuntimePreference = "node"
	f.addTool("bun-db", map[string]string{"tool.ts": bunSQLiteTool})
	f.addTool("bun-hash", map[string]string{"tool.ts": bunGlobalTool})
	f.addTool("maybe-bun", maybeBunTool)
	f.start()
	type answer struct {
		N       int
		OK      bool
		Where   string
		Runtime string
	}
	if r := result[answer](t, f.call("bun-db", `{}`)); r.N != 42 || r.Runtime != "bun" {
		t.Errorf("bun-db: %+v", r)
	}
	if r := result[answer](t, f.call("bun-hash", `{}`)); !r.OK || r.Runtime != "bun" {
		t.Errorf("bun-hash: %+v", r)
	}
	if r := result[answer](t, f.call("maybe-bun", `{}`)); r.Runtime != "node" || !strings.HasPrefix(r.Where, "v") {
		t.Errorf("maybe-bun (a dependency that only tests for Bun): %+v", r)
	}
	for name, rt := range map[string]string{"bun-db": "bun", "bun-hash": "bun", "maybe-bun": "node"} {
		if e := f.entry(name); e.Runtime != rt {
			t.Errorf("%s is listed with runtime %q, want %q", name, e.Runtime, rt)
		}
	}
}

// TestBunToolWithoutBun: without Bun, such a tool fails to load with an error that names
// the Bun API, where the tool uses it, and what to install.
func TestBunToolWithoutBun(t *testing.T) {
	f := newFixture(t)
	f.opts.BunPath = filepath.Join(t.TempDir(), "no-bun-here")
	f.addTool("bun-db", map[string]string{"tool.ts": bunSQLiteTool})
	f.addTool("bun-hash", map[string]string{"tool.ts": bunGlobalTool})
	f.start()
	for name, want := range map[string]string{
		"bun-db":   "this tool uses Bun APIs (bun:sqlite at tool.ts:3): install Bun ≥ 1.1",
		"bun-hash": "this tool uses Bun APIs (Bun.hash at tool.ts:5): install Bun ≥ 1.1",
	} {
		out := f.call(name, `{}`)
		if out.Result.Success || !strings.Contains(out.Result.Error, want) {
			t.Errorf("%s without Bun: success %v, error %q; want it to say %q", name, out.Result.Success, out.Result.Error, want)
		}
	}
}

// bigResult returns a result long enough to overflow into the session's temporary folder.
const bigResult = `
export const definition = { name: 'big', description: 'big', inputSchema: { type: 'object', properties: {} } };
export async function execute() { return { success: true, result: { text: 'x'.repeat(60000) + 'END' } }; }
`

// catalogueReader reads a file as jean2's catalogue read-file does: a file outside the
// workspace is read only after asking createFilePermissionAsk. It also reports where its
// temporary files go.
const catalogueReader = `
import { createFilePermissionAsk } from '@jean2/sdk';
import os from 'node:os';
export const definition = { name: 'reader', description: 'reads', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } };
export async function execute(input, ctx) {
  const p = ctx.resolvePath(input.path);
  if (!ctx.isWithinWorkspace(p)) {
    const ok = await ctx.ask(createFilePermissionAsk({ path: input.path, operation: 'read', risk: 'medium', isOutsideWorkspace: true }));
    if (!ok) return { success: false, error: 'USER_REJECTION' };
  }
  const text = await ctx.fs.readFile(p, 'utf-8');
  return { success: true, result: { tail: text.slice(-12), tempDir: ctx.fs.tempDir, TMPDIR: process.env.TMPDIR, osTmp: os.tmpdir() } };
}
`

// TestSessionFolderReadableWithoutAsking: the host's own overflow file, in the session's
// temporary folder, is read by a later call of the session without anyone being asked, in
// an unconfined worker and in a Landlock-confined one; a confined worker's TMPDIR (and so
// os.tmpdir()) is that folder.
func TestSessionFolderReadableWithoutAsking(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeLandlock} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == sandbox.ModeLandlock {
				if abi, err := sandbox.LandlockABI(); abi < 1 {
					t.Skipf("Landlock is not available here: %v", err)
				}
			}
			f := newFixture(t)
			f.opts.Sandbox = host.SandboxOptions{Mode: mode, Launcher: os.Args[0]}
			f.addTool("big", map[string]string{"tool.ts": bigResult})
			f.addTool("reader", map[string]string{"tool.ts": catalogueReader})
			f.start()
			out := f.call("big", `{}`, func(c *host.Call) { c.CallID = "c-big"; c.SessionID = "s-temp" })
			if out.Overflow == nil {
				t.Fatalf("the big result did not overflow: %+v", out)
			}
			nobody := &answerer{}
			args, _ := json.Marshal(map[string]string{"path": out.Overflow.Path})
			read := f.call("reader", string(args), func(c *host.Call) { c.CallID = "c-read"; c.SessionID = "s-temp"; c.Asker = nobody })
			if !read.Result.Success {
				t.Fatalf("reading the overflow file %s failed: %s (asked %d times)", out.Overflow.Path, read.Result.Error, len(nobody.asked))
			}
			var r struct{ Tail, TempDir, TMPDIR, OsTmp string }
			if err := json.Unmarshal(read.Result.Result, &r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Tail, "END") || len(nobody.asked) != 0 {
				t.Errorf("read %q, asked %d times (want the file's end, no asks)", r.Tail, len(nobody.asked))
			}
			if r.TempDir == "" || filepath.Dir(out.Overflow.Path) != r.TempDir {
				t.Errorf("ctx.fs.tempDir %q, overflow file in %q: want one folder", r.TempDir, filepath.Dir(out.Overflow.Path))
			}
			// The session's own folder: its workers serve it alone.
			if mode == sandbox.ModeLandlock && (r.TMPDIR != r.TempDir || r.OsTmp != r.TempDir) {
				t.Errorf("confined worker: TMPDIR %q, os.tmpdir() %q; want the session's folder %q", r.TMPDIR, r.OsTmp, r.TempDir)
			}
			// A link planted in the session folder that leads out is not answered for.
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "data.txt"), []byte("outside data"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(r.TempDir, "planted")
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			args, _ = json.Marshal(map[string]string{"path": filepath.Join(link, "data.txt")})
			read = f.call("reader", string(args), func(c *host.Call) { c.CallID = "c-link"; c.SessionID = "s-temp"; c.Asker = nobody })
			if read.Result.Success || len(nobody.asked) != 1 {
				t.Errorf("through a link in the session folder: success %v (%s), asked %d times; want a refusal after asking", read.Result.Success, read.Result.Result, len(nobody.asked))
			}
		})
	}
}

// rawAccess does, with node:fs and node:child_process, what the sandbox refuses a tool that
// declares nothing: read and write outside the workspace, start a process; and what it
// allows (a read in the workspace) and what fails for another reason (a missing file).
const rawAccess = `
import fs from 'node:fs';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
export const definition = { name: 'raw', description: 'raw', inputSchema: { type: 'object', properties: { dir: { type: 'string' }, what: { type: 'string' } } } };
export async function execute(input, ctx) {
  const tryIt = async (f) => { try { await f(); return 'ok'; } catch (e) { return (e.code || '') + ' | ' + e.message; } };
  if (input.what === 'throw') { readFileSync(input.dir + '/data.txt', 'utf8'); }
  const data = input.dir + '/data.txt';
  return { success: true, result: {
    readSync: await tryIt(() => readFileSync(data, 'utf8')),
    readAsync: await tryIt(() => readFile(data, 'utf8')),
    readCallback: await tryIt(() => new Promise((res, rej) => fs.readFile(data, (err, d) => (err ? rej(err) : res(d))))),
    stream: await tryIt(() => new Promise((res, rej) => fs.createReadStream(data).on('error', rej).on('end', res).resume())),
    writeSync: await tryIt(() => fs.writeFileSync(input.dir + '/new.txt', 'x')),
    execFileSync: await tryIt(() => execFileSync('/bin/true')),
    spawnSync: String(spawnSync('/bin/true').error?.message ?? 'ok'),
    spawn: await tryIt(() => new Promise((res, rej) => spawn('/bin/true').on('error', rej).on('exit', res))),
    workspace: await tryIt(() => fs.writeFileSync(ctx.workspacePath + '/mine.txt', 'x')),
    missing: await tryIt(() => readFileSync(ctx.workspacePath + '/missing.txt')),
  } };
}
`

// TestSandboxRefusalsSayWhoRefused: what Landlock and seccomp refuse a tool's own code is
// reported, in the error the tool catches and in the result error of one it lets through,
// as jean2's sandbox refusing it, naming the declaration that would allow it; what the
// sandbox allows, or what fails for another reason, is left as Node reports it.
func TestSandboxRefusalsSayWhoRefused(t *testing.T) {
	testRefusalsSayWhoRefused(t, "")
}

// TestSandboxRefusalsSayWhoRefusedBunFS: a Bun worker explains the same refusals with the
// same words (Bun's node:fs named imports are bound before the worker can wrap them).
func TestSandboxRefusalsSayWhoRefusedBunFS(t *testing.T) {
	testRefusalsSayWhoRefused(t, "bun")
}

func testRefusalsSayWhoRefused(t *testing.T, runtime string) {
	if abi, err := sandbox.LandlockABI(); abi < 1 {
		t.Skipf("Landlock is not available here: %v", err)
	}
	f := newFixture(t)
	if runtime == "bun" {
		f.opts.BunPath = bunPath(t)
		f.opts.RuntimePreference = "bun"
	}
	f.opts.Sandbox = host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: os.Args[0]}
	outside := t.TempDir()
	data := filepath.Join(outside, "data.txt")
	if err := os.WriteFile(data, []byte("outside data"), 0o644); err != nil {
		t.Fatal(err)
	}
	// (A new entry at the workspace's top level is made through ctx.fs; an existing file the
	// tool's own code may change.)
	if err := os.WriteFile(filepath.Join(f.ws, "mine.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.addTool("raw", map[string]string{"tool.ts": rawAccess})
	f.start()
	args, _ := json.Marshal(map[string]string{"dir": outside})
	r := result[map[string]string](t, f.call("raw", string(args)))
	const who = "(refused by jean2's sandbox: "
	const approve = "approves it with `jean2 tools approve raw`"
	readDecl := `declares {"read":["` + data + `"]} in its permissions`
	writeDecl := `declares {"write":["` + filepath.Join(outside, "new.txt") + `"]} in its permissions`
	spawnDecl := `declares {"childProcess": true} in its permissions`
	for k, want := range map[string]string{
		"readSync": readDecl, "readAsync": readDecl, "readCallback": readDecl, "stream": readDecl,
		"writeSync": writeDecl, "execFileSync": spawnDecl, "spawnSync": spawnDecl, "spawn": spawnDecl,
	} {
		if v := r[k]; !strings.Contains(v, who) || !strings.Contains(v, want) || !strings.Contains(v, approve) || strings.Count(v, who) != 1 {
			t.Errorf("%s: %q\nwant it to say who refused and %q", k, v, want)
		}
	}
	if r["workspace"] != "ok" {
		t.Errorf("writing in the workspace: %q", r["workspace"])
	}
	if v := r["missing"]; !strings.HasPrefix(v, "ENOENT | ENOENT: no such file or directory") || strings.Contains(v, who) {
		t.Errorf("a missing file: %q (want Node's ENOENT, not a refusal)", v)
	}
	args, _ = json.Marshal(map[string]string{"dir": outside, "what": "throw"})
	out := f.call("raw", string(args))
	if out.Result.Success || !strings.Contains(out.Result.Error, who) || !strings.Contains(out.Result.Error, readDecl) {
		t.Errorf("a refusal the tool lets through: %+v", out.Result)
	}
}

// fsEdges asks ctx.fs.exists about refused paths and reads what is missing.
const fsEdges = `
export const definition = { name: 'edges', description: 'edges', inputSchema: { type: 'object', properties: { outside: { type: 'string' }, home: { type: 'string' } } } };
export async function execute(input, ctx) {
  const tryIt = async (f) => { try { return String(await f()); } catch (e) { return 'THROWS ' + (e.code || '') + ' | ' + e.message; } };
  const ws = ctx.workspacePath;
  return { success: true, result: {
    existsBlocked: await tryIt(() => ctx.fs.exists('/etc/passwd')),
    existsOutside: await tryIt(() => ctx.fs.exists(input.outside)),
    existsHome: await tryIt(() => ctx.fs.exists(input.home)),
    existsMissing: await tryIt(() => ctx.fs.exists(ws + '/missing.txt')),
    existsThere: await tryIt(() => ctx.fs.exists(ws + '/there.txt')),
    readMissing: await tryIt(() => ctx.fs.readFile(ws + '/missing.txt', 'utf-8')),
    readDirMissing: await tryIt(() => ctx.fs.readDir(ws + '/nodir')),
    statMissing: await tryIt(() => ctx.fs.stat(ws + '/missing.txt')),
    mkdirMissing: await tryIt(() => ctx.fs.mkdir(ws + '/nodir/sub')),
  } };
}
`

// TestContextFSEdges: ctx.fs.exists answers false for a path it may not look at (blocked,
// outside the workspace, jean2's home) instead of throwing, and a missing file fails with
// Node's words.
func TestContextFSEdges(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "there.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.addTool("edges", map[string]string{"tool.ts": fsEdges})
	f.start()
	args, _ := json.Marshal(map[string]string{"outside": outside, "home": f.layout.DotEnv})
	r := result[map[string]string](t, f.call("edges", string(args)))
	ws := f.ws
	for k, want := range map[string]string{
		"existsBlocked":  "false",
		"existsOutside":  "false",
		"existsHome":     "false",
		"existsMissing":  "false",
		"existsThere":    "true",
		"readMissing":    "THROWS ENOENT | ENOENT: no such file or directory, open '" + ws + "/missing.txt'",
		"readDirMissing": "THROWS ENOENT | ENOENT: no such file or directory, scandir '" + ws + "/nodir'",
		"statMissing":    "THROWS ENOENT | ENOENT: no such file or directory, stat '" + ws + "/missing.txt'",
		"mkdirMissing":   "THROWS ENOENT | ENOENT: no such file or directory, mkdir '" + ws + "/nodir/sub'",
	} {
		if r[k] != want {
			t.Errorf("%s = %q\n want %q", k, r[k], want)
		}
	}
}

// bunSpawner starts a process with Bun.spawn, as the original Bun-based jean2's shell does.
const bunSpawner = `
export const definition = { name: 'bun-spawn', description: 'spawn', inputSchema: { type: 'object', properties: {} } };
export async function execute() {
  try { Bun.spawn(['/bin/true']); return { success: true, result: 'spawned' }; }
  catch (e) { return { success: false, error: e.message }; }
}
`

// TestSandboxRefusalsSayWhoRefusedBun: Bun.spawn refused by seccomp says so too.
func TestSandboxRefusalsSayWhoRefusedBun(t *testing.T) {
	if abi, err := sandbox.LandlockABI(); abi < 1 {
		t.Skipf("Landlock is not available here: %v", err)
	}
	f := newFixture(t)
	f.opts.BunPath = bunPath(t)
	f.opts.Sandbox = host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: os.Args[0]}
	f.addTool("bun-spawn", map[string]string{"tool.ts": bunSpawner})
	f.start()
	out := f.call("bun-spawn", `{}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "(refused by jean2's sandbox: ") ||
		!strings.Contains(out.Result.Error, `declares {"childProcess": true}`) {
		t.Errorf("Bun.spawn in a confined worker: %+v", out.Result)
	}
}
