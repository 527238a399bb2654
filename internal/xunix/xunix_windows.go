//go:build windows

package xunix

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/windows"
)

// Stat_t holds what the Unix code reads of a stat result, filled from
// GetFileInformationByHandle. Mode has Unix type bits; the permission bits say only
// whether the file is read-only.
type Stat_t struct {
	Mode  uint32
	Nlink uint32
	Size  int64
	Atim  Timespec
	Mtim  Timespec
	Ctim  Timespec
	Ino   uint64
	Dev   uint64
}

type Timespec = syscall.Timespec

// A descriptor is a Windows handle; AT_FDCWD, as on Linux, names the working folder.
const (
	AT_FDCWD            = -100
	AT_REMOVEDIR        = 0x200
	AT_SYMLINK_NOFOLLOW = 0x100
)

// Open flags: syscall's, and two of our own in bits syscall does not use, taken off before
// the call. O_NOFOLLOW is CreateFile's FILE_FLAG_OPEN_REPARSE_POINT (opens a link itself;
// Open then refuses it with ELOOP, as Unix does).
const (
	O_RDONLY    = syscall.O_RDONLY
	O_WRONLY    = syscall.O_WRONLY
	O_RDWR      = syscall.O_RDWR
	O_CREAT     = syscall.O_CREAT
	O_EXCL      = syscall.O_EXCL
	O_TRUNC     = syscall.O_TRUNC
	O_APPEND    = syscall.O_APPEND
	O_CLOEXEC   = syscall.O_CLOEXEC
	O_NONBLOCK  = 0 // nothing blocks on open here (no FIFOs)
	O_DIRECTORY = 0x10000
	O_NOFOLLOW  = windows.FILE_FLAG_OPEN_REPARSE_POINT
)

const (
	S_IFMT   = 0o170000
	S_IFBLK  = 0o060000
	S_IFCHR  = 0o020000
	S_IFDIR  = 0o040000
	S_IFIFO  = 0o010000
	S_IFLNK  = 0o120000
	S_IFREG  = 0o100000
	S_IFSOCK = 0o140000
	S_ISUID  = 0o4000
	S_ISGID  = 0o2000
	S_ISVTX  = 0o1000
)

const (
	LOCK_EX = 2
	LOCK_NB = 4
)

// The errors are syscall's Unix-like ones (invented numbers on Windows), which errno turns
// Windows' own into, so that errors.Is(err, ENOENT) means the same everywhere.
const (
	EACCES      = syscall.EACCES
	EAGAIN      = syscall.EAGAIN
	EEXIST      = syscall.EEXIST
	EINTR       = syscall.EINTR
	EISDIR      = syscall.EISDIR
	ELOOP       = syscall.ELOOP
	ENOENT      = syscall.ENOENT
	ENOSYS      = syscall.ENOSYS
	ENOTDIR     = syscall.ENOTDIR
	ENOTEMPTY   = syscall.ENOTEMPTY
	EOPNOTSUPP  = syscall.EOPNOTSUPP
	EPERM       = syscall.EPERM
	EWOULDBLOCK = syscall.EWOULDBLOCK
	EXDEV       = syscall.EXDEV
)

// errno turns a Windows error into the Unix one the callers test for.
func errno(err error) error {
	var e syscall.Errno
	if !errors.As(err, &e) {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return errno(pe.Err)
		}
		var le *os.LinkError
		if errors.As(err, &le) {
			return errno(le.Err)
		}
		return err
	}
	switch e {
	case windows.ERROR_FILE_NOT_FOUND, windows.ERROR_PATH_NOT_FOUND, windows.ERROR_INVALID_DRIVE:
		return ENOENT
	case windows.ERROR_FILE_EXISTS, windows.ERROR_ALREADY_EXISTS:
		return EEXIST
	case windows.ERROR_ACCESS_DENIED, windows.ERROR_SHARING_VIOLATION:
		return EACCES
	case windows.ERROR_DIR_NOT_EMPTY:
		return ENOTEMPTY
	case windows.ERROR_DIRECTORY:
		return ENOTDIR
	case windows.ERROR_NOT_SAME_DEVICE:
		return EXDEV
	case windows.ERROR_CANT_RESOLVE_FILENAME, windows.ERROR_STOPPED_ON_SYMLINK:
		return ELOOP
	case windows.ERROR_LOCK_VIOLATION, windows.ERROR_IO_PENDING:
		return EWOULDBLOCK
	}
	return e
}

