//go:build !linux

package toolfs

import (
	"io/fs"
	"os"
	"time"
)

// openNoSymlinks opens a path that policy.Real has already resolved. Without openat2,
// O_NOFOLLOW guards the final component against being swapped for a symlink.
func openNoSymlinks(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|oNoFollow, perm)
}

// birthTime falls back to the modification time where the platform gives no creation time.
func birthTime(_ string, fi fs.FileInfo) time.Time { return fi.ModTime() }
