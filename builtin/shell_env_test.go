package builtin_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
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

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// shLong runs a command with room for a cold build (the first `go test` compiles the
// standard library into an empty cache: a minute or more on a loaded machine).
func (f *shellFixture) shLong(command string, mods ...func(*host.Call)) (host.Outcome, shellOut) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 11*time.Minute)
	defer cancel()
	return f.run(ctx, map[string]any{"command": command, "timeout": 600_000}, mods...)
}

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goModule is a Go module with passing tests, one of them using a module that only the
// person's module cache holds (goPersonModCache).
var goModule = map[string]string{
	"go.mod":        "module example.com/m\n\ngo 1.22\n\nrequire example.com/dep v1.0.0\n",
	"add.go":        "package m\n\nimport \"example.com/dep\"\n\nfunc Add(a, b int) int { return a + b + dep.Zero() }\n",
	"add_test.go":   "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n",
	"sub/sub.go":    "package sub\n\nfunc One() int { return 1 }\n",
	"sub/s_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal(\"One\")\n\t}\n}\n",
}

// goPersonModCache makes a module cache as the person's go would have it, holding
// example.com/dep v1.0.0 in its download cache (what a file:// proxy serves).
func goPersonModCache(t testing.TB) string {
	t.Helper()
	modcache := filepath.Join(t.TempDir(), "mod")
	at := filepath.Join(modcache, "cache", "download", "example.com", "dep", "@v")
	gomod := "module example.com/dep\n\ngo 1.22\n"
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	for name, content := range map[string]string{"go.mod": gomod, "dep.go": "package dep\n\nfunc Zero() int { return 0 }\n"} {
		w, err := zw.Create("example.com/dep@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, at, map[string]string{
		"list": "v1.0.0\n", "v1.0.0.mod": gomod, "v1.0.0.zip": zipped.String(),
		"v1.0.0.info": `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`,
	})
	return modcache
}

// The person's Go (found on the server's PATH, not on a fixed one) runs the workspace's
// tests, confined, with a build cache that lives on in jean2's home: a second session's
// run finds it warm. A module the person downloaded already comes from their module
// cache (read-only, through a file:// proxy), not the network: their GOPROXY is off here.
func TestShellGoTestWithThePersonsToolchain(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	modcache := goPersonModCache(t)
	f := newShellFixture(t, func(o *builtin.ShellOptions) {
		o.Environ = append(os.Environ(), "GOMODCACHE="+modcache, "GOPROXY=off", "GOFLAGS=-mod=mod")
		o.PassEnv = []string{"GOFLAGS"}
		o.Env = map[string]string{"GOSUMDB": "off"}
	})
	writeFiles(t, f.ws, goModule)
	start := time.Now()
	out, res := f.shLong("go test ./...")
	first := time.Since(start)
	if !out.Result.Success || !strings.Contains(res.Stdout, "ok  \texample.com/m") || !strings.Contains(res.Stdout, "ok  \texample.com/m/sub") {
		t.Fatalf("go test: %s %+v", out.Result.Error, res)
	}
	start = time.Now()
	out, res = f.shLong("go test -count=1 ./...", func(c *host.Call) { c.SessionID = "s2" })
	second := time.Since(start)
	if !out.Result.Success {
		t.Fatalf("second go test: %s %+v", out.Result.Error, res)
	}
	t.Logf("go test through the shell: first %v, second (another session, -count=1) %v", first, second)
	_, res = f.sh("go env GOCACHE GOMODCACHE", func(c *host.Call) { c.SessionID = "s3" })
	for _, dir := range strings.Fields(res.Stdout) {
		if !strings.HasPrefix(dir, filepath.Join(f.layout.Cache, "shell")+"/") {
			t.Fatalf("go's caches are not jean2's per-workspace caches: %q", res.Stdout)
		}
	}
}

