package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/runtime/gotool"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

const pkgJSON = `{"name":"t","version":"1.0.0","private":true,"type":"module","dependencies":{"@jean2/sdk":"^0.9.0"}}`

// jsTool is a tool.ts whose execute body is body.
func jsTool(name, extraDef, body string) map[string]string {
	return map[string]string{
		"package.json": pkgJSON,
		"tool.ts": fmt.Sprintf(`import type { ToolDefinition, ToolContext } from '@jean2/sdk';
export const definition: ToolDefinition = {
  name: %q, description: 'test tool', inputSchema: { type: 'object', properties: {} }, %s
};
export async function execute(input: any, ctx: ToolContext): Promise<any> {
%s
}
`, name, extraDef, body),
	}
}

// A broken tool is listed with status error and a precise message, and never affects the
// others or the host.
func TestBrokenToolsAreListedAndContained(t *testing.T) {
	f := newFixture(t)
	f.addTool("good", jsTool("good", "", "return { success: true, result: 'fine' };"))
	f.addTool("syntax", map[string]string{"package.json": pkgJSON, "tool.ts": "export const definition = {\n  name: 'syntax',\n  description: 'x' x\n};\n"})
	f.addTool("no-export", map[string]string{"package.json": pkgJSON, "tool.ts": "export const something = 1;\n"})
	f.addTool("bad-schema", map[string]string{"package.json": pkgJSON, "tool.ts": `export const definition = { name: 'bad-schema', description: 'x', inputSchema: { type: 'object', properties: { n: { type: 'integr' } } } };
export async function execute() { return { success: true }; }
`})
	f.addTool("dup-a", jsTool("dup", "", "return { success: true, result: 'a' };"))
	f.addTool("dup-b", jsTool("dup", "", "return { success: true, result: 'b' };"))
	f.addTool("throws-at-load", map[string]string{"package.json": pkgJSON, "tool.ts": "\n\nthrow new Error('broken at import');\nexport const definition = {};\n"})
	f.addTool("bad-dep", map[string]string{"package.json": `{"name":"bad-dep","type":"module","dependencies":{"@jean2-test-nonexistent/definitely-not-a-package":"1.0.0"}}`,
		"tool.ts": "export const definition = {}; export async function execute() {}\n"})
	f.start()

	cases := map[string]string{
		"syntax":         `tool.ts:3:20: Expected "}" but found "x"`,
		"no-export":      "definition",
		"bad-schema":     "definition.inputSchema",
		"throws-at-load": "broken at import",
		"bad-dep":        "E404",
	}
	for name, want := range cases {
		e := f.entry(name)
		if e.Status != host.StatusError || !strings.Contains(e.Error, want) {
			t.Errorf("%s: status %s error %q; want error containing %q", name, e.Status, e.Error, want)
		}
	}
	if e := f.entry("throws-at-load"); !strings.Contains(e.Error, "tool.ts:3") {
		t.Errorf("load error not located in the tool's source: %s", e.Error)
	}
	// Duplicate names: the first folder serves, the second is listed with the clash.
	var dupErr string
	for _, e := range f.h.Tools() {
		if e.Folder == filepath.Join(f.layout.Tools, "dup-b") {
			dupErr = e.Error
		}
	}
	if !strings.Contains(dupErr, `duplicate tool name "dup"`) || !strings.Contains(dupErr, "dup-a") {
		t.Errorf("duplicate: %q", dupErr)
	}
	if got := result[string](t, f.call("dup", `{}`)); got != "a" {
		t.Errorf("dup served by %q", got)
	}
	// The good tool works, and calling a broken one says why it cannot be used.
	if got := result[string](t, f.call("good", `{}`)); got != "fine" {
		t.Errorf("good: %q", got)
	}
	out := f.call("syntax", `{}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "tool syntax cannot be used") || !strings.Contains(out.Result.Error, "tool.ts:3:20") {
		t.Errorf("calling a broken tool: %+v", out.Result)
	}
	out = f.call("nope", `{}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, `unknown tool "nope": available tools are dup, good`) {
		t.Errorf("unknown tool: %+v", out.Result)
	}
}

