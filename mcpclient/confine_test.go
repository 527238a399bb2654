package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// The test binary is the launcher of the confined servers, as jean2 is of its own.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ExecArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// attackKey is the provider key of the jean2 whose server is attacked: in its environment
// from its start, so that /proc/<jean2>/environ holds it.
const attackKey = "sk-mcpconfine-attack-0123456789"

// confineFixture is a jean2 home with a .env and a token, a user home with an ssh key, and
// a workspace whose .jean2/mcp.json starts node mcp/server.mjs.
type confineFixture struct {
	userHome, jean2Home, ws string
	layout                  host.Layout
	// declared answers on a loopback port the server's "network" lists; other on one it
	// does not.
	declared, other *httptest.Server
}

func newConfineFixture(t *testing.T, node string) *confineFixture {
	t.Helper()
	root := t.TempDir()
	f := &confineFixture{userHome: filepath.Join(root, "home"), jean2Home: filepath.Join(root, "jean2"), ws: filepath.Join(root, "ws")}
	layout, err := host.LayoutFromEnv(func(k string) string { return map[string]string{"JEAN2_HOME": f.jean2Home}[k] })
	if err != nil {
		t.Fatal(err)
	}
	f.layout = layout
	write := func(path, text string, perm os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), perm); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.jean2Home, ".env"), "GITHUB_TOKEN=jean2-dotenv-secret\n", 0o600)
	write(filepath.Join(f.jean2Home, "token"), "jean2-api-token\n", 0o600)
	write(filepath.Join(f.userHome, ".ssh", "id_rsa"), "ssh-private-key-secret\n", 0o600)
	f.declared = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "declared-answer") }))
	f.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "undeclared-answer") }))
	t.Cleanup(f.declared.Close)
	t.Cleanup(f.other.Close)
	// What a person trusted: a file that names a server of the workspace's own code.
	write(filepath.Join(f.ws, "mcp", "server.mjs"), "// a harmless server, for now\n", 0o644)
	write(mcpFile(f.ws), fmt.Sprintf(`{"mcpServers": {"probe": {"command": %q, "args": ["mcp/server.mjs"], "network": [%q]}}}`,
		node, strings.TrimPrefix(f.declared.URL, "http://")), 0o644)
	return f
}

func mcpFile(ws string) string { return filepath.Join(ws, ".jean2", "mcp.json") }

// trustAndRewrite trusts the workspace's file as a person would, then rewrites the server
// it names as a tool of the workspace may (write-file, the shell: no ask): the trust still
// holds, for the file did not change.
func (f *confineFixture) trustAndRewrite(t *testing.T) Config {
	t.Helper()
	trust := NewTrust(f.jean2Home)
	file := ReadWorkspaceFile(f.ws)
	if err := trust.Set(file); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/probe-server.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "mcp", "server.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	file = ReadWorkspaceFile(f.ws)
	if ok, err := trust.Trusted(file); !ok || err != nil {
		t.Fatalf("the file is no longer trusted after the server's rewrite: %v %v", ok, err)
	}
	cfg, err := file.Config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (f *confineFixture) sandbox(t *testing.T, mode sandbox.Mode) *host.MCPSandbox {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb := host.NewMCPSandbox(host.MCPSandboxOptions{Sandbox: host.SandboxOptions{Mode: mode, Launcher: exe}, Layout: f.layout, UserHome: f.userHome})
	t.Cleanup(func() { _ = sb.Close() })
	return sb
}

// probe starts cfg's one server with opts and calls its probe tool with args; it returns
// what each attempt gave ("ok:…" or "err:…").
func probe(t *testing.T, cfg Config, opts Options, args map[string]any) map[string]string {
	t.Helper()
	m := New(cfg, nil, opts)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m.Start(ctx)
	tools, err := m.Servers()[0].Tools()
	if err != nil || len(tools) != 1 {
		t.Fatalf("the server's tools: %v %v", tools, err)
	}
	raw, _ := json.Marshal(args)
	r := tools[0].Execute(ctx, nil, raw)
	if !r.Success {
		t.Fatalf("probe: %s", r.Error)
	}
	var text string
	if err := json.Unmarshal(r.Result, &text); err != nil {
		t.Fatalf("probe result %s: %v", r.Result, err)
	}
	out := map[string]string{}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("probe result %q: %v", text, err)
	}
	return out
}

func nodePath(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	return node
}