// git commits under the person's identity, read from their global configuration, and
// sees none of the rest of it (a credential helper).
func TestShellGitUsesThePersonsIdentity(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	person := t.TempDir()
	writeFiles(t, person, map[string]string{".gitconfig": "[user]\n\tname = Ada Person\n\temail = ada@example.com\n[credential]\n\thelper = store\n"})
	f := newShellFixture(t, func(o *builtin.ShellOptions) {
		o.Environ = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + person}
	})
	commit := `git init -q . && echo x >> f && git add f && git commit -q -m next && git log -1 --format='%an <%ae>' && git config --get credential.helper; echo "helper:$?"`
	out, res := f.sh(commit)
	if !out.Result.Success || res.Stdout != "Ada Person <ada@example.com>\nhelper:1\n" {
		t.Fatalf("git commit: %s %+v", out.Result.Error, res)
	}

	// Settings name someone else.
	f = newShellFixture(t, func(o *builtin.ShellOptions) {
		o.Environ = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + person}
		o.GitName, o.GitEmail = `Bob "the" Builder`, "bob@example.com"
	})
	out, res = f.sh(commit)
	if !out.Result.Success || res.Stdout != "Bob \"the\" Builder <bob@example.com>\nhelper:1\n" {
		t.Fatalf("git commit with the configured identity: %s %+v", out.Result.Error, res)
	}
}

// A workspace's caches live on across sessions in jean2's home, one set per workspace;
// a command writes in them but cannot swap one for a link or write beside them.
func TestShellCachesPerWorkspace(t *testing.T) {
	f := newShellFixture(t, nil)
	out, res := f.sh(`printf '%s\n' "$GOCACHE" "$GOMODCACHE" "$npm_config_cache" "$PIP_CACHE_DIR" "$CARGO_HOME" "$XDG_CACHE_HOME" && echo kept > "$GOCACHE/mark"`)
	dirs := strings.Fields(res.Stdout)
	if !out.Result.Success || len(dirs) != 6 {
		t.Fatalf("cache variables: %s %+v", out.Result.Error, res)
	}
	for _, d := range dirs {
		if filepath.Dir(d) != filepath.Dir(dirs[0]) || filepath.Dir(filepath.Dir(d)) != filepath.Join(f.layout.Cache, "shell") {
			t.Fatalf("cache %s is not in the workspace's folder of %s", d, filepath.Join(f.layout.Cache, "shell"))
		}
	}
	_, res = f.sh(`cat "$GOCACHE/mark"`, func(c *host.Call) { c.SessionID = "s2" })
	if res.Stdout != "kept\n" {
		t.Fatalf("another session's cache: %+v", res)
	}
	other := filepath.Join(f.root, "other")
	_ = os.MkdirAll(other, 0o755)
	_, res = f.sh(`echo "$GOCACHE"; cat "$GOCACHE/mark"`, func(c *host.Call) { c.Workspace = host.Workspace{ID: "w2", Path: other} })
	if strings.Contains(res.Stdout, "kept") || strings.TrimSpace(res.Stdout) == dirs[0] {
		t.Fatalf("another workspace shares the cache: %+v", res)
	}
	// The folder holding the caches is jean2's: no rename, no link, no file beside them.
	ws := filepath.Dir(dirs[0])
	_, res = f.sh(fmt.Sprintf(`mv %[1]s/go-build %[1]s/moved; ln -s / %[1]s/link; echo x > %[1]s/beside; echo x > %[2]s/beside`, ws, filepath.Dir(ws)))
	entries, _ := os.ReadDir(ws)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "cache cargo go-build go-mod npm pip" {
		t.Fatalf("a command changed the caches' folder: %v (%+v)", names, res)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "beside")); err == nil {
		t.Fatalf("a command wrote in %s", filepath.Dir(ws))
	}
	// A cache folder swapped for a link (by anyone) is refused, not followed.
	if err := os.Rename(filepath.Join(ws, "npm"), filepath.Join(ws, "npm.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.root, filepath.Join(ws, "npm")); err != nil {
		t.Fatal(err)
	}
	out, _ = f.sh("true")
	if out.Result.Success || !strings.Contains(out.Result.Error, "is not a folder") {
		t.Fatalf("a cache folder that is a link: %+v", out.Result)
	}
	// So is the workspace's folder of caches, although every cache is still a folder
	// through the link.
	if err := os.Remove(filepath.Join(ws, "npm")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, "npm.old"), filepath.Join(ws, "npm")); err != nil {
		t.Fatal(err)
	}
	if out, _ = f.sh("true"); !out.Result.Success {
		t.Fatalf("caches restored: %+v", out.Result)
	}
	if err := os.Rename(ws, ws+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws+".old", ws); err != nil {
		t.Fatal(err)
	}
	out, _ = f.sh("true")
	if out.Result.Success || !strings.Contains(out.Result.Error, "is not a folder") {
		t.Fatalf("the caches' folder that is a link: %+v", out.Result)
	}
}

