package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// netTool tries the network on request: a raw TCP connection (net.connect), the global
// fetch, ctx.fetch, a child process (curl, or node -e), and the interfaces' list (netlink).
// Each reports {ok, value} or {ok: false, code, message}.
const netTool = `import net from 'node:net';
import os from 'node:os';
import cp from 'node:child_process';

export const definition = {
  name: 'NAME',
  description: 'tries the network',
  inputSchema: { type: 'object', properties: { op: { type: 'string' } }, required: ['op'] },
  timeout: 30000,
  PERMISSIONS
};

function failed(e) {
  const cause = e && e.cause;
  return { ok: false, code: (cause && cause.code) ?? e.code ?? null, message: String(e.message) + (cause ? ' | cause: ' + String(cause.message ?? cause) : '') };
}

export async function execute(input, ctx) {
  const done = (r) => ({ success: true, result: r });
  switch (input.op) {
    case 'connect':
      return done(await new Promise((resolve) => {
        const s = net.connect(input.path ? { path: input.path } : { host: input.host, port: input.port });
        let data = '';
        s.setTimeout(5000, () => { s.destroy(); resolve({ ok: false, code: 'TIMEOUT', message: 'no answer' }); });
        s.on('connect', () => s.write('GET / HTTP/1.0\r\nHost: x\r\n\r\n'));
        s.on('data', (d) => { data += d; });
        s.on('end', () => resolve({ ok: true, value: data }));
        s.on('error', (e) => resolve(failed(e)));
      }));
    case 'fetch':
    case 'ctxFetch':
      try {
        const f = input.op === 'fetch' ? globalThis.fetch : ctx.fetch;
        const res = await f(input.url, input.init);
        return done({ ok: true, value: { status: res.status, body: await res.text() } });
      } catch (e) { return done(failed(e)); }
    case 'interfaces':
      try { return done({ ok: true, value: Object.keys(os.networkInterfaces()) }); }
      catch (e) { return done(failed(e)); }
    case 'spawn':
      try { return done({ ok: true, value: cp.execFileSync(input.path, input.args ?? [], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 15000 }) }); }
      catch (e) { return done({ ok: false, code: e.code ?? String(e.status), message: String(e.message) + ' ' + String(e.stderr ?? '') }); }
  }
  return { success: false, error: 'unknown op ' + input.op };
}
`

func netToolSource(name, permissions string) string {
	src := strings.Replace(netTool, "'NAME'", "'"+name+"'", 1)
	if permissions != "" {
		permissions = "permissions: " + permissions + ","
	}
	return strings.Replace(src, "PERMISSIONS", permissions, 1)
}

// netFixture is a confined host with two loopback HTTP servers standing for what a tool must
// not reach unasked: a service on the machine (target) and the jean2 server's own API port
// (api). The tool "netdeny" declares no network (but may start processes); "netallow"
// declares target's address; both declarations are approved.
type netFixture struct {
	*fixture
	target, api *httptest.Server
	targetPort  int
}

const targetBody = "hello from the loopback service"

