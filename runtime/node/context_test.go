package node

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/tool"
)

// ctxProbe uses every member of ctx and reports what it saw.
const ctxProbe = `
export const definition = { name: 'ctx-probe', description: 'Uses every ctx member.', inputSchema: { type: 'object' }, env: ['DECLARED', 'UNSET'] };
export async function execute(input, ctx) {
  const out = {};
  out.ids = { sessionId: ctx.sessionId, workspacePath: ctx.workspacePath, workspaceId: ctx.workspaceId, callId: ctx.callId };
  out.signal = { same: ctx.signal === ctx.abortSignal, aborted: ctx.abortSignal.aborted, isSignal: ctx.signal instanceof AbortSignal };
  out.allowedPaths = ctx.allowedPaths;

  out.readText = await ctx.fs.readFile('notes.txt', 'utf-8');
  const bytes = await ctx.fs.readFile('bin.dat');
  out.readBytes = { isUint8Array: bytes instanceof Uint8Array, data: Array.from(bytes) };
  // jean2's host answers a plain Uint8Array, not a Node Buffer (pdf.js refuses a Buffer).
  out.readBytesPlain = Object.getPrototypeOf(bytes) === Uint8Array.prototype && !Buffer.isBuffer(bytes);
  out.readLatin1 = await ctx.fs.readFile('bin.dat', { encoding: 'hex' });
  await ctx.fs.writeFile('out.txt', 'hello ☃');
  await ctx.fs.writeFile('out.bin', new Uint8Array([0, 1, 255]));
  await ctx.fs.appendFile('out.txt', ' world');
  out.readDir = await ctx.fs.readDir('.');
  out.exists = await ctx.fs.exists('nope');
  const st = await ctx.fs.stat('notes.txt');
  out.stat = { size: st.size, isFile: st.isFile, isDirectory: st.isDirectory, dates: st.modifiedAt instanceof Date && st.createdAt instanceof Date, mtime: st.modifiedAt.getTime(), ctime: st.createdAt.getTime() };
  await ctx.fs.mkdir('sub/dir', { recursive: true });
  await ctx.fs.rm('sub', { recursive: true });
  await ctx.fs.rename('a.txt', 'b.txt');
  try { await ctx.fs.readFile('missing.txt', 'utf-8'); } catch (e) { out.enoent = { message: e.message, code: e.code, path: e.path, isError: e instanceof Error }; }
  try { await ctx.fs.writeFile('/etc/passwd', 'x'); } catch (e) { out.denied = { message: e.message, code: e.code }; }
  try { await ctx.fs.writeFile('x', { not: 'bytes' }); } catch (e) { out.badData = e.message; }
  out.resolve = ctx.fs.resolve('x/y.ts');
  out.lang = [ctx.fs.detectLanguage('a.ts'), ctx.fs.detectLanguage('/p/Dockerfile'), ctx.fs.detectLanguage('x.unknown'), ctx.fs.detectLanguage('/a/.env')];
  out.tempDir = ctx.fs.tempDir;

  out.llmText = await ctx.llm.generateText({ prompt: 'hi', system: 'sys' });
  // jean2's image shapes: one {data, mediaType} (bytes or base64) or an array of them.
  out.llmOneImage = await ctx.llm.generateText({ prompt: 'see', image: { data: new Uint8Array([1, 2, 3]), mediaType: 'image/png' } });
  out.llmImages = await ctx.llm.generateText({ prompt: 'see', image: [{ data: 'AQID', mediaType: 'image/jpeg' }, { data: 'data:image/gif;base64,R0lG', mediaType: 'image/gif' }] });
  out.llmStructured = await ctx.llm.generateStructured({ prompt: 'p', schema: { type: 'object' } });
  out.ask = await ctx.ask({ type: 'confirm', question: 'Proceed?' });

  out.env = { get: ctx.env.get('DECLARED'), missing: ctx.env.get('OTHER') ?? null };
  try { ctx.env.require('OTHER'); } catch (e) { out.requireErr = e.message; }
  try { ctx.env.require('UNSET'); } catch (e) { out.requireUnset = e.message; }
  out.processEnv = Object.keys(process.env);

  ctx.logger.debug('d');
  ctx.logger.info('hello', { n: 1 });
  ctx.logger.warn('w');
  ctx.logger.error('e', { big: 10n });

  out.fetched = await (await ctx.fetch(input.url)).text();

  ctx.ledger.record({ path: 'out.txt', tool: 'ctx-probe', disk: true, ok: true });
  ctx.ledger.record({ path: 'bad.txt', tool: 'ctx-probe', disk: false, ok: false, error: 'nope' });
  await ctx.session.set('k', { v: 1 });
  out.session = await ctx.session.get('k');
  ctx.progress({ message: 'half', current: 1, total: 2 });
  out.addReturns = await ctx.addWorkspacePath('/extra');
  out.allowedAfterAdd = ctx.allowedPaths;
  out.removeReturns = await ctx.removeWorkspacePath('/extra');
  out.allowedAfterRemove = ctx.allowedPaths;
  return { success: true, result: out };
}
`