// at is the path of name relative to the folder dirfd: a handle's final path, or the
// working folder for AT_FDCWD; an absolute name stands alone.
func at(dirfd int, name string) (string, error) {
	if filepath.IsAbs(name) {
		return name, nil
	}
	if dirfd == AT_FDCWD {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		return filepath.Join(wd, name), nil
	}
	buf := make([]uint16, 512)
	for {
		n, err := windows.GetFinalPathNameByHandle(windows.Handle(dirfd), &buf[0], uint32(len(buf)), 0)
		if err != nil {
			return "", errno(err)
		}
		if int(n) < len(buf) {
			return filepath.Join(windows.UTF16ToString(buf[:n]), name), nil
		}
		buf = make([]uint16, n+1)
	}
}

func Open(path string, flags int, mode uint32) (int, error) {
	h, err := syscall.Open(path, flags&^O_DIRECTORY, mode)
	if err != nil {
		return -1, errno(err)
	}
	fd := int(h)
	if flags&(O_NOFOLLOW|O_DIRECTORY) != 0 {
		var st Stat_t
		if err := Fstat(fd, &st); err != nil {
			Close(fd)
			return -1, err
		}
		switch {
		case flags&O_NOFOLLOW != 0 && st.Mode&S_IFMT == S_IFLNK:
			Close(fd)
			return -1, ELOOP
		case flags&O_DIRECTORY != 0 && st.Mode&S_IFMT != S_IFDIR:
			Close(fd)
			return -1, ENOTDIR
		}
	}
	return fd, nil
}

func Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	p, err := at(dirfd, path)
	if err != nil {
		return -1, err
	}
	return Open(p, flags, mode)
}

func Close(fd int) error { return errno(syscall.CloseHandle(syscall.Handle(fd))) }

func Fstat(fd int, st *Stat_t) error {
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(fd), &d); err != nil {
		return errno(err)
	}
	*st = Stat_t{
		Nlink: d.NumberOfLinks,
		Size:  int64(d.FileSizeHigh)<<32 | int64(d.FileSizeLow),
		Atim:  syscall.NsecToTimespec(d.LastAccessTime.Nanoseconds()),
		Mtim:  syscall.NsecToTimespec(d.LastWriteTime.Nanoseconds()),
		// Windows keeps no change time; the creation time stands in for it.
		Ctim: syscall.NsecToTimespec(d.CreationTime.Nanoseconds()),
		Ino:  uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow),
		Dev:  uint64(d.VolumeSerialNumber),
	}
	switch {
	case d.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		st.Mode = S_IFLNK | 0o777
	case d.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0:
		st.Mode = S_IFDIR | 0o777
	default:
		st.Mode = S_IFREG | 0o666
	}
	if d.FileAttributes&windows.FILE_ATTRIBUTE_READONLY != 0 {
		st.Mode &^= 0o222
	}
	return nil
}

// stat opens path for its attributes only (following a final link or not) and reads them.
func stat(path string, follow bool) (Stat_t, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return Stat_t{}, err
	}
	flags := uint32(windows.FILE_FLAG_BACKUP_SEMANTICS)
	if !follow {
		flags |= windows.FILE_FLAG_OPEN_REPARSE_POINT
	}
	h, err := windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING, flags, 0)
	if err != nil {
		return Stat_t{}, errno(err)
	}
	defer windows.CloseHandle(h)
	var st Stat_t
	return st, Fstat(int(h), &st)
}