// Timeouts, crashes and misbehaving results each fail their call clearly, and the next call
// of the same tool works.
func TestTimeoutsCrashesAndResults(t *testing.T) {
	f := newFixture(t)
	f.addTool("misbehave", map[string]string{"package.json": pkgJSON, "tool.ts": `import type { ToolDefinition, ToolContext } from '@jean2/sdk';
export const definition: ToolDefinition = {
  name: 'misbehave', description: 'misbehaves on request', timeout: 400,
  inputSchema: { type: 'object', properties: { how: { type: 'string' } }, required: ['how'] },
};
export async function execute(input: { how: string }, ctx: ToolContext): Promise<any> {
  switch (input.how) {
    case 'ok': return { success: true, result: process.pid };
    case 'loop': while (true) {}
    case 'exit': process.exit(3);
    case 'reject': Promise.reject(new Error('nobody catches me')); await new Promise(r => setTimeout(r, 200)); return { success: true };
    case 'throw': throw new Error('thrown on purpose');
    case 'cycle': { const a: any = {}; a.self = a; return { success: true, result: a }; }
    case 'bigint': return { success: true, result: 10n };
    case 'string': return 'just a string';
    case 'nosuccess': return { result: 1 };
    case 'abortable': await new Promise((_, rej) => ctx.abortSignal.addEventListener('abort', () => rej(new Error('aborted: ' + ctx.abortSignal.reason)))); return {};
    case 'big': return { success: true, result: 'x'.repeat(60000) + 'END' };
    case 'badviz': return { success: true, result: 1, visualization: { type: 'chart', points: [] } };
    case 'jx': return { success: true, data: { renamed: true }, summary: 'Renamed a.md.' };
    case 'llm': try { await ctx.llm.generateText({ prompt: 'hi' }); return { success: true }; } catch (e: any) { return { success: false, error: e.message }; }
  }
  return { success: false, error: 'unknown how' };
}
`})
	f.start()
	call := func(how string) host.Outcome { return f.call("misbehave", fmt.Sprintf(`{"how":%q}`, how)) }
	okPid := func() float64 {
		t.Helper()
		return result[float64](t, call("ok"))
	}
	pid := okPid()

	start := time.Now()
	out := call("loop")
	if out.Result.Error != "Tool execution timed out after 400ms" {
		t.Fatalf("loop: %+v", out.Result)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if p2 := okPid(); p2 == pid {
		t.Fatal("the hung worker was not replaced")
	}
	out = call("abortable")
	if out.Result.Error != "Tool execution timed out after 400ms" {
		t.Fatalf("abortable: %+v", out.Result)
	}
	for how, want := range map[string]string{
		"exit":      "exit",
		"reject":    "nobody catches me",
		"throw":     "thrown on purpose",
		"cycle":     "tool result cannot be serialized",
		"bigint":    "tool result cannot be serialized",
		"string":    "returned a string; a ToolResult is an object",
		"nosuccess": `without a boolean "success"`,
	} {
		out := call(how)
		if out.Result.Success || !strings.Contains(out.Result.Error, want) {
			t.Errorf("%s: %+v; want error containing %q", how, out.Result, want)
		}
		okPid() // the next call works
	}

	// Overflow: the whole result goes to a file; the model sees a preview and a note.
	out = call("big")
	if out.Overflow == nil || !strings.Contains(out.ModelText, out.Overflow.Path) || !strings.Contains(out.ModelText, fmt.Sprintf("%d characters", out.Overflow.Chars)) {
		t.Fatalf("overflow: %+v / %.200s", out.Overflow, out.ModelText)
	}
	if n := len([]rune(out.ModelText[:strings.Index(out.ModelText, "\n\n[Result truncated")])); n != host.OverflowPreview {
		t.Fatalf("preview is %d characters", n)
	}
	// The result is a string: the model's text, and the file, are that text (issue 24).
	full, err := os.ReadFile(out.Overflow.Path)
	if err != nil || len(full) != 60003 || !bytes.HasSuffix(full, []byte("xEND")) || filepath.Ext(out.Overflow.Path) != ".txt" ||
		!strings.HasPrefix(out.ModelText, "xxx") {
		t.Fatalf("overflow file %s: %v %.100s; model text %.20q", out.Overflow.Path, err, full, out.ModelText)
	}
	sessionTemp, _ := f.sessionTemp("s1")
	if filepath.Dir(out.Overflow.Path) != sessionTemp {
		t.Fatalf("overflow file %s is not in the session's temp folder %s", out.Overflow.Path, sessionTemp)
	}

	// An invalid visualization is dropped with the reason; the result still goes through.
	out = call("badviz")
	if !out.Result.Success || out.Result.Visualization != nil || !strings.Contains(out.VisualizationError, `"chart" is not a visualization type`) {
		t.Fatalf("badviz: %+v %q", out.Result, out.VisualizationError)
	}
	// Until a provider is configured, ctx.llm says so.
	if out := call("llm"); out.Result.Success || !strings.Contains(out.Result.Error, "no LLM provider is configured") {
		t.Fatalf("llm: %+v", out.Result)
	}
	// The Jx result shape is normalized.
	out = call("jx")
	if string(out.Result.Result) != `{"renamed":true}` || out.Result.Summary != "Renamed a.md." || !strings.Contains(out.ModelText, `"summary":"Renamed a.md."`) {
		t.Fatalf("jx: %+v %s", out.Result, out.ModelText)
	}
}

// Stop (the caller's context) reaches a running call; the next call works.
func TestStopReachesTheCall(t *testing.T) {
	f := newFixture(t)
	f.addTool("slow", jsTool("slow", "", `await new Promise((res) => { const t = setTimeout(res, 20000); ctx.abortSignal.addEventListener('abort', () => { clearTimeout(t); res(null); }); });
  return { success: false, error: 'stopped: ' + ctx.abortSignal.aborted };`))
	f.start()
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel(fmt.Errorf("Stop pressed")) }()
	start := time.Now()
	out := f.h.Invoke(ctx, host.Call{Tool: "slow", Args: json.RawMessage(`{}`), Workspace: host.Workspace{Path: f.ws}})
	if out.Result.Success || !strings.Contains(out.Result.Error, "Stop pressed") || time.Since(start) > 5*time.Second {
		t.Fatalf("stop: %+v after %v", out.Result, time.Since(start))
	}
}