func newNetFixture(t *testing.T, mode sandbox.Mode, setup ...func(*host.Options)) *netFixture {
	t.Helper()
	if abi, err := sandbox.LandlockABI(); abi < 1 && mode == sandbox.ModeLandlock {
		t.Skipf("Landlock is not available here: %v", err)
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if len(body) > 0 {
			fmt.Fprintf(w, "%s; got %d bytes", targetBody, len(body))
			return
		}
		io.WriteString(w, targetBody)
	}))
	t.Cleanup(target.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"sessions":["secret session list"]}`)
	}))
	t.Cleanup(api.Close)
	_, portText, _ := net.SplitHostPort(target.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	f := newFixture(t)
	f.opts.Sandbox = host.SandboxOptions{Mode: mode, Launcher: os.Args[0]}
	for _, s := range setup {
		s(&f.opts)
	}
	f.addTool("netdeny", map[string]string{"package.json": pkgJSON, "tool.js": netToolSource("netdeny", `{ childProcess: true }`)})
	f.addTool("netallow", map[string]string{"package.json": pkgJSON, "tool.js": netToolSource("netallow", fmt.Sprintf(`{ childProcess: true, network: ["127.0.0.1:%d"] }`, port))})
	f.start()
	for _, name := range []string{"netdeny", "netallow"} {
		if _, err := f.h.ApprovePermissions(name); err != nil {
			t.Fatal(err)
		}
	}
	return &netFixture{fixture: f, target: target, api: api, targetPort: port}
}

// try runs one attempt of a network tool and decodes what it got.
func (nf *netFixture) try(t *testing.T, toolName string, args map[string]any) attemptResult {
	t.Helper()
	raw, _ := json.Marshal(args)
	out := nf.call(toolName, string(raw))
	if !out.Result.Success {
		t.Fatalf("%s %s: the call failed instead of reporting the attempt: %s", toolName, raw, out.Result.Error)
	}
	var r attemptResult
	if err := json.Unmarshal(out.Result.Result, &r); err != nil {
		t.Fatalf("decode %s: %v", out.Result.Result, err)
	}
	return r
}

func hostPort(t *testing.T, s *httptest.Server) (string, int) {
	t.Helper()
	h, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	port, _ := strconv.Atoi(p)
	return h, port
}

// noNetwork asserts that an attempt got nothing of the servers.
func noNetwork(t *testing.T, what string, r attemptResult) {
	t.Helper()
	if r.OK {
		t.Fatalf("%s: reached the network and got %s", what, r.Value)
	}
	for _, leak := range []string{targetBody, "secret session list"} {
		if strings.Contains(r.Message, leak) {
			t.Fatalf("%s: failed but leaked %q: %s", what, leak, r.Message)
		}
	}
	code := ""
	if r.Code != nil {
		code = *r.Code
	}
	t.Logf("%s: refused: %s %s", what, code, r.Message)
}

// TestNetworkRawConnect: a tool opens TCP connections of its own to a service on the
// machine and to the server's API port. Without network isolation both answer.
func TestNetworkRawConnect(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeLandlock)
	for _, s := range []*httptest.Server{nf.target, nf.api} {
		h, p := hostPort(t, s)
		for _, name := range []string{"netdeny", "netallow"} {
			r := nf.try(t, name, map[string]any{"op": "connect", "host": h, "port": p})
			noNetwork(t, fmt.Sprintf("%s net.connect %s:%d", name, h, p), r)
		}
	}
}

// TestNetworkFetchUndeclared: the global fetch and ctx.fetch of a tool that declares no
// network are refused, with words that say how to declare it.
func TestNetworkFetchUndeclared(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeLandlock)
	for _, op := range []string{"fetch", "ctxFetch"} {
		for _, s := range []*httptest.Server{nf.target, nf.api} {
			r := nf.try(t, "netdeny", map[string]any{"op": op, "url": s.URL + "/"})
			noNetwork(t, "netdeny "+op+" "+s.URL, r)
			if !strings.Contains(r.Message, "does not declare") || !strings.Contains(r.Message, "jean2 tools approve netdeny") {
				t.Fatalf("%s %s: the refusal does not say how to declare it: %s", op, s.URL, r.Message)
			}
		}
	}
}

// TestNetworkFetchDeclared: a declared, approved address is reached through the host's
// proxy by fetch and ctx.fetch (a body goes out and comes back); the server's API port,
// which it does not declare, is not; nor does "localhost" stand for a declared 127.0.0.1.
func TestNetworkFetchDeclared(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeLandlock)
	for _, op := range []string{"fetch", "ctxFetch"} {
		r := nf.try(t, "netallow", map[string]any{"op": op, "url": nf.target.URL + "/"})
		if !r.OK || !strings.Contains(string(r.Value), targetBody) {
			t.Fatalf("netallow %s of its declared address: %+v", op, r)
		}
		r = nf.try(t, "netallow", map[string]any{"op": op, "url": nf.target.URL + "/", "init": map[string]any{"method": "POST", "body": strings.Repeat("x", 100000)}})
		if !r.OK || !strings.Contains(string(r.Value), "got 100000 bytes") {
			t.Fatalf("netallow %s POST to its declared address: %+v", op, r)
		}
		r = nf.try(t, "netallow", map[string]any{"op": op, "url": nf.api.URL + "/"})
		noNetwork(t, "netallow "+op+" of the API port", r)
		r = nf.try(t, "netallow", map[string]any{"op": op, "url": fmt.Sprintf("http://localhost:%d/", nf.targetPort)})
		noNetwork(t, "netallow "+op+" of localhost", r)
	}
	// A tool that declares localhost:port reaches it by that name (the proxy resolves
	// localhost itself, to 127.0.0.1 and ::1), and not the API port.
	nf.addTool("netlocal", map[string]string{"package.json": pkgJSON, "tool.js": netToolSource("netlocal", fmt.Sprintf(`{ network: ["localhost:%d"] }`, nf.targetPort))})
	if err := nf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := nf.h.ApprovePermissions("netlocal"); err != nil {
		t.Fatal(err)
	}
	if r := nf.try(t, "netlocal", map[string]any{"op": "fetch", "url": fmt.Sprintf("http://localhost:%d/", nf.targetPort)}); !r.OK || !strings.Contains(string(r.Value), targetBody) {
		t.Fatalf("fetch of a declared localhost: %+v", r)
	}
	_, apiPort := hostPort(t, nf.api)
	noNetwork(t, "netlocal fetch of the API port", nf.try(t, "netlocal", map[string]any{"op": "fetch", "url": fmt.Sprintf("http://localhost:%d/", apiPort)}))
}

// TestNetworkChildProcess: programs a tool starts have no network either: curl (through the
// proxy, which refuses what is not declared, and around it) and node -e with net.connect.
func TestNetworkChildProcess(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	nf := newNetFixture(t, sandbox.ModeLandlock)
	for _, s := range []*httptest.Server{nf.target, nf.api} {
		for _, args := range [][]string{{"-sS", "--max-time", "5", s.URL + "/"}, {"-sS", "--max-time", "5", "--noproxy", "*", s.URL + "/"}} {
			r := nf.try(t, "netdeny", map[string]any{"op": "spawn", "path": curl, "args": args})
			if r.OK && strings.Contains(string(r.Value), "refused: tool netdeny does not declare it") {
				// Plain http through the proxy: curl prints the proxy's 403 and exits 0.
				r = attemptResult{Message: string(r.Value)}
			}
			noNetwork(t, "curl "+strings.Join(args, " "), r)
		}
		r := nf.try(t, "netdeny", map[string]any{"op": "spawn", "path": nodeBinary(t), "args": []string{"-e", nodeConnectScript(t, s)}})
		noNetwork(t, "node -e net.connect", r)
	}
	// The declared address is reached through the proxy by curl too.
	r := nf.try(t, "netallow", map[string]any{"op": "spawn", "path": curl, "args": []string{"-sS", "--max-time", "5", nf.target.URL + "/"}})
	if !r.OK || !strings.Contains(string(r.Value), targetBody) {
		t.Fatalf("curl of a declared address: %+v", r)
	}
}

// nodeConnectScript is a node -e program that prints what s answers on a raw connection.
func nodeConnectScript(t *testing.T, s *httptest.Server) string {
	h, p := hostPort(t, s)
	return fmt.Sprintf(`const c = require('net').connect(%d, %q);
