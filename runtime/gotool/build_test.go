package gotool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	jean2 "github.com/jean2/jean2"
)

const brokenTool = `package main

import "github.com/jean2/jean2/tool"

func main() {
	var t tool.Tool
	_ = t
	_ = foo(1)
	y := 2
}
`

func TestBuildErrorPointsAtTheSource(t *testing.T) {
	folder := writeFolder(t, "broken-tool", map[string]string{
		"go.mod":  "module jean2.local/tools/broken-tool\n\ngo " + jean2.SDKGoVersion() + "\n\nrequire github.com/jean2/jean2 v0.0.0\n",
		"tool.go": brokenTool,
	})
	_, err := Build(context.Background(), toolchain(t), buildOpts(folder, t.TempDir()))
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("error %v (%T), want *BuildError", err, err)
	}
	if be.File != "tool.go" || be.Line != 8 || be.Column != 6 || be.Msg != "undefined: foo" {
		t.Errorf("BuildError %+v", be)
	}
	if got := err.Error(); got != "broken-tool: build: tool.go:8:6: undefined: foo" {
		t.Errorf("Error() = %q", got)
	}
	if !strings.Contains(be.Output, "declared and not used: y") {
		t.Errorf("output lacks the other errors:\n%s", be.Output)
	}
	if entries, _ := os.ReadDir(folder); len(entries) != 2 {
		t.Errorf("the build wrote into the folder: %v", entries)
	}
}

func TestBrokenGoModIsReportedWithItsLine(t *testing.T) {
	folder := writeFolder(t, "bad-mod", map[string]string{
		"go.mod":  "module jean2.local/tools/bad-mod\n\ngo " + jean2.SDKGoVersion() + "\n\nfrobnicate everything\n",
		"tool.go": "package main\n\nfunc main() {}\n",
	})
	_, err := Build(context.Background(), toolchain(t), buildOpts(folder, t.TempDir()))
	var be *BuildError
	if !errors.As(err, &be) || be.File != "go.mod" || be.Line != 5 || !strings.Contains(be.Msg, "unknown directive: frobnicate") {
		t.Fatalf("error %v (%+v)", err, be)
	}
	if strings.Contains(be.Output, ".build-") {
		t.Errorf("the output names the scratch copy instead of the folder's go.mod:\n%s", be.Output)
	}
}

func TestALibraryPackageIsNotATool(t *testing.T) {
	folder := writeFolder(t, "lib", map[string]string{
		"go.mod":  "module jean2.local/tools/lib\n\ngo " + jean2.SDKGoVersion() + "\n",
		"tool.go": "package lib\n\nfunc F() {}\n",
	})
	cache := t.TempDir()
	_, err := Build(context.Background(), toolchain(t), buildOpts(folder, cache))
	if err == nil || err.Error() != "lib: build: tool.go:1:1: package lib is not a command: a Go tool folder is `package main` with a main function that calls tool.Serve" {
		t.Errorf("error: %v", err)
	}
	if dirs, _ := os.ReadDir(filepath.Join(cache, "gotools")); len(dirs) != 1 { // only the lock file
		t.Errorf("the cache holds %v after a failed build", dirs)
	}
}

func TestCancelledBuild(t *testing.T) {
	folder := writeFolder(t, "cancelled", Scaffold("cancelled"))
	cache := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Build(ctx, toolchain(t), buildOpts(folder, cache))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want one wrapping context.Canceled", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(cache, "gotools", ".build-*")); len(leftovers) != 0 {
		t.Errorf("scratch directories left: %v", leftovers)
	}
}