// Paths: `..`, symlinks planted in the workspace and writes outside cannot lead out; every
// change through ctx.fs is on the ledger with what it takes to put it back.
func TestPathPolicyAndRestoreThroughWorker(t *testing.T) {
	f := newFixture(t)
	f.addTool("fsops", map[string]string{"package.json": pkgJSON, "tool.ts": `import type { ToolDefinition, ToolContext } from '@jean2/sdk';
export const definition: ToolDefinition = { name: 'fsops', description: 'file ops', inputSchema: { type: 'object', properties: { op: { type: 'string' }, path: { type: 'string' }, to: { type: 'string' } } } };
export async function execute(i: any, ctx: ToolContext): Promise<any> {
  try {
    switch (i.op) {
      case 'read': return { success: true, result: await ctx.fs.readFile(i.path, 'utf-8') };
      case 'write': await ctx.fs.writeFile(i.path, 'written by tool'); return { success: true };
      case 'edit': await ctx.fs.writeFile('keep.txt', 'changed'); await ctx.fs.writeFile('new/dir/created.txt', 'new'); await ctx.fs.appendFile('new/dir/created.txt', '+more');
        await ctx.fs.rename('move-me.txt', 'moved.txt'); await ctx.fs.rm('tree', { recursive: true }); await ctx.fs.mkdir('made/deep', { recursive: true });
        return { success: true };
    }
  } catch (e: any) { return { success: false, error: e.message + ' [' + e.code + ']' }; }
}
`})
	f.start()
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	_ = os.WriteFile(secret, []byte("top secret"), 0o600)
	_ = os.Symlink(secret, filepath.Join(f.ws, "link-to-secret"))
	_ = os.Symlink(secretDir, filepath.Join(f.ws, "link-to-dir"))
	rel, _ := filepath.Rel(f.ws, secret)

	for _, args := range []string{
		fmt.Sprintf(`{"op":"read","path":%q}`, rel),
		`{"op":"read","path":"link-to-secret"}`,
		`{"op":"read","path":"link-to-dir/secret.txt"}`,
		`{"op":"write","path":"link-to-dir/planted.txt"}`,
		fmt.Sprintf(`{"op":"write","path":%q}`, filepath.Join(secretDir, "planted.txt")),
		`{"op":"read","path":"/proc/self/environ"}`,
	} {
		out := f.call("fsops", args)
		if out.Result.Success || !(strings.Contains(out.Result.Error, "outside the workspace") || strings.Contains(out.Result.Error, "blocked")) {
			t.Errorf("%s: %+v", args, out.Result)
		}
	}
	if _, err := os.Stat(filepath.Join(secretDir, "planted.txt")); err == nil {
		t.Fatal("a write escaped the workspace")
	}

	// A turn's worth of changes, then Restore puts the workspace back byte for byte.
	files := map[string]string{"keep.txt": "original", "move-me.txt": "moving", "tree/a.txt": "a", "tree/sub/b.txt": "b"}
	for p, c := range files {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(f.ws, p)), 0o755)
		_ = os.WriteFile(filepath.Join(f.ws, p), []byte(c), 0o640)
	}
	before := snapshotTree(t, f.ws)
	ledger := tool.NewLedger()
	out := f.call("fsops", `{"op":"edit"}`, func(c *host.Call) { c.Ledger = ledger })
	if !out.Result.Success {
		t.Fatal(out.Result.Error)
	}
	if snapshotTree(t, f.ws) == before {
		t.Fatal("the edit changed nothing")
	}
	if s := ledger.Summary(); s.Changed < 5 || s.Failed != 0 {
		t.Fatalf("ledger summary %+v", s)
	}
	if _, err := toolfs.Restore(ledger.Changes()); err != nil {
		t.Fatal(err)
	}
	if after := snapshotTree(t, f.ws); after != before {
		t.Fatalf("restore differs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// snapshotTree lists every path under root with its mode and content.
func snapshotTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %v", rel, fi.Mode())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", data)
		} else if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", target)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// The Jx module shape loads and runs, with its helpers from the embedded SDK.
