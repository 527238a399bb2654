//go:build linux && (amd64 || arm64)

package rawio

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

const (
	sysOpenat2          = 437 // the same number on amd64 and arm64
	oPath               = 0x200000
	resolveNoMagiclinks = 0x02
	resolveNoSymlinks   = 0x04
	pollPri, pollErr    = 0x2, 0x8
)

// openHow is the kernel's struct open_how (openat2).
type openHow struct{ flags, mode, resolve uint64 }

// localFSType reports whether a file system's lookups wait on nothing but this machine's
// memory and disks. Anything else (NFS, SMB, FUSE such as sshfs, 9p, Ceph …) may wait on a
// peer that does not answer.
func localFSType(t string) bool {
	switch t {
	case "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "bcachefs", "jfs", "reiserfs",
		"tmpfs", "ramfs", "overlay", "squashfs", "erofs", "vfat", "exfat", "ntfs3", "iso9660",
		"devtmpfs", "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "hugetlbfs",
		"tracefs", "debugfs", "securityfs", "bpf", "binfmt_misc", "pstore", "configfs", "fusectl":
		return true
	}
	return false
}

// localMounts judges which paths a raw stat may look up: those whose every mount is local.
// The kernel marks the open mountinfo file when the mount table changes (a poll then
// reports POLLPRI), and the judgements are made again from it.
type localMounts struct {
	mu      sync.Mutex
	fd      int // /proc/self/mountinfo
	mounts  []Mount
	verdict map[string]bool // path → every mount on it is local
	// off: every stat goes through os.Stat, since openat2 is missing (before Linux 5.6) or
	// the Stater was closed (closed).
	off, closed bool
}

func openLocalMounts() *localMounts {
	fd, err := syscall.Open("/proc/self/mountinfo", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	l := &localMounts{fd: fd}
	if !l.reload() {
		syscall.Close(fd)
		return nil
	}
	return l
}

func (l *localMounts) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.off, l.closed = true, true
	return syscall.Close(l.fd)
}

// stat is the raw stat of path where local judges it safe; ok is false where it does not
// (the caller then stats through os.Stat), and also where the raw lookup met a link or
// anything but the usual answers, so that os.Stat gives the exact answer.
func (l *localMounts) stat(path string, follow bool) (info Info, ok bool, err error) {
	if !l.local(path) {
		return Info{}, false, nil
	}
	p, perr := syscall.BytePtrFromString(path)
	if perr != nil {
		return Info{}, false, nil
	}
	how := openHow{flags: oPath | syscall.O_CLOEXEC, resolve: resolveNoSymlinks | resolveNoMagiclinks}
	op := "stat"
	if !follow {
		how.flags |= syscall.O_NOFOLLOW
		op = "lstat"
	}
	cwd := -0x64 // AT_FDCWD (the path is absolute); a variable, as a negative constant does not convert to uintptr
	fd, _, errno := syscall.RawSyscall6(sysOpenat2, uintptr(cwd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	switch errno {
	case 0:
	case syscall.ENOENT, syscall.ENOTDIR:
		return Info{}, true, &os.PathError{Op: op, Path: path, Err: errno}
	case syscall.ENOSYS:
		l.mu.Lock()
		l.off = true
		l.mu.Unlock()
		return Info{}, false, nil
	default: // ELOOP (a link on the way), EINTR, EAGAIN …: os.Stat answers
		return Info{}, false, nil
	}
	var st syscall.Stat_t
	_, _, errno = syscall.RawSyscall(syscall.SYS_FSTAT, fd, uintptr(unsafe.Pointer(&st)), 0)
	syscall.RawSyscall(syscall.SYS_CLOSE, fd, 0, 0)
	if errno != 0 {
		return Info{}, false, nil
	}
	return Info{
		dev: uint64(st.Dev), ino: uint64(st.Ino), mode: typeBits(st.Mode), size: st.Size,
		mod: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)),
	}, true, nil
}

// local reports whether every mount path crosses is a local file system. Only a clean
// absolute path is judged: the raw lookup follows no link, so the mounts it crosses are
// those whose mount point is the path or lies above it.
func (l *localMounts) local(path string) bool {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.off {
		return false
	}
	if (l.changed() || l.mounts == nil) && !l.reload() {
		return false
	}
	v, ok := l.verdict[path]
	if !ok {
		v = l.judge(path)
		if len(l.verdict) >= 1024 {
			clear(l.verdict) // a long-lived server meets new paths; keep the map small
		}
		l.verdict[path] = v
	}
	return v
}

func (l *localMounts) judge(path string) bool {
	for _, m := range l.mounts {
		if (m.Point == "/" || path == m.Point || strings.HasPrefix(path, m.Point+"/")) && !localFSType(m.Type) {
			return false
		}
	}
	return len(l.mounts) > 0
}

// changed polls the mountinfo file without waiting: POLLPRI means the mount table changed
// since the last poll. A poll that fails counts as a change.
func (l *localMounts) changed() bool {
	fds := [1]struct {
		fd              int32
		events, revents int16
	}{{fd: int32(l.fd), events: pollPri}}
	var zero syscall.Timespec
	n, _, errno := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	if errno != 0 {
		return true
	}
	return n > 0 && fds[0].revents&(pollPri|pollErr) != 0
}

// reload reads the mount table again (rarely: when it changed) and forgets the judgements.
func (l *localMounts) reload() bool {
	var data []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := syscall.Pread(l.fd, buf, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			l.mounts = nil
			return false
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
		off += int64(n)
	}
	l.mounts = ParseMountinfo(data)
	l.verdict = make(map[string]bool)
	return len(l.mounts) > 0
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
