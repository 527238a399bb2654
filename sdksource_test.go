package jean2

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSDKFilesAreTheSDKPackagesWithoutTests(t *testing.T) {
	files := SDKFiles()
	has := map[string]bool{}
	for _, f := range files {
		has[f] = true
		if strings.HasSuffix(f, "_test.go") {
			t.Errorf("test file %s is in the SDK module", f)
		}
	}
	for _, want := range []string{"go.mod", "go.sum", "tool/serve.go", "tool/context.go", "policy/paths.go", "internal/jsonrpc/conn.go", "internal/workerproto/proto.go", "internal/rawio/rawio.go"} {
		if !has[want] {
			t.Errorf("%s is missing from the SDK module (have %v)", want, files)
		}
	}
	if v := SDKGoVersion(); v == "" || !strings.HasPrefix(v, "1.") {
		t.Errorf("SDKGoVersion() = %q", v)
	}
	if h := SDKHash(); len(h) != 24 {
		t.Errorf("SDKHash() = %q", h)
	}
}

func TestWriteSDKModuleIsContentAddressedAndConcurrentSafe(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = WriteSDKModule(dir)
		}()
	}
	wg.Wait()
	want := filepath.Join(dir, SDKHash())
	for i := range n {
		if errs[i] != nil || paths[i] != want {
			t.Errorf("writer %d: %s, %v; want %s", i, paths[i], errs[i], want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("dir holds %v; want only the module (temporary copies cleaned up)", names)
	}
	if _, err := os.Stat(filepath.Join(want, "tool", "serve_test.go")); err == nil {
		t.Error("a _test.go file was written")
	}

	// An intact copy is reused as is.
	mod := filepath.Join(want, "tool", "serve.go")
	before, _ := os.Stat(mod)
	if p, err := WriteSDKModule(dir); err != nil || p != want {
		t.Fatalf("second write: %s %v", p, err)
	}
	after, _ := os.Stat(mod)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("an intact module was rewritten")
	}

	// A damaged copy is replaced: an edited file, then an extra Go file.
	if err := os.WriteFile(mod, []byte("package tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := WriteSDKModule(dir); err != nil || p != want {
		t.Fatalf("rewrite: %s %v", p, err)
	}
	if err := verifySDK(want, sdk()); err != nil {
		t.Errorf("after repairing an edited file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(want, "tool", "extra.go"), []byte("package tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteSDKModule(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(want, "tool", "extra.go")); err == nil {
		t.Error("an extra Go file survived the repair")
	}
	if _, err := WriteSDKModule(""); err == nil {
		t.Error("an empty directory was accepted")
	}
}

// TestWrittenSDKModuleBuilds builds every package of the written module with the local
// toolchain, offline: everything it needs must come from go.sum and the module cache.
func TestWrittenSDKModuleBuilds(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = "/usr/local/go/bin/go"
	}
	dir, err := WriteSDKModule(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	goenv := func(name string) string {
		out, err := exec.Command(gobin, "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "build", "./...")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + filepath.Dir(gobin) + ":/usr/bin:/bin",
		"HOME=" + t.TempDir(),
		"GOCACHE=" + goenv("GOCACHE"),
		"GOMODCACHE=" + goenv("GOMODCACHE"),
		"GOPATH=" + goenv("GOPATH"),
		"GOFLAGS=-mod=mod -buildvcs=false",
		"GOPROXY=off",
		"GOTOOLCHAIN=local",
		"CGO_ENABLED=0",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./... in the written SDK module: %v\n%s", err, out)
	}
	// go.mod and go.sum are left as written: the module needed nothing it lacked.
	if err := verifySDK(dir, sdk()); err != nil {
		t.Errorf("the build changed the module: %v", err)
	}
}