// deniedErr is how a host refuses by policy (an error with a JSON-RPC code and data).
type deniedErr struct{ path string }

func (e deniedErr) Error() string {
	return "writing " + e.path + " is not allowed: it is a system path"
}
func (e deniedErr) ErrorCode() int { return workerproto.CodeDenied }
func (e deniedErr) ErrorData() any { return workerproto.ErrorData{Code: "EACCES", Path: e.path} }

func TestContextReachesHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "fetched body") }))
	defer srv.Close()
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, ctxProbe, worker.PoolOptions{})
		var mu sync.Mutex
		session := map[string]json.RawMessage{}
		h := &fakeHost{answer: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			var pp struct {
				CallID string          `json:"callId"`
				Path   string          `json:"path"`
				Key    string          `json:"key"`
				Value  json.RawMessage `json:"value"`
			}
			_ = json.Unmarshal(params, &pp)
			if pp.CallID != "probe-1" {
				return nil, fmt.Errorf("request without the call's id: %s", params)
			}
			switch method {
			case "fs.readFile":
				switch pp.Path {
				case "notes.txt":
					return workerproto.FSData{Data: "note body", Encoding: "utf-8"}, nil
				case "bin.dat":
					return workerproto.FSData{Data: "AAEC/w==", Encoding: "base64"}, nil
				}
				return nil, &fs.PathError{Op: "open", Path: "/ws/" + pp.Path, Err: syscall.ENOENT}
			case "fs.writeFile":
				if pp.Path == "/etc/passwd" {
					return nil, deniedErr{pp.Path}
				}
				return nil, nil
			case "fs.readDir":
				return []tool.DirEntry{{Name: "a.txt", IsFile: true}, {Name: "sub", IsDirectory: true}}, nil
			case "fs.exists":
				return false, nil
			case "fs.stat":
				return workerproto.FSStat{Size: 9, IsFile: true, ModifiedAt: 1700000000000, CreatedAt: 1600000000000}, nil
			case "llm.generateText":
				var lp struct {
					Request tool.TextRequest `json:"request"`
				}
				_ = json.Unmarshal(params, &lp)
				if lp.Request.Prompt == "see" {
					return strings.Join(append([]string{lp.Request.Image}, lp.Request.Images...), " "), nil
				}
				return "generated text", nil
			case "llm.generateStructured":
				return map[string]int{"answer": 42}, nil
			case "ask":
				return true, nil
			case "session.set":
				mu.Lock()
				session[pp.Key] = pp.Value
				mu.Unlock()
				return nil, nil
			case "session.get":
				mu.Lock()
				defer mu.Unlock()
				return session[pp.Key], nil
			case "workspace.addPath":
				return workerproto.WorkspaceResult{AllowedPaths: []string{"/allowed", "/extra"}}, nil
			case "workspace.removePath":
				return workerproto.WorkspaceResult{AllowedPaths: []string{"/allowed"}}, nil
			}
			return nil, nil
		}}
		r := mustExecute(t, p, worker.Call{
			ID:    "probe-1",
			Input: json.RawMessage(fmt.Sprintf(`{"url":%q}`, srv.URL)),
			Context: workerproto.CallContext{
				SessionID: "sess-1", WorkspacePath: "/ws", WorkspaceID: "ws-1", AllowedPaths: []string{"/allowed"},
				TempDir: "/tmp/jean2-session", Env: map[string]string{"DECLARED": "value"},
			},
		}, h)
		if !r.Success {
			t.Fatalf("tool failed: %s", r.Error)
		}
		var out map[string]any
		if err := json.Unmarshal(r.Result, &out); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"ids":                map[string]any{"sessionId": "sess-1", "workspacePath": "/ws", "workspaceId": "ws-1", "callId": "probe-1"},
			"signal":             map[string]any{"same": true, "aborted": false, "isSignal": true},
			"allowedPaths":       []any{"/allowed"},
			"readText":           "note body",
			"readBytes":          map[string]any{"isUint8Array": true, "data": []any{0.0, 1.0, 2.0, 255.0}},
			"readLatin1":         "000102ff",
			"readBytesPlain":     true,
			"llmOneImage":        "data:image/png;base64,AQID",
			"llmImages":          "data:image/jpeg;base64,AQID data:image/gif;base64,R0lG",
			"addReturns":         true,
			"removeReturns":      true,
			"readDir":            []any{map[string]any{"name": "a.txt", "isDirectory": false, "isFile": true}, map[string]any{"name": "sub", "isDirectory": true, "isFile": false}},
			"exists":             false,
			"stat":               map[string]any{"size": 9.0, "isFile": true, "isDirectory": false, "dates": true, "mtime": 1700000000000.0, "ctime": 1600000000000.0},
			"enoent":             map[string]any{"message": "open /ws/missing.txt: no such file or directory", "code": "ENOENT", "path": "/ws/missing.txt", "isError": true},
			"denied":             map[string]any{"message": "writing /etc/passwd is not allowed: it is a system path", "code": "EACCES"},
			"badData":            "ctx.fs.writeFile: data must be a string or bytes (Uint8Array, Buffer), got object",
			"resolve":            "/ws/x/y.ts",
			"lang":               []any{"typescript", "dockerfile", "text", "text"},
			"tempDir":            "/tmp/jean2-session",
			"llmText":            "generated text",
			"llmStructured":      map[string]any{"answer": 42.0},
			"ask":                true,
			"env":                map[string]any{"get": "value", "missing": nil},
			"requireErr":         `Environment variable OTHER is not declared: a tool sees only the variables its definition declares (env: ["OTHER"])`,
			"requireUnset":       "Required environment variable not set: UNSET",
			"processEnv":         []any{},
			"fetched":            "fetched body",
			"session":            map[string]any{"v": 1.0},
			"allowedAfterAdd":    []any{"/allowed", "/extra"},
			"allowedAfterRemove": []any{"/allowed"},
		}
		for k, w := range want {
			if !reflect.DeepEqual(out[k], w) {
				t.Errorf("%s: got %#v, want %#v", k, out[k], w)
			}
		}
		if len(out) != len(want) {
			t.Errorf("result has %d members, want %d: %v", len(out), len(want), out)
		}

		// What reached the host.
		params := func(method string) []string {
			var s []string
			for _, r := range h.records(method) {
				s = append(s, string(r.Params))
			}
			return s
		}
		expect := map[string][]string{
			"fs.writeFile": {
				`{"callId":"probe-1","path":"out.txt","data":"hello ☃","encoding":"utf-8"}`,
				`{"callId":"probe-1","path":"out.bin","data":"AAH/","encoding":"base64"}`,
				`{"callId":"probe-1","path":"/etc/passwd","data":"x","encoding":"utf-8"}`,
			},
			"fs.appendFile": {`{"callId":"probe-1","path":"out.txt","data":" world","encoding":"utf-8"}`},
			"fs.mkdir":      {`{"callId":"probe-1","path":"sub/dir","recursive":true}`},
			"fs.rm":         {`{"callId":"probe-1","path":"sub","recursive":true}`},
			"fs.rename":     {`{"callId":"probe-1","from":"a.txt","to":"b.txt"}`},
			"llm.generateText": {
				`{"callId":"probe-1","request":{"prompt":"hi","system":"sys"}}`,
				`{"callId":"probe-1","request":{"prompt":"see","image":"data:image/png;base64,AQID"}}`,
				`{"callId":"probe-1","request":{"prompt":"see","image":"data:image/jpeg;base64,AQID","images":["data:image/gif;base64,R0lG"]}}`,
			},
			"llm.generateStructured": {`{"callId":"probe-1","request":{"prompt":"p","schema":{"type":"object"}}}`},
			"ask":                    {`{"callId":"probe-1","ask":{"type":"confirm","question":"Proceed?"}}`},
			"session.set":            {`{"callId":"probe-1","key":"k","value":{"v":1}}`},
			"session.get":            {`{"callId":"probe-1","key":"k"}`},
			"workspace.addPath":      {`{"callId":"probe-1","path":"/extra"}`},
			"workspace.removePath":   {`{"callId":"probe-1","path":"/extra"}`},
			"ledger.record": {
				`{"callId":"probe-1","path":"out.txt","tool":"ctx-probe","disk":true,"ok":true}`,
				`{"callId":"probe-1","path":"bad.txt","tool":"ctx-probe","disk":false,"ok":false,"error":"nope"}`,
			},
			"progress": {`{"callId":"probe-1","message":"half","current":1,"total":2}`},
			"log": {
				// ctx.env.get of a variable the tool does not declare says why it is undefined.
				`{"callId":"probe-1","level":"warn","message":"ctx.env.get(\"OTHER\") is undefined: the tool does not declare OTHER (a tool sees only the variables its definition's env lists)"}`,
				`{"callId":"probe-1","level":"debug","message":"d"}`,
				`{"callId":"probe-1","level":"info","message":"hello","data":{"n":1}}`,
				`{"callId":"probe-1","level":"warn","message":"w"}`,
				`{"callId":"probe-1","level":"error","message":"e","data":"[cannot be serialized: Do not know how to serialize a BigInt]"}`,
			},
		}
		for method, w := range expect {
			got := params(method)
			if method == "log" && rt.Kind == KindBun && len(got) == 5 {
				// Engines word the BigInt error differently.
				w = append(w[:4:4], got[4])
				if !strings.Contains(got[4], `"data":"[cannot be serialized: `) {
					t.Errorf("log with unserializable data: %s", got[4])
				}
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("%s reached the host as\n  %v\nwant\n  %v", method, got, w)
			}
		}
		for _, r := range h.records("ledger.record") {
			if !r.Notify {
				t.Errorf("ledger.record must be a notification")
			}
		}
	})
}