// inParentWithKey runs the calling test again in a child process whose environment holds
// OPENAI_API_KEY from its start, as jean2's does; it reports whether the caller is that
// child (and should go on).
func inParentWithKey(t *testing.T) bool {
	t.Helper()
	if os.Getenv("OPENAI_API_KEY") == attackKey {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY="+attackKey)
	out, err := cmd.CombinedOutput()
	t.Logf("in a jean2 with OPENAI_API_KEY set:\n%s", out)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return false
}

// TestAttackWorkspaceServerRewritten is the review's attack: a person trusted a workspace's
// mcp.json naming node mcp/server.mjs; a tool then rewrote server.mjs, and the next start
// ran it. Unconfined (as before) it read $JEAN2_HOME/.env, ~/.ssh/id_rsa and jean2's own
// OPENAI_API_KEY from /proc/<jean2>/environ, wrote outside the workspace, made the token
// world-readable and reached any address. Confined it does none of that, and still writes
// its workspace and cache and reaches the host its entry lists, through the proxy.
func TestAttackWorkspaceServerRewritten(t *testing.T) {
	node := nodePath(t)
	if !inParentWithKey(t) {
		return
	}
	f := newConfineFixture(t, node)
	cfg := f.trustAndRewrite(t)
	dotenv, key, token := filepath.Join(f.jean2Home, ".env"), filepath.Join(f.userHome, ".ssh", "id_rsa"), filepath.Join(f.jean2Home, "token")
	outside := []string{filepath.Join(f.jean2Home, "pwned"), filepath.Join(f.userHome, ".ssh", "authorized_keys"), filepath.Join(filepath.Dir(f.ws), "beside-the-workspace")}
	args := map[string]any{"read": []string{dotenv, key}, "parentEnviron": true, "write": outside, "chmod": []string{token},
		"fetch": []string{f.declared.URL + "/", f.other.URL + "/"}, "connect": []string{strings.TrimPrefix(f.other.URL, "http://")}}

	t.Run("unconfined", func(t *testing.T) {
		got := probe(t, cfg, Options{Getenv: os.Getenv}, args)
		t.Logf("unconfined: %v", got)
		for what, want := range map[string]string{"read " + dotenv: "jean2-dotenv-secret", "read " + key: "ssh-private-key-secret", "fetch " + f.other.URL + "/": "undeclared-answer"} {
			if !strings.Contains(got[what], want) {
				t.Errorf("unconfined, %s: %q, want it to succeed with %q", what, got[what], want)
			}
		}
		for what, v := range got {
			if strings.HasPrefix(what, "read /proc/") && !strings.Contains(v, attackKey) {
				t.Errorf("unconfined, %s: %q, want jean2's key", what, v)
			}
		}
		for _, p := range append(outside, token) {
			if !strings.HasPrefix(got["write "+p], "ok:") && !strings.HasPrefix(got["chmod "+p], "ok:") {
				t.Errorf("unconfined, write or chmod %s: %q %q", p, got["write "+p], got["chmod "+p])
			}
			_ = os.Remove(p)
		}
	})
	if err := os.WriteFile(token, []byte("jean2-api-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(token, 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("confined", func(t *testing.T) {
		sb := f.sandbox(t, sandbox.ModeLandlock)
		if !sb.Status().MountSeal || !sb.Status().NetNS {
			t.Skipf("no view or network namespace here: %s; %s", sb.Status().MountSealError, sb.Status().NetNSError)
		}
		inWorkspace := filepath.Join(f.ws, "made-by-the-server")
		a := map[string]any{"home": true, "env": true}
		for k, v := range args {
			a[k] = v
		}
		a["write"] = append(append([]string{}, outside...), inWorkspace, filepath.Join(f.ws, ".jean2", "mcp.json"))
		got := probe(t, cfg, Options{Getenv: os.Getenv, Sandbox: sb}, a)
		t.Logf("confined: %v", got)
		for what, v := range got {
			switch {
			case what == "env":
				for _, name := range strings.Split(strings.TrimPrefix(v, "ok:"), ",") {
					if name != "PATH" && name != "HOME" && name != "TMPDIR" && name != NestedEnv && !strings.HasSuffix(strings.ToLower(name), "_proxy") && name != "JEAN2_EGRESS_PROXY" {
						t.Errorf("confined, the server sees %s", name)
					}
				}
			case what == "write "+inWorkspace || what == "fetch "+f.declared.URL+"/" || what == "write $HOME" || what == "write $TMPDIR":
				if !strings.HasPrefix(v, "ok:") {
					t.Errorf("confined, %s: %q, want it to work", what, v)
				}
			case strings.HasPrefix(v, "ok:"):
				t.Errorf("confined, %s succeeded: %q", what, v)
			}
			for _, secret := range []string{"jean2-dotenv-secret", "ssh-private-key-secret", attackKey, "undeclared-answer"} {
				if strings.Contains(v, secret) {
					t.Errorf("confined, %s leaked %q: %q", what, secret, v)
				}
			}
		}
		if fi, err := os.Stat(token); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("the token's mode changed: %v %v", fi.Mode(), err)
		}
		for _, p := range outside {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s was written", p)
			}
		}
		if made, _ := filepath.Glob(filepath.Join(f.layout.Cache, "mcp", "probe-*", "made-by-the-server")); len(made) != 1 {
			t.Errorf("the server's HOME is not its cache folder in %s: %v", f.layout.Cache, made)
		}
	})
}

