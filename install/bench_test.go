package install

import (
	"context"
	"fmt"
	"github.com/jean2/jean2/host"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkUnpackTarGz unpacks a 200-file, 800 KiB archive under the untrusted-archive
// rules (name checks, os.Root writes, the final link walk).
func BenchmarkUnpackTarGz(b *testing.B) {
	var entries []entry
	for i := range 200 {
		entries = append(entries, entry{name: fmt.Sprintf("tool/lib/f%03d.js", i), body: strings.Repeat("x", 4<<10)})
	}
	archive := filepath.Join(b.TempDir(), "a.tgz")
	if err := os.WriteFile(archive, tarGz(b, entries), 0o644); err != nil {
		b.Fatal(err)
	}
	lim := Limits{}.withDefaults()
	dir := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		if _, err := unpackArchive(archive, filepath.Join(dir, fmt.Sprint(i)), lim); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInstallNoDeps installs a new tool without dependencies from a .tar.gz: unpack,
// bundle, test-load in a real worker, swap into place. Each iteration is new content, so
// nothing comes from the bundle cache.
func BenchmarkInstallNoDeps(b *testing.B) {
	root := b.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Layout: layout, ServerEnv: []string{}, MaxWorkers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	in, err := New(Options{Layout: layout, Validator: h, Prepare: NewLoaderPreparer(layout, RuntimeOptions{}, nil), ServerEnv: []string{}})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		name := fmt.Sprintf("bench-%d", i)
		src := fmt.Sprintf("export const definition = { name: %q, description: 'bench', inputSchema: { type: 'object' } };\nexport async function execute() { return { success: true, result: %d }; }\n", name, i)
		archive := filepath.Join(root, name+".tgz")
		if err := os.WriteFile(archive, tarGz(b, []entry{{name: name + "/tool.js", body: src}, {name: name + "/VERSION", body: "1.0.0"}}), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := in.Install(ctx, archive, InstallOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