func TestJxShape(t *testing.T) {
	f := newFixture(t)
	f.addTool("rename-page", map[string]string{"package.json": `{"name":"x","type":"module","dependencies":{"@jxsuite/ai":"*"}}`, "tool.ts": `import { createToolDefinition, toolSuccess } from "@jxsuite/ai/tools";
export default createToolDefinition({
  name: "rename_page",
  description: "Rename a page file.",
  interactive: false,
  parameters: { type: "object", properties: { from: { type: "string" }, to: { type: "string" } }, required: ["from", "to"] },
  async execute(args, ctx) {
    const { from, to } = args as { from: string; to: string };
    await ctx.fs.rename(from, to);
    ctx.ledger.record({ disk: true, ok: true, path: to, tool: "rename_page" });
    return toolSuccess({ from, to }, "Renamed " + from + " to " + to + ".");
  },
});
`})
	f.start()
	_ = os.WriteFile(filepath.Join(f.ws, "a.md"), []byte("# A"), 0o644)
	ledger := tool.NewLedger()
	out := f.call("rename_page", `{"from":"a.md","to":"b.md"}`, func(c *host.Call) { c.Ledger = ledger })
	if !out.Result.Success || out.Result.Summary != "Renamed a.md to b.md." || string(out.Result.Result) != `{"from":"a.md","to":"b.md"}` {
		t.Fatalf("%+v", out.Result)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "b.md")); err != nil {
		t.Fatal(err)
	}
	if s := ledger.Summary(); s.Changed != 2 { // a.md (gone) and b.md (created)
		t.Fatalf("summary %+v", s)
	}
	if out := f.call("rename_page", `{"from":"a.md"}`); out.Result.Success || !strings.Contains(out.Result.Error, "missing property 'to'") {
		t.Fatalf("%+v", out.Result)
	}
}

