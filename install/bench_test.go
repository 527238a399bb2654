package install

import (
	"fmt"
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
