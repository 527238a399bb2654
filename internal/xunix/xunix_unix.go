//go:build unix

package xunix

import "golang.org/x/sys/unix"

type (
	Stat_t   = unix.Stat_t
	Timespec = unix.Timespec
)

const (
	AT_FDCWD            = unix.AT_FDCWD
	AT_REMOVEDIR        = unix.AT_REMOVEDIR
	AT_SYMLINK_NOFOLLOW = unix.AT_SYMLINK_NOFOLLOW

	O_RDONLY    = unix.O_RDONLY
	O_WRONLY    = unix.O_WRONLY
	O_RDWR      = unix.O_RDWR
	O_CREAT     = unix.O_CREAT
	O_EXCL      = unix.O_EXCL
	O_TRUNC     = unix.O_TRUNC
	O_APPEND    = unix.O_APPEND
	O_CLOEXEC   = unix.O_CLOEXEC
	O_DIRECTORY = unix.O_DIRECTORY
	O_NOFOLLOW  = unix.O_NOFOLLOW
	O_NONBLOCK  = unix.O_NONBLOCK

	S_IFMT   = unix.S_IFMT
	S_IFBLK  = unix.S_IFBLK
	S_IFCHR  = unix.S_IFCHR
	S_IFDIR  = unix.S_IFDIR
	S_IFIFO  = unix.S_IFIFO
	S_IFLNK  = unix.S_IFLNK
	S_IFREG  = unix.S_IFREG
	S_IFSOCK = unix.S_IFSOCK
	S_ISUID  = unix.S_ISUID
	S_ISGID  = unix.S_ISGID
	S_ISVTX  = unix.S_ISVTX

	LOCK_EX = unix.LOCK_EX
	LOCK_NB = unix.LOCK_NB

	EACCES      = unix.EACCES
	EAGAIN      = unix.EAGAIN
	EEXIST      = unix.EEXIST
	EINTR       = unix.EINTR
	EISDIR      = unix.EISDIR
	ELOOP       = unix.ELOOP
	ENOENT      = unix.ENOENT
	ENOSYS      = unix.ENOSYS
	ENOTDIR     = unix.ENOTDIR
	ENOTEMPTY   = unix.ENOTEMPTY
	EOPNOTSUPP  = unix.EOPNOTSUPP
	EPERM       = unix.EPERM
	EWOULDBLOCK = unix.EWOULDBLOCK
	EXDEV       = unix.EXDEV
)

func Open(path string, flags int, mode uint32) (int, error) { return unix.Open(path, flags, mode) }
func Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	return unix.Openat(dirfd, path, flags, mode)
}
func Close(fd int) error                                { return unix.Close(fd) }
func Fstat(fd int, st *Stat_t) error                    { return unix.Fstat(fd, st) }
func Lstat(path string, st *Stat_t) error               { return unix.Lstat(path, st) }
func Fchmod(fd int, mode uint32) error                  { return unix.Fchmod(fd, mode) }
func Flock(fd int, how int) error                       { return unix.Flock(fd, how) }
func Mkdirat(dirfd int, path string, mode uint32) error { return unix.Mkdirat(dirfd, path, mode) }
func Unlinkat(dirfd int, path string, flags int) error  { return unix.Unlinkat(dirfd, path, flags) }
func Fstatat(dirfd int, path string, st *Stat_t, flags int) error {
	return unix.Fstatat(dirfd, path, st, flags)
}
func Fchmodat(dirfd int, path string, mode uint32, flags int) error {
	return unix.Fchmodat(dirfd, path, mode, flags)
}
func Readlinkat(dirfd int, path string, buf []byte) (int, error) {
	return unix.Readlinkat(dirfd, path, buf)
}
func Symlinkat(oldpath string, newdirfd int, newpath string) error {
	return unix.Symlinkat(oldpath, newdirfd, newpath)
}
func Renameat(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	return unix.Renameat(olddirfd, oldpath, newdirfd, newpath)
}

func Dup(fd int) (int, error) { return unix.Dup(fd) }