// The worker's path helpers must agree with package tool (and so package policy) exactly.
func TestPathHelpersMatchPolicy(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "proj")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink inside the workspace that leads out of it, and one outside that leads in.
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws, filepath.Join(base, "into")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(ws, "etc-link")); err != nil {
		t.Fatal(err)
	}
	paths := []string{
		"", ".", "a.txt", "sub/../b.txt", "../proj-x/c", "../proj/d", "~", "~/x/../y", "~x",
		"escape/secret", "escape", filepath.Join(base, "into", "e"), ws + "/", ws + "-x",
		"/etc/passwd", "/etcetera", "/root", "/root/proj/file", "/root/other", "/usr/local/bin",
		"etc-link/hosts", "/tmp/jean2-temp/x", ".env", "config/.ENV.local", "keys/id_rsa.pub", "/home/u/.ssh/config",
		"/allowed/dir/f", "/allowedx", "a//b/./c/", "/", "../../../..",
	}
	src := `
export const definition = { name: 'paths', description: 'x', inputSchema: { type: 'object' } };
export async function execute(input, ctx) {
  return { success: true, result: input.paths.map((p) => [ctx.resolvePath(p), ctx.isWithinWorkspace(p), ctx.isSensitivePath(p), ctx.isBlockedPath(p), ctx.fs.resolve(p)]) };
}
`
	scopes := []struct {
		name      string
		workspace string
		allowed   []string
	}{
		{"tempdir workspace", ws, []string{"/allowed", filepath.Join(base, "into")}},
		{"workspace under /root", "/root/proj", nil},
	}
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		for _, sc := range scopes {
			tc := tool.NewContext(tool.Context{Workspace: sc.workspace, AllowedPaths: sc.allowed, Home: "/home/tester", TempDir: "/tmp/jean2-temp"})
			in, _ := json.Marshal(map[string]any{"paths": paths})
			r := mustExecute(t, p, worker.Call{Input: in, Context: workerproto.CallContext{WorkspacePath: sc.workspace, AllowedPaths: sc.allowed, TempDir: "/tmp/jean2-temp"}}, &fakeHost{})
			var got [][]any
			if err := json.Unmarshal(r.Result, &got); err != nil {
				t.Fatalf("%s: %v", r.Result, err)
			}
			for i, path := range paths {
				want := []any{tc.ResolvePath(path), tc.IsWithinWorkspace(path), tc.IsSensitivePath(path), tc.IsBlockedPath(path), tc.ResolvePath(path)}
				if !reflect.DeepEqual(got[i], want) {
					t.Errorf("%s: %q: worker says %v, package tool says %v", sc.name, path, got[i], want)
				}
			}
		}
	})
}

