package rawio

import (
	"io/fs"
	"os"
	"time"
)

// A Stater makes the stats jean2 makes on every tool call (the workspace folder is still
// the one pinned, the approvals file did not change) without the runtime's system-call
// bookkeeping where that is safe, for the reason the pipes are read raw: a system call
// through that bookkeeping wakes the runtime's monitor thread (sysmon) when the process was
// idle, and sysmon then polls every 20 µs until the process idles again. Two such stats per
// call cost a trivial tool's call through `jean2 mcp` about a context switch more of jean2
// (docs/performance.md, issue 25).
//
// A raw call keeps its processor while the kernel resolves the path. On a network file
// system that hangs, that would hold one of jean2's processors per call until the whole
// server froze, where through os.Stat only the call waits. So a stat is raw only where the
// kernel cannot wait on anything but local storage (Linux on amd64 and arm64): the path is
// absolute, no link lies on it (the raw lookup refuses to follow one, and then the stat goes
// through os.Stat), and every mount it crosses is a local file system (ext4, xfs, btrfs,
// tmpfs, overlay …; not NFS, SMB, FUSE, 9p …), judged from /proc/self/mountinfo and judged
// again whenever the mount table changes. Everywhere else it is os.Stat.
//
// The nil *Stater and the zero Stater are ready: they stat through os.Stat.
type Stater struct {
	local *localMounts // nil where no stat is raw
}

// NewStater returns a Stater for this process; Close releases what it holds.
func NewStater() *Stater { return &Stater{local: openLocalMounts()} }

// Close releases the Stater's watch of the mount table; it stats through os.Stat after.
// Closing twice does nothing more.
func (s *Stater) Close() error {
	if s == nil || s.local == nil {
		return nil
	}
	return s.local.close()
}

// Stat is os.Stat (links followed).
func (s *Stater) Stat(path string) (Info, error) { return s.stat(path, true) }

// Lstat is os.Lstat (a link is described, not followed).
func (s *Stater) Lstat(path string) (Info, error) { return s.stat(path, false) }

func (s *Stater) stat(path string, follow bool) (Info, error) {
	if s != nil && s.local != nil {
		if info, ok, err := s.local.stat(path, follow); ok {
			return info, err
		}
	}
	return statPortable(path, follow)
}

// Info is what Stat and Lstat tell about a file: enough to see whether a path still names
// the same file, what kind of file it is and whether it changed.
type Info struct {
	dev, ino uint64
	mode     fs.FileMode // the type bits only
	size     int64
	mod      time.Time
	fi       os.FileInfo // where the platform has no device and inode numbers
}

// IsDir reports whether the file is a folder.
func (i Info) IsDir() bool { return i.mode.IsDir() }

// Type is the file's type bits (fs.ModeDir, fs.ModeSymlink, ...).
func (i Info) Type() fs.FileMode { return i.mode }

// Size is the file's size in bytes.
func (i Info) Size() int64 { return i.size }

// ModTime is the file's modification time.
func (i Info) ModTime() time.Time { return i.mod }

// SameFile reports whether i and j describe the same file, as os.SameFile does.
func (i Info) SameFile(j Info) bool {
	if i.fi != nil || j.fi != nil {
		return i.fi != nil && j.fi != nil && os.SameFile(i.fi, j.fi)
	}
	return i.dev == j.dev && i.ino == j.ino
}

// statPortable is the stat through the runtime: os.Stat or os.Lstat.
func statPortable(path string, follow bool) (Info, error) {
	var fi os.FileInfo
	var err error
	if follow {
		fi, err = os.Stat(path)
	} else {
		fi, err = os.Lstat(path)
	}
	if err != nil {
		return Info{}, err
	}
	return infoOf(fi), nil
}