func Lstat(path string, st *Stat_t) (err error) {
	*st, err = stat(path, false)
	return err
}

func Fstatat(dirfd int, path string, st *Stat_t, flags int) error {
	p, err := at(dirfd, path)
	if err != nil {
		return err
	}
	*st, err = stat(p, flags&AT_SYMLINK_NOFOLLOW == 0)
	return err
}

// Fchmod and Fchmodat can only set or clear the read-only attribute.
func Fchmod(fd int, mode uint32) error {
	p, err := at(fd, "")
	if err != nil {
		return err
	}
	return errno(os.Chmod(p, os.FileMode(mode&0o777)))
}

func Fchmodat(dirfd int, path string, mode uint32, flags int) error {
	p, err := at(dirfd, path)
	if err != nil {
		return err
	}
	if flags&AT_SYMLINK_NOFOLLOW != 0 {
		var st Stat_t
		if err := Lstat(p, &st); err != nil {
			return err
		}
		if st.Mode&S_IFMT == S_IFLNK {
			return EOPNOTSUPP
		}
	}
	return errno(os.Chmod(p, os.FileMode(mode&0o777)))
}

// Flock locks the first byte of the file (LockFileEx); the lock goes with the handle.
func Flock(fd int, how int) error {
	var flags uint32
	if how&LOCK_EX != 0 {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	if how&LOCK_NB != 0 {
		flags |= windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	var ol windows.Overlapped
	return errno(windows.LockFileEx(windows.Handle(fd), flags, 0, 1, 0, &ol))
}

func Mkdirat(dirfd int, path string, mode uint32) error {
	p, err := at(dirfd, path)
	if err != nil {
		return err
	}
	return errno(syscall.Mkdir(p, mode))
}

// Unlinkat removes a file or link, or with AT_REMOVEDIR an empty folder; a folder without
// it is EISDIR, as on Linux.
func Unlinkat(dirfd int, path string, flags int) error {
	p, err := at(dirfd, path)
	if err != nil {
		return err
	}
	var st Stat_t
	if err := Lstat(p, &st); err != nil {
		return err
	}
	isDir := st.Mode&S_IFMT == S_IFDIR
	switch {
	case flags&AT_REMOVEDIR != 0 && !isDir && st.Mode&S_IFMT != S_IFLNK:
		return ENOTDIR
	case flags&AT_REMOVEDIR == 0 && isDir:
		return EISDIR
	}
	p16, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return err
	}
	if flags&AT_REMOVEDIR != 0 || isDir {
		return errno(windows.RemoveDirectory(p16))
	}
	if err := windows.DeleteFile(p16); err != nil {
		// A link to a folder is removed as a folder.
		if st.Mode&S_IFMT == S_IFLNK {
			return errno(windows.RemoveDirectory(p16))
		}
		return errno(err)
	}
	return nil
}

func Readlinkat(dirfd int, path string, buf []byte) (int, error) {
	p, err := at(dirfd, path)
	if err != nil {
		return 0, err
	}
	target, err := os.Readlink(p)
	if err != nil {
		return 0, errno(err)
	}
	return copy(buf, target), nil
}

func Symlinkat(oldpath string, newdirfd int, newpath string) error {
	p, err := at(newdirfd, newpath)
	if err != nil {
		return err
	}
	return errno(os.Symlink(oldpath, p))
}

func Renameat(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	from, err := at(olddirfd, oldpath)
	if err != nil {
		return err
	}
	to, err := at(newdirfd, newpath)
	if err != nil {
		return err
	}
	return errno(os.Rename(from, to))
}

// Dup duplicates a handle within this process (not inherited by children).
func Dup(fd int) (int, error) {
	p := windows.CurrentProcess()
	var h windows.Handle
	if err := windows.DuplicateHandle(p, windows.Handle(fd), p, &h, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return -1, errno(err)
	}
	return int(h), nil
}
