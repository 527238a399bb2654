//go:build linux && (amd64 || arm64)

package rawio

import (
	"io/fs"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// atFDCWD is AT_FDCWD: a relative path is taken from the working folder, as os.Stat does.
const atFDCWD = -0x64

func stat(path string, follow bool) (Info, error) {
	op, flags := "stat", 0
	if !follow {
		op, flags = "lstat", 0x100 // AT_SYMLINK_NOFOLLOW
	}
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return Info{}, &os.PathError{Op: op, Path: path, Err: err}
	}
	var st syscall.Stat_t
	cwd := atFDCWD // a negative constant does not convert to uintptr; a variable does
	for {
		_, _, errno := syscall.RawSyscall6(sysFstatat, uintptr(cwd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&st)), uintptr(flags), 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return Info{}, &os.PathError{Op: op, Path: path, Err: errno}
		}
		break
	}
	return Info{
		dev: uint64(st.Dev), ino: uint64(st.Ino), mode: typeBits(st.Mode), size: st.Size,
		mod: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)),
	}, nil
}

// typeBits is os's mapping of a stat mode's file type.
func typeBits(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	}
	return 0
}
