package loader

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A folder that changes while it is bundled (an editor mid-save) must not leave a bundle
// cached under the hash of other content: when that content came back, the cache would
// serve code of another version.
func TestBundleIsOfTheContentItsHashNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tools", "moving")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := func(v string) []byte {
		return []byte("export const definition = { name: 'moving', description: 'x', inputSchema: { type: 'object' } };\nexport async function execute() { return { success: true, result: '" + v + "' }; }\n")
	}
	file := filepath.Join(dir, "tool.js")
	if err := os.WriteFile(file, src("AAA"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := New(Options{CacheDir: t.TempDir()})
	builds := 0
	l.build = func(req buildRequest) buildResult {
		builds++
		if builds == 1 { // the save lands between hashing and bundling
			if err := os.WriteFile(file, src("BBB"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return esbuildBundle(req)
	}
	load := func() (*Bundle, string) {
		t.Helper()
		b, err := l.Load(context.Background(), Inspect(dir), LoadOptions{Runtime: RuntimeNode})
		if err != nil {
			t.Fatal(err)
		}
		code, err := os.ReadFile(b.Path)
		if err != nil {
			t.Fatal(err)
		}
		return b, string(code)
	}
	if _, code := load(); !strings.Contains(code, "BBB") || builds != 2 {
		t.Fatalf("after a change mid-bundle: %d builds, bundle holds BBB: %v", builds, strings.Contains(code, "BBB"))
	}
	// The earlier content comes back: its bundle must be of it, not of what was read mid-save.
	if err := os.WriteFile(file, src("AAA"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code := load(); !strings.Contains(code, "AAA") || strings.Contains(code, "BBB") {
		t.Fatalf("the bundle cached for AAA holds other code:\n%s", code)
	}
}