// In a Node project `npm test` runs the project's test script.
func TestShellNpmTest(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH")
	}
	f := newShellFixture(t, nil)
	writeFiles(t, f.ws, map[string]string{
		"package.json": `{"name":"p","version":"1.0.0","scripts":{"test":"node test.js"}}`,
		"test.js":      "const assert = require('node:assert');\nassert.equal(1 + 1, 2);\nconsole.log('node tests passed');\n",
	})
	out, res := f.shLong("npm test")
	if !out.Result.Success || !strings.Contains(res.Stdout, "node tests passed") || len(res.NetworkRefused) > 0 {
		t.Fatalf("npm test: %s %+v", out.Result.Error, res)
	}
}

// A provider key of the server's environment never reaches a command, even when the
// person's pass-through names it: the built-in names (OPENAI_API_KEY) and the ones
// providers.json names alike.
func TestShellNeverPassesProviderKeys(t *testing.T) {
	var layoutHome string
	f := newShellFixture(t, func(o *builtin.ShellOptions) {
		layoutHome = o.Layout.Home
		o.Environ = []string{"PATH=/usr/bin:/bin", "OPENAI_API_KEY=sk-builtin-name", "MY_LLM_KEY=sk-named-in-providers",
			"JEAN2_TOKEN=jean2-own", "LD_PRELOAD=/x.so", "FAVOURITE=blue"}
		o.PassEnv = []string{"OPENAI_API_KEY", "MY_LLM_KEY", "JEAN2_TOKEN", "LD_PRELOAD", "FAVOURITE"}
	})
	writeFiles(t, layoutHome, map[string]string{"providers.json": `{"providers":[{"name":"mine","apiKeyEnv":"MY_LLM_KEY"}]}`})
	out, res := f.sh("env")
	if !out.Result.Success || !strings.Contains(res.Stdout, "FAVOURITE=blue\n") {
		t.Fatalf("env: %s %+v", out.Result.Error, res)
	}
	for _, leaked := range []string{"sk-builtin-name", "sk-named-in-providers", "jean2-own", "/x.so"} {
		if strings.Contains(res.Stdout, leaked) {
			t.Errorf("%s reached the command:\n%s", leaked, res.Stdout)
		}
	}
}

// A person's pyenv python is the one a command runs, not the system's.
func TestShellRunsThePersonsPyenvPython(t *testing.T) {
	home, _ := os.UserHomeDir()
	if _, err := os.Stat(filepath.Join(home, ".pyenv", "shims", "python3")); err != nil {
		t.Skip("no pyenv here")
	}
	native, err := exec.Command("python3", "-c", "import sys; print(sys.prefix)").Output()
	if err != nil || !strings.Contains(string(native), ".pyenv") {
		t.Skipf("python3 on PATH is not pyenv's: %s %v", native, err)
	}
	f := newShellFixture(t, nil)
	out, res := f.sh(`python3 -c 'import sys; print(sys.prefix)'`)
	if !out.Result.Success || res.Stdout != string(native) {
		t.Fatalf("python3 in the shell: %s %+v (native %q)", out.Result.Error, res, native)
	}
}

// BenchmarkShellGoTest compares `go test ./...` of a small module through the shell
// (confined, its caches in jean2's home) with the same run outside any sandbox, each
// iteration running both one after the other so the machine's load weighs on both alike.
// first-s is the shell's first run (every cache empty); shell-s and native-s are later
// runs: "count1" re-runs the tests (-count=1, the build cache warm), "cached" is the
// second `go test ./...` as a developer types it (the test results cached too); ratio is
// shell-s / native-s. bench/shell-gotest.sh runs it.
func BenchmarkShellGoTest(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("go is not on PATH")
	}
	module := map[string]string{}
	for name, content := range goModule {
		module[name] = content
	}
	module["go.mod"] = "module example.com/m\n\ngo 1.22\n"
	module["add.go"] = "package m\n\nfunc Add(a, b int) int { return a + b }\n"
	// One fixture for every sub-benchmark (each runs more than once): one cold start.
	f := newShellFixture(b, nil)
	writeFiles(b, f.ws, module)
	native := b.TempDir()
	writeFiles(b, native, module)
	runNative := func(b *testing.B, command string) time.Duration {
		start := time.Now()
		cmd := exec.Command("go", strings.Fields(command)[1:]...)
		cmd.Dir = native
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("native %s: %v\n%s", command, err, out)
		}
		return time.Since(start)
	}
	session := 0
	runShell := func(b *testing.B, command string) time.Duration {
		session++
		start := time.Now()
		out, res := f.shLong(command, func(c *host.Call) { c.SessionID = fmt.Sprintf("s%d", session) })
		if !out.Result.Success {
			b.Fatalf("shell %s: %s %+v", command, out.Result.Error, res)
		}
		return time.Since(start)
	}
	first := runShell(b, "go test ./...")
	runNative(b, "go test ./...")
	for _, mode := range []struct{ name, command string }{{"count1", "go test -count=1 ./..."}, {"cached", "go test ./..."}} {
		b.Run(mode.name, func(b *testing.B) {
			var shell, nat time.Duration
			for i := 0; i < b.N; i++ {
				shell += runShell(b, mode.command)
				nat += runNative(b, mode.command)
			}
			b.ReportMetric(first.Seconds(), "first-s")
			b.ReportMetric(shell.Seconds()/float64(b.N), "shell-s")
			b.ReportMetric(nat.Seconds()/float64(b.N), "native-s")
			b.ReportMetric(float64(shell)/float64(nat), "ratio")
		})
	}
}

