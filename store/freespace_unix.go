//go:build unix

package store

import "golang.org/x/sys/unix"

// freeBytes is the space left to an unprivileged writer on the disk holding dir.
func freeBytes(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
