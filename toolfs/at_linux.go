package toolfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/jean2/jean2/internal/fsutil"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// oDirRef opens a directory only to act relative to it.
const oDirRef = unix.O_PATH | unix.O_DIRECTORY

// maxEAGAIN bounds the retries of an openat2 that raced a rename elsewhere on the system.
const maxEAGAIN = 1000

// openAt opens p below dirfd with openat2: no symlink anywhere on the way (nor a magic link
// of /proc), and, from a directory's descriptor, nothing outside that directory
// (RESOLVE_BENEATH). With AT_FDCWD, p is absolute and real: every element is what was
// checked, or the open fails. Where openat2 is missing or filtered, it walks p by hand.
func openAt(dirfd int, p string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if flags&unix.O_CREAT != 0 {
		how.Mode = uint64(mode)
	}
	if dirfd != unix.AT_FDCWD {
		how.Resolve |= unix.RESOLVE_BENEATH
	}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, p, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN) && tries < maxEAGAIN:
			// RESOLVE_BENEATH met a rename done meanwhile somewhere: the kernel asks to retry.
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			// No openat2 (old kernel, or a seccomp filter answering EPERM): a real EPERM
			// comes back again from the walk.
			return openWalk(dirfd, p, flags, mode)
		default:
			return -1, err
		}
	}
}

// statAt describes name in dirfd, not following a final symlink, with its creation time as
// Node's stat().birthtime gives it on Linux (statx).
func statAt(dirfd int, name string) (fileStat, error) {
	var stx unix.Statx_t
	err := retryEINTR(func() error {
		return unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &stx)
	})
	if err != nil {
		return fileStat{}, err
	}
	st := fileStat{
		mode:  fsutil.ModeOf(uint32(stx.Mode)),
		size:  int64(stx.Size),
		mtime: time.Unix(stx.Mtime.Sec, int64(stx.Mtime.Nsec)),
	}
	st.btime = st.mtime
	if stx.Mask&unix.STATX_BTIME != 0 {
		st.btime = time.Unix(stx.Btime.Sec, int64(stx.Btime.Nsec))
	}
	return st, nil
}

// readNames lists a directory opened for reading, without "." and "..".
func readNames(fd int, path string) ([]string, error) {
	entries, err := readEntries(fd, path)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.name
	}
	return names, err
}

// readEntries lists a directory opened for reading, without "." and "..", with each entry's
// type; where the file system does not give it (DT_UNKNOWN), it is asked of the entry's name
// in fd, never by path.
func readEntries(fd int, path string) ([]dirEntry, error) {
	buf := make([]byte, 8192)
	var out []dirEntry
	for {
		var n int
		err := retryEINTR(func() (err error) { n, err = unix.Getdents(fd, buf); return err })
		if err != nil {
			return out, &fs.PathError{Op: "getdents", Path: path, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		// struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return out, &fs.PathError{Op: "getdents", Path: path, Err: unix.EIO}
			}
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			typ := buf[off+18]
			off += reclen
			if s := string(name); s != "." && s != ".." {
				e := dirEntry{name: s, typ: dtMode(typ)}
				if typ == unix.DT_UNKNOWN {
					if st, err := statAt(fd, s); err == nil {
						e.typ = st.mode.Type()
					} else if errors.Is(err, unix.ENOENT) {
						continue // removed meanwhile
					}
				}
				out = append(out, e)
			}
		}
	}
}

func dtMode(t uint8) fs.FileMode {
	switch t {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// renameAt renames with renameat2; noReplace fails with EEXIST rather than replace what
// stands at the destination.
func renameAt(fromDir int, from string, toDir int, to string, noReplace bool) error {
	var flags uint
	if noReplace {
		flags = unix.RENAME_NOREPLACE
	}
	return retryEINTR(func() error { return unix.Renameat2(fromDir, from, toDir, to, flags) })
}