// In a Node project `npm install` reaches the registry once the person approved it: the
// connection is held at the proxy while the person is asked, and the install completes in
// one run. The registry is a local one serving one package, as npm's does.
func TestShellNpmInstallReachesTheRegistryOnceApproved(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH")
	}
	f := newShellFixture(t, nil)
	reg := tinyRegistry(t)
	writeFiles(t, f.ws, map[string]string{
		"package.json": `{"name":"p","version":"1.0.0","dependencies":{"tiny":"1.0.0"}}`,
		".npmrc":       "registry=" + reg + "/\n",
	})
	var asked []string
	out, res := f.shLong("npm install --no-audit --no-fund && node -e \"console.log(require('tiny'))\"", func(c *host.Call) {
		c.Asker = tool.AskerFunc(func(_ context.Context, a tool.Ask) (json.RawMessage, error) {
			asked = append(asked, a.Question)
			return json.RawMessage("true"), nil
		})
	})
	if !out.Result.Success || res.ExitCode != 0 || !strings.Contains(res.Stdout, "tiny from the registry") {
		t.Fatalf("npm install: %s %+v", out.Result.Error, res)
	}
	if len(asked) != 1 || len(res.NetworkRefused) != 0 {
		t.Fatalf("asked %d times (%q), refused %v", len(asked), asked, res.NetworkRefused)
	}
	// Refused, the install fails and nothing is installed.
	os.RemoveAll(filepath.Join(f.ws, "node_modules"))
	out, res = f.shLong("npm install --no-audit --no-fund --prefer-online", func(c *host.Call) {
		c.SessionID = "s-refused"
		c.Asker = tool.AskerFunc(func(context.Context, tool.Ask) (json.RawMessage, error) { return json.RawMessage("false"), nil })
	})
	if res.ExitCode == 0 || len(res.NetworkRefused) == 0 {
		t.Fatalf("npm install refused: %s %+v", out.Result.Error, res)
	}
}

// tinyRegistry serves the package "tiny" as an npm registry does (a packument and a tarball)
// on loopback, and returns its address.
func tinyRegistry(t *testing.T) string {
	t.Helper()
	pkg := t.TempDir()
	writeFiles(t, pkg, map[string]string{
		"package.json": `{"name":"tiny","version":"1.0.0","main":"index.js"}`,
		"index.js":     "module.exports = 'tiny from the registry';\n",
	})
	packDir := t.TempDir()
	pack := exec.Command("npm", "pack", "--silent", "--pack-destination", packDir)
	pack.Dir = pkg
	if out, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("npm pack: %v %s", err, out)
	}
	tarball, err := os.ReadFile(filepath.Join(packDir, "tiny-1.0.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	sha1sum, sha512sum := sha1.Sum(tarball), sha512.Sum512(tarball)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := "http://" + r.Host
		switch r.URL.Path {
		case "/tiny":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"tiny","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"tiny","version":"1.0.0","main":"index.js","dist":{"tarball":"%s/tiny/-/tiny-1.0.0.tgz","shasum":"%x","integrity":"sha512-%s"}}}}`,
				base, sha1sum, base64.StdEncoding.EncodeToString(sha512sum[:]))
		case "/tiny/-/tiny-1.0.0.tgz":
			w.Write(tarball)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
