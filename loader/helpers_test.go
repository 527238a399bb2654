package loader

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeFiles writes files (slash-separated names) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// testLoader is a Loader whose esbuild runs are counted.
type testLoader struct {
	*Loader
	builds atomic.Int32
}

func newTestLoader(t testing.TB) *testLoader {
	t.Helper()
	l := &testLoader{Loader: New(Options{CacheDir: t.TempDir(), Runtimes: Runtimes{Bun: bunBinary()}})}
	l.build = func(req buildRequest) buildResult {
		l.builds.Add(1)
		return esbuildBundle(req)
	}
	return l
}

// progressLog records progress reports.
type progressLog struct {
	mu     sync.Mutex
	stages []string
}

func (p *progressLog) report(stage, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stages = append(p.stages, stage+": "+msg)
}

func (p *progressLog) has(stage string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.stages {
		if strings.HasPrefix(s, stage+": ") {
			return true
		}
	}
	return false
}

// mustLoad loads a folder by path and fails the test on error.
func (l *testLoader) mustLoad(t testing.TB, dir string, opts LoadOptions) *Bundle {
	t.Helper()
	b, err := l.Load(context.Background(), Inspect(dir), opts)
	if err != nil {
		t.Fatalf("Load %s: %v", filepath.Base(dir), err)
	}
	return b
}

// loadErr loads a folder that must fail and returns its *Error.
func (l *testLoader) loadErr(t testing.TB, dir string) *Error {
	t.Helper()
	b, err := l.Load(context.Background(), Inspect(dir), LoadOptions{})
	if err == nil {
		t.Fatalf("Load %s succeeded (%s); want an error", filepath.Base(dir), b.Path)
	}
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("Load %s: error %T %v; want *loader.Error", filepath.Base(dir), err, err)
	}
	return le
}

// runNode imports a bundle with node and runs script (an ES module body with `mod` bound
// to the bundle's namespace); it returns stdout, stderr and the run error.
func runNode(t testing.TB, bundle, script string) (string, string, error) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run bundles: %v", err)
	}
	code := "const mod = await import(process.argv[1]);\n" + script
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--enable-source-maps", "--input-type=module", "-e", code, bundle)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

func bunBinary() string {
	for _, p := range []string{
		filepath.Join("..", ".deps", "node_modules", ".bin", "bun"),
	} {
		if abs, err := filepath.Abs(p); err == nil {
			if _, err := os.Stat(abs); err == nil {
				return abs
			}
		}
	}
	if p, err := exec.LookPath("bun"); err == nil {
		return p
	}
	return ""
}
