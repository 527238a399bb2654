//go:build !linux

package toolfs

import (
	"os"

	unix "github.com/jean2/jean2/internal/xunix"
)

// oDirRef opens a directory only to act relative to it.
const oDirRef = unix.O_RDONLY | unix.O_DIRECTORY

// openAt opens p below dirfd (or p absolute with AT_FDCWD) one element at a time, following
// no symlink; there is no openat2 here.
func openAt(dirfd int, p string, flags int, mode uint32) (int, error) {
	return openWalk(dirfd, p, flags, mode)
}

// readNames lists a directory opened for reading, without "." and "..".
func readNames(fd int, path string) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), path)
	defer d.Close()
	return d.Readdirnames(-1)
}

// readEntries lists a directory opened for reading, with each entry's type asked of its name
// in fd.
func readEntries(fd int, path string) ([]dirEntry, error) {
	names, err := readNames(fd, path)
	out := make([]dirEntry, 0, len(names))
	for _, n := range names {
		st, serr := statAt(fd, n)
		if serr != nil {
			continue // removed meanwhile, or not to be examined: not listed
		}
		out = append(out, dirEntry{name: n, typ: st.mode.Type()})
	}
	return out, err
}