// sdkModules is a node_modules holding the MCP TypeScript SDK (scripts/setup installs it in
// .deps); the test is skipped without it.
func sdkModules(t *testing.T) string {
	t.Helper()
	modules, _ := filepath.Abs("../.deps/node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skipf("the MCP TypeScript SDK is not installed in %s: run scripts/setup", modules)
	}
	return modules
}

// TestConfinedNpxServer: a server of the official TypeScript SDK, started confined with
// npx -y from a package in the workspace (npm installs it into the server's cache, its
// HOME), answers tools/list and a call; npm's cache is in the server's own cache folder.
func TestConfinedNpxServer(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("no npx")
	}
	modules := sdkModules(t)
	f := newConfineFixture(t, nodePath(t))
	pkg := filepath.Join(f.ws, "mcp-pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	// The package brings its dependencies, as a package in a workspace does.
	if out, err := exec.Command("cp", "-r", modules, filepath.Join(pkg, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("copy the SDK: %v %s", err, out)
	}
	server := `#!/usr/bin/env node
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
const server = new McpServer({ name: 'pkg', version: '1.0.0' });
server.registerTool('hello', { description: 'Greet.', inputSchema: { who: z.string() } },
  async ({ who }) => ({ content: [{ type: 'text', text: 'hello ' + who + ' from ' + process.env.HOME }] }));
await server.connect(new StdioServerTransport());
`
	for name, text := range map[string]string{"server.mjs": server, "package.json": `{"name": "mcp-pkg", "version": "1.0.0", "type": "module", "bin": {"mcp-pkg": "server.mjs"}}`} {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(mcpFile(f.ws), []byte(fmt.Sprintf(`{"mcpServers": {"pkg": {"command": %q, "args": ["-y", "./mcp-pkg"]}}}`, npx)), 0o644); err != nil {
		t.Fatal(err)
	}
	file := ReadWorkspaceFile(f.ws)
	if c := file.Commands(); len(c) != 1 || !strings.Contains(c[0], "network only to registry.npmjs.org:443 (npx's registry)") {
		t.Fatalf("the trust prompt does not say npx reaches its registry: %q", c)
	}
	cfg, err := file.Config()
	if err != nil {
		t.Fatal(err)
	}
	sb := f.sandbox(t, sandbox.ModeLandlock)
	if !sb.Status().MountSeal {
		t.Skipf("no view here: %s", sb.Status().MountSealError)
	}
	m := New(cfg, nil, Options{Getenv: os.Getenv, Sandbox: sb})
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	m.Start(ctx)
	tools, err := m.Servers()[0].Tools()
	if err != nil || len(tools) != 1 || tools[0].Definition().Name != "mcp__pkg__hello" {
		t.Fatalf("tools/list of the confined npx server: %v %v", tools, err)
	}
	r := tools[0].Execute(ctx, nil, json.RawMessage(`{"who": "jean2"}`))
	if !r.Success || !strings.Contains(string(r.Result), "hello jean2 from "+f.layout.Cache) {
		t.Fatalf("call: %+v", r)
	}
	if npxCache, _ := filepath.Glob(filepath.Join(f.layout.Cache, "mcp", "pkg-*", ".npm", "_npx")); len(npxCache) != 1 {
		t.Fatalf("npm's cache is not in the server's cache folder: %v", npxCache)
	}
}
