package toolfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	unix "github.com/jean2/jean2/internal/xunix"
)

// The file system acts on what it checked: every operation opens the directory that holds
// its target from the scope root's own descriptor, with the kernel refusing any symlink on
// the way and any step outside that root, and then acts on the final name relative to that
// directory (openat, mkdirat, unlinkat, renameat, fstatat). A folder swapped for a symlink
// after the check is met as ELOOP, not followed, so no operation lands outside what was
// checked. No path-based system call is made after a check.

// fileStat is what fstatat tells of one name, not following a final symlink.
type fileStat struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	btime time.Time // the creation time, or mtime where the file system does not keep one
}

// dirEntry is one name in a directory and its type bits.
type dirEntry struct {
	name string
	typ  fs.FileMode
}

func (s fileStat) isDir() bool     { return s.mode.IsDir() }
func (s fileStat) isRegular() bool { return s.mode.IsRegular() }
func (s fileStat) isLink() bool    { return s.mode&fs.ModeSymlink != 0 }

// retryEINTR repeats a system call the kernel interrupted.
func retryEINTR(call func() error) error {
	for {
		if err := call(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// openWalk opens p one element at a time with O_NOFOLLOW, from dirfd (or from / when p is
// absolute): no symlink is followed and, p holding no "..", nothing outside dirfd is
// reached. It is the fallback where openat2 is missing or filtered.
func openWalk(dirfd int, p string, flags int, mode uint32) (int, error) {
	cur, owned := dirfd, false
	closeCur := func() {
		if owned {
			unix.Close(cur)
		}
	}
	if filepath.IsAbs(p) {
		fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		cur, owned = fd, true
	}
	var parts []string
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			closeCur()
			return -1, unix.EXDEV
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		parts = []string{"."}
	}
	for i, part := range parts {
		fl, m := unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(0)
		if i == len(parts)-1 {
			fl, m = flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode
		}
		var fd int
		err := retryEINTR(func() (err error) { fd, err = unix.Openat(cur, part, fl, m); return err })
		closeCur()
		if err != nil {
			return -1, err
		}
		cur, owned = fd, true
	}
	return cur, nil
}

// openAtName opens one name in dirfd, never following it when it is a symlink.
func openAtName(dirfd int, name string, flags int, mode uint32) (int, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		return err
	})
	return fd, err
}

// removeAllAt removes name in dirfd and, when it is a directory, everything below it,
// walking by descriptor: each directory is opened with O_NOFOLLOW from its parent's
// descriptor, so a folder swapped for a link while the tree is removed is unlinked as a
// link, never followed. Entries that keep appearing, or a name that keeps changing kind,
// end it after a few rounds with an error.
func removeAllAt(dirfd int, name, path string) error {
	const rounds = 10
	for round := 0; ; round++ {
		uerr := retryEINTR(func() error { return unix.Unlinkat(dirfd, name, 0) })
		if uerr == nil || errors.Is(uerr, unix.ENOENT) {
			return nil
		}
		if !errors.Is(uerr, unix.EISDIR) && !errors.Is(uerr, unix.EPERM) {
			return &fs.PathError{Op: "unlinkat", Path: path, Err: uerr}
		}
		fd, err := openAtName(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil
		case (errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)) && errors.Is(uerr, unix.EISDIR) && round < rounds:
			continue // swapped for a file or a link meanwhile: unlink that instead
		case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
			return &fs.PathError{Op: "unlinkat", Path: path, Err: uerr}
		case err != nil:
			return &fs.PathError{Op: "openat", Path: path, Err: err}
		}
		names, err := readNames(fd, path)
		var errs []error
		if err != nil {
			errs = append(errs, err)
		}
		for _, n := range names {
			if err := removeAllAt(fd, n, filepath.Join(path, n)); err != nil {
				errs = append(errs, err)
			}
		}
		unix.Close(fd)
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		err = retryEINTR(func() error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTDIR)) && round < rounds:
			continue // filled, or swapped, meanwhile
		}
		return &fs.PathError{Op: "unlinkat", Path: path, Err: err}
	}
}

// chmodAt sets the mode of name in dirfd without following it when it is a symlink.
func chmodAt(dirfd int, name string, mode fs.FileMode) error {
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if mode&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if mode&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	err := retryEINTR(func() error { return unix.Fchmodat(dirfd, name, m, unix.AT_SYMLINK_NOFOLLOW) })
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	// No fchmodat2 (Linux before 6.6), or name is a symlink: chmod through a descriptor
	// opened without following it (ELOOP for a link).
	fd, err := openAtName(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, m)
}