c.on('connect', () => c.write('GET / HTTP/1.0' + String.fromCharCode(13, 10, 13, 10)));
c.on('data', (d) => process.stdout.write(d));
c.on('error', (e) => { console.error(e.code); process.exit(3); });`, p, h)
}

// TestNetworkProbesWork runs the attacks with the sandbox off, where they must reach the
// servers: the probes above are sound, and what they show is the sandbox's doing.
func TestNetworkProbesWork(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeOff)
	h, p := hostPort(t, nf.api)
	attempts := []map[string]any{
		{"op": "connect", "host": h, "port": p},
		{"op": "fetch", "url": nf.api.URL + "/"},
		{"op": "ctxFetch", "url": nf.api.URL + "/"},
		{"op": "spawn", "path": nodeBinary(t), "args": []string{"-e", nodeConnectScript(t, nf.api)}},
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		attempts = append(attempts, map[string]any{"op": "spawn", "path": curl, "args": []string{"-sS", "--max-time", "5", nf.api.URL + "/"}})
	}
	for _, a := range attempts {
		r := nf.try(t, "netdeny", a)
		if !r.OK || !strings.Contains(string(r.Value), "secret session list") {
			t.Fatalf("unconfined %v did not reach the API port: %+v", a, r)
		}
	}
}

func nodeBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	return p
}

// TestNetworkDeclaredInPackageJSON: "jean2": {"permissions": {"network": [...]}} in
// package.json is part of the declaration a person approves: before approval the tool does
// not run, after it the declared address is reached, and a changed list asks again.
func TestNetworkDeclaredInPackageJSON(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeLandlock)
	pkg := func(port int) string {
		return fmt.Sprintf(`{"name":"t","version":"1.0.0","private":true,"type":"module","jean2":{"permissions":{"network":["127.0.0.1:%d"]}}}`, port)
	}
	dir := nf.addTool("netpkg", map[string]string{"package.json": pkg(nf.targetPort), "tool.js": netToolSource("netpkg", "")})
	nf.h.Reload(context.Background())
	st, ok := nf.h.Permissions("netpkg")
	if !ok || !st.NeedsApproval() || st.Declared == nil || len(st.Declared.Network) != 1 {
		t.Fatalf("permission state of a package.json declaration: %+v %v", st, ok)
	}
	if out := nf.call("netpkg", `{"op":"fetch","url":"`+nf.target.URL+`/"}`); out.Result.Success || !strings.Contains(out.Result.Error, "jean2 tools approve netpkg") {
		t.Fatalf("an unapproved network declaration ran: %+v", out.Result)
	}
	if _, err := nf.h.ApprovePermissions("netpkg"); err != nil {
		t.Fatal(err)
	}
	if r := nf.try(t, "netpkg", map[string]any{"op": "fetch", "url": nf.target.URL + "/"}); !r.OK || !strings.Contains(string(r.Value), targetBody) {
		t.Fatalf("fetch of the address package.json declares: %+v", r)
	}
	// The API port added to the list: a new declaration, not approved.
	_, apiPort := hostPort(t, nf.api)
	write(t, filepath.Join(dir, "package.json"), strings.Replace(pkg(nf.targetPort), `"]`, fmt.Sprintf(`", "127.0.0.1:%d"]`, apiPort), 1))
	nf.h.Reload(context.Background())
	if out := nf.call("netpkg", `{"op":"fetch","url":"`+nf.api.URL+`/"}`); out.Result.Success || !strings.Contains(out.Result.Error, "jean2 tools approve netpkg") {
		t.Fatalf("a widened network declaration ran without approval: %+v", out.Result)
	}
	// A bad entry fails the load with words (the approved version keeps serving).
	write(t, filepath.Join(dir, "package.json"), strings.Replace(pkg(nf.targetPort), `127.0.0.1:`, `https://127.0.0.1:`, 1))
	nf.h.Reload(context.Background())
	if e := nf.entry("netpkg"); !strings.Contains(e.Error, `"jean2"."permissions"."network" of package.json): network entry "https://127.0.0.1`) || !strings.Contains(e.Error, "is a URL") {
		t.Fatalf("a URL as a network entry: %s %s", e.Status, e.Error)
	}
}

