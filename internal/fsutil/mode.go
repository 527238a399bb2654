package fsutil

import (
	"io/fs"

	unix "github.com/jean2/jean2/internal/xunix"
)

// ModeOf turns a raw st_mode (from fstatat, statx or getdents) into an fs.FileMode, as
// os.Lstat does, for code that stats by descriptor instead of by path.
func ModeOf(raw uint32) fs.FileMode {
	m := fs.FileMode(raw & 0o777)
	switch raw & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if raw&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if raw&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if raw&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
