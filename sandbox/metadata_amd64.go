//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// metadataCalls change a file's mode, owner, times or extended attributes (amd64).
var metadataCalls = []metadataCall{
	{unix.SYS_CHMOD, 1}, {unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2},
	{unix.SYS_CHOWN, -1}, {unix.SYS_FCHOWN, -1}, {unix.SYS_LCHOWN, -1}, {unix.SYS_FCHOWNAT, -1},
	{unix.SYS_UTIME, -1}, {unix.SYS_UTIMES, -1}, {unix.SYS_UTIMENSAT, -1}, {unix.SYS_FUTIMESAT, -1},
	{unix.SYS_SETXATTR, -1}, {unix.SYS_LSETXATTR, -1}, {unix.SYS_FSETXATTR, -1}, {unix.SYS_SETXATTRAT, -1},
	{unix.SYS_REMOVEXATTR, -1}, {unix.SYS_LREMOVEXATTR, -1}, {unix.SYS_FREMOVEXATTR, -1}, {unix.SYS_REMOVEXATTRAT, -1},
}

// createCalls make a file with a mode (the argument index of the mode).
var createCalls = []metadataCall{{unix.SYS_OPEN, 2}, {unix.SYS_OPENAT, 3}, {unix.SYS_CREAT, 1}, {unix.SYS_MKNOD, 1}, {unix.SYS_MKNODAT, 2}}