// TestNetworkBunWorker: a Bun worker is in a namespace of its own as well; Bun's fetch
// follows HTTP(S)_PROXY, so a declared address is reached through the proxy and an
// undeclared one is refused, and a raw connection reaches nothing.
func TestNetworkBunWorker(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeLandlock, func(o *host.Options) {
		o.BunPath = bunPath(t)
		o.RuntimePreference = "bun"
	})
	if e := nf.entry("netallow"); e.Runtime != "bun" {
		t.Fatalf("runtime %s", e.Runtime)
	}
	r := nf.try(t, "netallow", map[string]any{"op": "fetch", "url": nf.target.URL + "/"})
	if !r.OK || !strings.Contains(string(r.Value), targetBody) {
		t.Fatalf("Bun fetch of a declared address: %+v", r)
	}
	noNetwork(t, "Bun fetch of the API port", nf.try(t, "netdeny", map[string]any{"op": "fetch", "url": nf.api.URL + "/"}))
	h, p := hostPort(t, nf.api)
	noNetwork(t, "Bun net.connect to the API port", nf.try(t, "netdeny", map[string]any{"op": "connect", "host": h, "port": p}))
}

// TestNetworkUnixSockets: a pathname UNIX socket is not part of any network namespace; a
// worker that can resolve its path connects to it unless something else stops it (docker's
// socket, an ssh agent, another program's control socket). The socket here lies outside
// the tool's rules (beside the workspace).
func TestNetworkUnixSockets(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeLandlock)
	dir, err := os.MkdirTemp("", "jean2-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 512)
			_, _ = c.Read(buf)
			io.WriteString(c, "HTTP/1.0 200 OK\r\n\r\n"+targetBody)
			c.Close()
		}
	}()
	for _, name := range []string{"netdeny", "netallow"} {
		noNetwork(t, name+" connect to "+path, nf.try(t, name, map[string]any{"op": "connect", "path": path}))
	}
}

