package toolfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// openNoSymlinks opens a path that policy.Real has already resolved, so it must hold no
// symlink at all. On Linux 5.6+ openat2 with RESOLVE_NO_SYMLINKS makes the kernel refuse any
// link met anywhere in the path (a parent swapped for a link after the check included);
// elsewhere, or where openat2 is filtered, O_NOFOLLOW guards the final component.
func openNoSymlinks(path string, flag int, perm fs.FileMode) (*os.File, error) {
	how := unix.OpenHow{Flags: uint64(flag | unix.O_CLOEXEC), Resolve: unix.RESOLVE_NO_SYMLINKS}
	if flag&os.O_CREATE != 0 {
		how.Mode = uint64(perm.Perm())
	}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), path), nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			// No openat2 here (old kernel, or a seccomp filter that answers EPERM): a real
			// EPERM comes back again from the plain open.
			return os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
		default:
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

// birthTime returns when path was created, as Node's stat().birthtime does on Linux
// (statx), or the modification time where the file system does not keep it.
func birthTime(path string, fi fs.FileInfo) time.Time {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BTIME, &stx)
	if err == nil && stx.Mask&unix.STATX_BTIME != 0 {
		return time.Unix(stx.Btime.Sec, int64(stx.Btime.Nsec))
	}
	return fi.ModTime()
}
