//go:build unix

package host

import (
	"io/fs"
	"syscall"
)

// allocatedBytes is the space a file takes on disk (its blocks), 0 when unknown.
func allocatedBytes(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return 0
}
