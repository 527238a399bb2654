//go:build !linux

package toolfs

import (
	"errors"
	"github.com/jean2/jean2/internal/fsutil"
	"os"
	"time"

	unix "github.com/jean2/jean2/internal/xunix"
)

// oDirRef opens a directory only to act relative to it.
const oDirRef = unix.O_RDONLY | unix.O_DIRECTORY

// openAt opens p below dirfd (or p absolute with AT_FDCWD) one element at a time, following
// no symlink; there is no openat2 here.
func openAt(dirfd int, p string, flags int, mode uint32) (int, error) {
	return openWalk(dirfd, p, flags, mode)
}

// statAt describes name in dirfd, not following a final symlink; the creation time falls
// back to the modification time.
func statAt(dirfd int, name string) (fileStat, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return fileStat{}, err
	}
	sec, nsec := st.Mtim.Unix()
	mtime := time.Unix(sec, nsec)
	return fileStat{mode: fsutil.ModeOf(uint32(st.Mode)), size: st.Size, mtime: mtime, btime: mtime}, nil
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

// renameAt renames with renameat; without renameat2, noReplace is checked just before,
// which is not atomic.
func renameAt(fromDir int, from string, toDir int, to string, noReplace bool) error {
	if noReplace {
		if _, err := statAt(toDir, to); err == nil {
			return unix.EEXIST
		} else if !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return retryEINTR(func() error { return unix.Renameat(fromDir, from, toDir, to) })
}