// Errors from the host reach the tool with their JSON-RPC code mapped as documented.
func TestRPCErrorMapping(t *testing.T) {
	cases := []struct {
		err      error
		code     int
		nodeCode string
	}{
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, workerproto.CodeFailed, "ENOENT"},
		{&fs.PathError{Op: "mkdir", Path: "/x", Err: syscall.EEXIST}, workerproto.CodeFailed, "EEXIST"},
		{&fs.PathError{Op: "rmdir", Path: "/x", Err: syscall.ENOTEMPTY}, workerproto.CodeFailed, "ENOTEMPTY"},
		{fmt.Errorf("wrapped: %w", fs.ErrPermission), workerproto.CodeFailed, "EACCES"},
		{deniedErr{"/etc/x"}, workerproto.CodeDenied, "EACCES"},
		{jsonrpc.NewError(workerproto.CodeInvalidParams, "bad", nil), workerproto.CodeInvalidParams, ""},
		{context.Canceled, workerproto.CodeFailed, ""},
		{fmt.Errorf("plain"), workerproto.CodeFailed, ""},
	}
	for _, c := range cases {
		e := worker.RPCError(c.err)
		var d workerproto.ErrorData
		e.DecodeData(&d)
		if e.Code != c.code || d.Code != c.nodeCode {
			t.Errorf("%v: code %d data %+v, want %d %q", c.err, e.Code, d, c.code, c.nodeCode)
		}
	}
}