// Tools written for the original Bun-based system run when the runtime is Bun.
func TestOriginalBunTools(t *testing.T) {
	f := newFixture(t)
	f.opts.BunPath = bunPath(t)
	f.addTool("bun-native", map[string]string{
		"package.json": `{"name":"bun-native","type":"module","jean2":{"runtime":"bun"},"dependencies":{"@jean2/sdk":"^0.9.0"}}`,
		"tool.ts": `import { Database } from 'bun:sqlite';
import type { ToolDefinition, ToolContext } from '@jean2/sdk';
export const definition: ToolDefinition = { name: 'bun-native', description: 'uses Bun APIs', inputSchema: { type: 'object', properties: {} } };
export async function execute(_: unknown, ctx: ToolContext) {
  const db = new Database(':memory:');
  db.run('create table t (n integer)'); db.run('insert into t values (41)');
  const row = db.query('select n + 1 as n from t').get() as { n: number };
  const proc = Bun.spawn(['echo', 'spawned']);
  const out = await new Response(proc.stdout).text();
  return { success: true, result: { hash: typeof Bun.hash('abc'), n: row.n, out: out.trim(), version: Bun.version } };
}
`})
	f.start()
	if e := f.entry("bun-native"); e.Runtime != "bun" {
		t.Fatalf("runtime %+v", e)
	}
	got := result[map[string]any](t, f.call("bun-native", `{}`))
	if got["n"] != float64(42) || got["out"] != "spawned" || (got["hash"] != "number" && got["hash"] != "bigint") {
		t.Fatalf("%v", got)
	}
}

// A Go tool folder is built with the local toolchain and runs as a worker with the same
// context powers; a build error is listed with its file and line.
func TestGoToolFolder(t *testing.T) {
	f := newFixture(t)
	f.addTool("gohead", gotool.Scaffold("gohead"))
	broken := gotool.Scaffold("gobroken")
	broken["tool.go"] = strings.Replace(broken["tool.go"], "func main() {", "func main() {\n\tundefinedThing()", 1)
	f.addTool("gobroken", broken)
	f.opts.ServerEnv = append(f.opts.ServerEnv, "HOME="+os.Getenv("HOME"))
	f.start()
	if e := f.entry("gohead"); e.Status != host.StatusOK || e.Runtime != "go" || e.Kind != "go" {
		t.Fatalf("entry %+v", e)
	}
	if e := f.entry("gobroken"); e.Status != host.StatusError || !strings.Contains(e.Error, "tool.go:") || !strings.Contains(e.Error, "undefined: undefinedThing") {
		t.Fatalf("broken entry %+v", e)
	}
	_ = os.WriteFile(filepath.Join(f.ws, "f.txt"), []byte("a\nb\nc\n"), 0o644)
	got := result[map[string]string](t, f.call("gohead", `{"path":"f.txt","lines":2}`))
	if got["head"] != "a\nb" {
		t.Fatalf("%v", got)
	}
	if out := f.call("gohead", `{"path":"/etc/passwd"}`); out.Result.Success || !strings.Contains(out.Result.Error, "blocked") {
		t.Fatalf("the Go tool's file access is not under the host's policy: %+v", out.Result)
	}
	if !strings.Contains(f.logs.all(), "read file") {
		t.Fatalf("the Go tool's log line did not reach the host:\n%s", f.logs.all())
	}
}
