//go:build unix

package rawio

import (
	"os"
	"syscall"
)

// infoOf is an os.FileInfo's Info: its device and inode numbers where the platform gives
// them, so that a raw Info and a portable one compare.
func infoOf(fi os.FileInfo) Info {
	info := Info{mode: fi.Mode().Type(), size: fi.Size(), mod: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.dev, info.ino = uint64(st.Dev), uint64(st.Ino)
	} else {
		info.fi = fi
	}
	return info
}