const fetchTool = `export const definition = {
  name: 'fetcher', description: 'fetches', timeout: 30000,
  inputSchema: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
  PERMISSIONS
};
export async function execute(input, ctx) {
  const res = await ctx.fetch(input.url);
  return { success: true, result: (await res.text()).length };
}
`

// BenchmarkNetworkFetch is one call that does a ctx.fetch of a loopback server: direct with
// the sandbox off, through the egress proxy (CONNECT tunnel, kept alive by the fetch's
// connection pool) under Landlock with the address declared and approved.
//
//	go test ./host -run XXX -bench NetworkFetch -benchtime 2000x
func BenchmarkNetworkFetch(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 1024))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeLandlock} {
		b.Run(string(mode), func(b *testing.B) {
			if abi, err := sandbox.LandlockABI(); mode == sandbox.ModeLandlock && abi < 1 {
				b.Skipf("no Landlock: %v", err)
			}
			h, ws := benchFixture(b, func(o *host.Options) {
				o.Sandbox = host.SandboxOptions{Mode: mode, Launcher: os.Args[0]}
				dir := filepath.Join(o.Layout.Tools, "fetcher")
				_ = os.MkdirAll(dir, 0o755)
				src := strings.Replace(fetchTool, "PERMISSIONS", `permissions: { network: ["127.0.0.1:`+port+`"] }`, 1)
				_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644)
			})
			if _, err := h.ApprovePermissions("fetcher"); err != nil {
				b.Fatal(err)
			}
			call := host.Call{Tool: "fetcher", Args: json.RawMessage(`{"url":"` + srv.URL + `/"}`), SessionID: "bench", Workspace: host.Workspace{Path: ws}}
			for range 50 {
				if out := h.Invoke(context.Background(), call); !out.Result.Success || string(out.Result.Result) != "1024" {
					b.Fatalf("%+v", out.Result)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if out := h.Invoke(context.Background(), call); !out.Result.Success {
					b.Fatal(out.Result.Error)
				}
			}
		})
	}
}

// TestNetworkLandlockFallback: where no network namespace can be had (here: turned off),
// Landlock's TCP rules hold a worker to its proxy's port: raw connections to the machine's
// services are refused, the declared address is reached through the proxy and the
// undeclared one refused with words, and UNIX sockets stay closed.
func TestNetworkLandlockFallback(t *testing.T) {
	if !sandbox.LandlockNetwork() {
		t.Skip("Landlock has no network rules here (ABI < 4)")
	}
	nf := newNetFixture(t, sandbox.ModeLandlock, func(o *host.Options) { o.Sandbox.NoNetNS = true })
	if st := nf.h.Sandbox(); st.NetNS || !st.NetLandlock || !strings.Contains(st.Summary(), "Landlock TCP rules") {
		t.Fatalf("status %+v: %s", st, st.Summary())
	}
	for _, s := range []*httptest.Server{nf.target, nf.api} {
		h, p := hostPort(t, s)
		noNetwork(t, "net.connect under the fallback", nf.try(t, "netdeny", map[string]any{"op": "connect", "host": h, "port": p}))
		r := nf.try(t, "netdeny", map[string]any{"op": "fetch", "url": s.URL + "/"})
		noNetwork(t, "fetch under the fallback", r)
		if !strings.Contains(r.Message, "does not declare") {
			t.Fatalf("the refusal does not say why: %s", r.Message)
		}
		r = nf.try(t, "netdeny", map[string]any{"op": "spawn", "path": nodeBinary(t), "args": []string{"-e", nodeConnectScript(t, s)}})
		noNetwork(t, "node -e net.connect under the fallback", r)
	}
	if r := nf.try(t, "netallow", map[string]any{"op": "ctxFetch", "url": nf.target.URL + "/"}); !r.OK || !strings.Contains(string(r.Value), targetBody) {
		t.Fatalf("ctx.fetch of a declared address under the fallback: %+v", r)
	}
}