// A tool folder's .env and bunfig.toml do not reach the worker: its environment is exactly
// what the host gives it.
func TestWorkerIgnoresFolderConfig(t *testing.T) {
	const src = `
export const definition = { name: 'env', description: 'x', inputSchema: { type: 'object' } };
export async function execute() {
  return { success: true, result: { env: process.env, preloaded: globalThis.preloaded ?? false } };
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		os.WriteFile(filepath.Join(p.dir, ".env"), []byte("SECRET_KEY=leaked\n"), 0o644)
		os.WriteFile(filepath.Join(p.dir, "preload.mjs"), []byte("globalThis.preloaded = true;\n"), 0o644)
		os.WriteFile(filepath.Join(p.dir, "bunfig.toml"), []byte("preload = [\"./preload.mjs\"]\n"), 0o644)
		r := mustExecute(t, p, worker.Call{}, &fakeHost{})
		if string(r.Result) != `{"env":{},"preloaded":false}` {
			t.Fatalf("worker saw %s", r.Result)
		}
	})
}

// Messages of megabytes cross in both directions (many read chunks, one line each).
func TestLargeMessages(t *testing.T) {
	const src = `
export const definition = { name: 'big', description: 'x', inputSchema: { type: 'object' } };
export async function execute(input, ctx) {
  const bytes = await ctx.fs.readFile('big.bin');
  await ctx.fs.writeFile('copy.bin', bytes);
  return { success: true, result: { inputLength: input.text.length, readLength: bytes.length, last: bytes[bytes.length - 1] } };
}
`
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i % 251)
	}
	text := strings.Repeat("ünïcødé ", 400_000)
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		var written []byte
		h := &fakeHost{answer: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			switch method {
			case "fs.readFile":
				return workerproto.FSData{Data: base64.StdEncoding.EncodeToString(big), Encoding: "base64"}, nil
			case "fs.writeFile":
				var w workerproto.FSWriteParams
				json.Unmarshal(params, &w)
				written, _ = base64.StdEncoding.DecodeString(w.Data)
			}
			return nil, nil
		}}
		in, _ := json.Marshal(map[string]string{"text": text})
		r := mustExecute(t, p, worker.Call{Input: in}, h)
		want := fmt.Sprintf(`{"inputLength":%d,"readLength":%d,"last":%d}`, len([]rune(text)), len(big), big[len(big)-1])
		if string(r.Result) != want {
			t.Fatalf("got %s, want %s", r.Result, want)
		}
		if !bytes.Equal(written, big) {
			t.Fatalf("the file written back differs (%d bytes)", len(written))
		}
	})
}