func TestFolderWithoutGoModIsRefused(t *testing.T) {
	folder := writeFolder(t, "no-mod", map[string]string{"tool.go": "package main\n\nfunc main() {}\n"})
	_, err := Build(context.Background(), toolchain(t), buildOpts(folder, t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "no-mod: not a Go tool folder: there is no go.mod in "+folder+"; create one with `go mod init no-mod`") {
		t.Errorf("error: %v", err)
	}
	_, err = Build(context.Background(), toolchain(t), buildOpts(filepath.Join(folder, "missing"), t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("missing folder: %v", err)
	}
	_, err = Build(context.Background(), toolchain(t), BuildOptions{Folder: folder})
	if err == nil || !strings.Contains(err.Error(), "Folder, CacheDir and SDKModule are all needed") {
		t.Errorf("no cache: %v", err)
	}
}

// fakeGo writes a script that stands in for the go command: it records its arguments and,
// when real is set, runs the real go command.
func fakeGo(t *testing.T, real string) (path, record string) {
	t.Helper()
	dir := t.TempDir()
	record = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$@\" >> " + record + "\nenv >> " + record + ".env\n"
	if real != "" {
		script += "exec " + real + " \"$@\"\n"
	} else {
		script += "exit 3\n"
	}
	path = filepath.Join(dir, "go")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, record
}

func TestCacheHitSkipsTheBuild(t *testing.T) {
	tc := toolchain(t)
	folder := writeFolder(t, "cached", Scaffold("cached"))
	cache := t.TempDir()
	first := mustBuild(t, buildOpts(folder, cache))
	if first.Cached {
		t.Fatal("the first build was a cache hit")
	}
	if first.Path != filepath.Join(cache, "gotools", first.Hash, "tool") {
		t.Errorf("binary at %s", first.Path)
	}

	// The second build must not run go at all: a go command that fails proves it.
	fake, record := fakeGo(t, "")
	tc2 := tc
	tc2.Go = fake
	second, err := Build(context.Background(), tc2, buildOpts(folder, cache))
	if err != nil || !second.Cached || second.Path != first.Path {
		t.Fatalf("second build: %+v %v", second, err)
	}
	if _, err := os.Stat(record); err == nil {
		t.Error("the go command ran on a cache hit")
	}
	t.Logf("cached Build: %v (first build %v)", second.Duration, first.Duration)

	// Hidden files do not change the hash; a source change does.
	if err := os.WriteFile(filepath.Join(folder, ".notes"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err := hashFolder(folder, cache, tc.Version); err != nil || h != first.Hash {
		t.Errorf("a hidden file changed the hash: %s %v", h, err)
	}
	if err := os.WriteFile(filepath.Join(folder, "extra.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	third := mustBuild(t, buildOpts(folder, cache))
	if third.Cached || third.Hash == first.Hash {
		t.Errorf("a changed folder was not rebuilt: %+v", third)
	}
	// The cache inside the folder is not part of what is hashed.
	inner := filepath.Join(folder, "cache")
	if h, err := hashFolder(folder, inner, tc.Version); err != nil {
		t.Fatal(err)
	} else {
		_ = os.MkdirAll(inner, 0o755)
		_ = os.WriteFile(filepath.Join(inner, "tool"), []byte("binary"), 0o755)
		if h2, _ := hashFolder(folder, inner, tc.Version); h2 != h {
			t.Error("the cache inside the folder changed the hash")
		}
	}
}

func TestConcurrentBuildsOfOneHashBuildOnce(t *testing.T) {
	tc := toolchain(t)
	fake, record := fakeGo(t, tc.Go)
	tc.Go = fake
	folder := writeFolder(t, "together", Scaffold("together"))
	cache := t.TempDir()
	const n = 4
	bins := make([]Binary, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			bins[i], errs[i] = Build(ctx, tc, buildOpts(folder, cache))
		}()
	}
	wg.Wait()
	built := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("build %d: %v", i, errs[i])
		}
		if bins[i].Path != bins[0].Path {
			t.Errorf("build %d at %s, build 0 at %s", i, bins[i].Path, bins[0].Path)
		}
		if !bins[i].Cached {
			built++
		}
	}
	calls, _ := os.ReadFile(record)
	if got := strings.Count(string(calls), "build -modfile="); got != 1 || built != 1 {
		t.Errorf("go build ran %d times, %d builds reported no cache hit; want 1 and 1:\n%s", got, built, calls)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(cache, "gotools", ".build-*")); len(leftovers) != 0 {
		t.Errorf("scratch directories left: %v", leftovers)
	}
}

func TestBuildEnvironmentHoldsNoProviderKeys(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
	t.Setenv("GOPRIVATE", "example.com/private")
	t.Setenv("HTTPS_PROXY", "http://proxy.local:3128")
	tc := toolchain(t)
	env := BuildEnv(tc, os.Environ())
	joined := strings.Join(env, "\n")
	for _, want := range []string{"GOFLAGS=-mod=mod -buildvcs=false", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOCACHE=" + tc.GOCACHE,
		"GOMODCACHE=" + tc.GOMODCACHE, "GOPATH=" + tc.GOPATH, "GOPRIVATE=example.com/private", "HTTPS_PROXY=http://proxy.local:3128", "PATH=" + filepath.Dir(tc.Go) + ":"} {
		if !strings.Contains(joined, want) {
			t.Errorf("build env lacks %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "must-not-leak") {
		t.Errorf("a provider key reached the build env:\n%s", joined)
	}

	// What the go command really receives, seen from the go command's place.
	fake, record := fakeGo(t, "")
	tc.Go = fake
	folder := writeFolder(t, "env-check", Scaffold("env-check"))
	opts := buildOpts(folder, t.TempDir())
	opts.Env = os.Environ()
	if _, err := Build(context.Background(), tc, opts); err == nil {
		t.Fatal("a go command that fails built something")
	}
	got, err := os.ReadFile(record + ".env")
	if err != nil {
		t.Fatalf("the go command did not run: %v", err)
	}
	if strings.Contains(string(got), "must-not-leak") || !strings.Contains(string(got), "GOTOOLCHAIN=local") {
		t.Errorf("the go command's environment:\n%s", got)
	}
}

func TestDetect(t *testing.T) {
	tc := toolchain(t)
	if tc.Version != runtime.Version() || !filepath.IsAbs(tc.Go) || tc.GOROOT == "" || tc.GOCACHE == "" || tc.GOMODCACHE == "" {
		t.Errorf("Detect: %+v (tests built by %s)", tc, runtime.Version())
	}
	explicit, err := Detect(tc.Go)
	if err != nil || explicit != tc {
		t.Errorf("Detect(%s): %+v %v", tc.Go, explicit, err)
	}
	_, err = Detect("/nonexistent/go/bin/go")
	if err == nil || !strings.Contains(err.Error(), "Go tool folders need the Go toolchain, and /nonexistent/go/bin/go is not an executable go command: install Go") ||
		!strings.Contains(err.Error(), "https://go.dev/dl/") {
		t.Errorf("missing toolchain: %v", err)
	}
	fake, _ := fakeGo(t, "")
	if _, err := Detect(fake); err == nil || !strings.Contains(err.Error(), "go env") {
		t.Errorf("a go command that fails: %v", err)
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		have, want string
		ok         bool
	}{
		{"go1.26.8", "1.26.8", true},
		{"go1.26.9", "1.26.8", true},
		{"go1.27rc1", "1.26.8", true},
		{"go1.27", "1.26.8", true},
		{"go1.26.7", "1.26.8", false},
		{"go1.25.12", "1.26.8", false},
		{"devel go1.27-abcdef", "1.26.8", true},
		{"go1.26", "1.26", true},
	} {
		if got := versionAtLeast(c.have, c.want); got != c.ok {
			t.Errorf("versionAtLeast(%q, %q) = %v", c.have, c.want, got)
		}
	}
}

func TestScaffold(t *testing.T) {
	files := Scaffold("word-count")
	if files["go.mod"] != "module jean2.local/tools/word-count\n\ngo "+jean2.SDKGoVersion()+"\n\nrequire github.com/jean2/jean2 v0.0.0\n" {
		t.Errorf("go.mod:\n%s", files["go.mod"])
	}
	src := files["tool.go"]
	for _, want := range []string{`Name:        "word-count",`, "tool.NewTyped(", "tool.Serve(t)", "c.FS.ReadFile(ctx, in.Path)", "c.Logger.Info("} {
		if !strings.Contains(src, want) {
			t.Errorf("tool.go lacks %q", want)
		}
	}
	// A name that holds a placeholder or odd characters stays a valid literal and path.
	odd := Scaffold("NAME.x")
	if !strings.Contains(odd["tool.go"], `Name:        "NAME.x",`) || ModulePath("NAME.x") != "jean2.local/tools/name.x" {
		t.Errorf("odd name: %s / %s", ModulePath("NAME.x"), odd["tool.go"])
	}
	if ModulePath("a b/c") != "jean2.local/tools/a-b-c" {
		t.Errorf("ModulePath: %s", ModulePath("a b/c"))
	}
}

// BenchmarkBuildCached is a Build of a folder whose binary is in the cache: hashing the
// folder and one stat.
func BenchmarkBuildCached(b *testing.B) {
	folder := writeFolder(b, "bench", Scaffold("bench"))
	opts := buildOpts(folder, b.TempDir())
	mustBuild(b, opts)
	tc := toolchain(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		bin, err := Build(ctx, tc, opts)
		if err != nil || !bin.Cached {
			b.Fatalf("%+v %v", bin, err)
		}
	}
}
