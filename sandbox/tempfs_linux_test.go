//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMountTempFS is what a session's tmpfs costs its first call as root (the host
// mounts itself): one MountTempFS, and the UnmountTempFS at the session's end. Run it in a
// mount namespace of its own: unshare -m go test ./sandbox -run '^$' -bench MountTempFS
func BenchmarkMountTempFS(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("root only (an ordinary user's host mounts through its mounter)")
	}
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		rel := fmt.Sprintf("s%d", i)
		if err := os.Mkdir(filepath.Join(root, rel), 0o700); err != nil {
			b.Fatal(err)
		}
		if _, err := MountTempFS(root, rel, "bench", 8); err != nil {
			b.Fatal(err)
		}
		if err := UnmountTempFS(filepath.Join(root, rel)); err != nil {
			b.Fatal(err)
		}
	}
}