// TestNetworkRequireMode: JEAN2_SANDBOX=require runs tools only where workers can be
// isolated from the network; here the namespace exists, and then it is turned off.
func TestNetworkRequireMode(t *testing.T) {
	nf := newNetFixture(t, sandbox.ModeRequire)
	if r := nf.try(t, "netallow", map[string]any{"op": "fetch", "url": nf.target.URL + "/"}); !r.OK {
		t.Fatalf("require mode with a namespace: %+v", r)
	}
	h, p := hostPort(t, nf.api)
	noNetwork(t, "require mode net.connect", nf.try(t, "netdeny", map[string]any{"op": "connect", "host": h, "port": p}))

	f := newFixture(t)
	f.opts.Sandbox = host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0], NoNetNS: true}
	f.addTool("netdeny", map[string]string{"package.json": pkgJSON, "tool.js": netToolSource("netdeny", "")})
	f.start()
	out := f.call("netdeny", `{"op":"connect","host":"127.0.0.1","port":1}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "the sandbox mode is require but workers cannot be isolated from the network") {
		t.Fatalf("require mode without a namespace ran the tool: %+v", out.Result)
	}
}

// TestNetworkNamespaceEscape: a worker (and a root one: the launcher drops its
// capabilities) cannot leave its namespace: not into the host's through /proc (Landlock),
// not by making a link into it (no CAP_NET_ADMIN). Its namespace has nothing but lo.
func TestNetworkNamespaceEscape(t *testing.T) {
	ip, err1 := exec.LookPath("ip")
	nsenter, err2 := exec.LookPath("nsenter")
	if err1 != nil || err2 != nil {
		t.Skip("no ip or nsenter")
	}
	nf := newNetFixture(t, sandbox.ModeLandlock)
	for _, args := range [][]string{
		{nsenter, "--net=/proc/1/ns/net", "/usr/bin/curl", "-sS", "--max-time", "3", nf.api.URL + "/"},
		{nsenter, "-t", "1", "-n", "/usr/bin/curl", "-sS", "--max-time", "3", nf.api.URL + "/"},
		{ip, "link", "add", "jean2esc0", "type", "veth", "peer", "name", "jean2esc1", "netns", "1"},
		{ip, "link", "set", "lo", "netns", "1"},
	} {
		r := nf.try(t, "netdeny", map[string]any{"op": "spawn", "path": args[0], "args": args[1:]})
		noNetwork(t, strings.Join(args, " "), r)
	}
	r := nf.try(t, "netdeny", map[string]any{"op": "spawn", "path": ip, "args": []string{"-o", "link"}})
	if !r.OK {
		t.Fatalf("ip link: %+v", r)
	}
	var links string
	_ = json.Unmarshal(r.Value, &links)
	if n := strings.Count(strings.TrimSpace(links), "\n") + 1; n != 1 || !strings.Contains(links, "lo:") {
		t.Fatalf("the worker's namespace has %d links: %s", n, links)
	}
}

// TestNetworkRefusalWordsBunAsNode: an undeclared address fetched from a Bun worker fails as
// it does from a Node worker, with the proxy's words (the target, why, and how to declare
// and approve it), for http (which Bun sends to the proxy as a request) and https (a
// CONNECT tunnel, which Bun reports as "Proxy refused to open a tunnel").
func TestNetworkRefusalWordsBunAsNode(t *testing.T) {
	for _, rt := range []string{"node", "bun"} {
		t.Run(rt, func(t *testing.T) {
			nf := newNetFixture(t, sandbox.ModeLandlock, func(o *host.Options) {
				o.BunPath = bunPath(t)
				o.RuntimePreference = rt
			})
			h, p := hostPort(t, nf.api)
			target := fmt.Sprintf("network access to %s refused: tool netdeny does not declare it", net.JoinHostPort(h, strconv.Itoa(p)))
			for _, op := range []string{"fetch", "ctxFetch"} {
				for _, url := range []string{nf.api.URL + "/", fmt.Sprintf("https://%s/", net.JoinHostPort(h, strconv.Itoa(p)))} {
					r := nf.try(t, "netdeny", map[string]any{"op": op, "url": url})
					if r.OK || !strings.Contains(r.Message, target) || !strings.Contains(r.Message, "jean2 tools approve netdeny") {
						t.Errorf("%s %s: %+v\nwant a failure saying %q and how to approve it", op, url, r, target)
					}
				}
			}
		})
	}
}
