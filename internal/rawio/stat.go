package rawio

import (
	"io/fs"
	"os"
	"time"
)

// Stat and Lstat are os.Stat and os.Lstat for the checks jean2 makes on every tool call
// (the workspace folder is still the one pinned, the call's temporary folder is a folder,
// the approvals file did not change), issued raw where that is supported (Linux on amd64
// and arm64) for the reason the pipes are read raw: a system call through the runtime's
// bookkeeping wakes its monitor thread (sysmon) when the process was idle, and sysmon then
// polls every 20 µs until the process is idle again. With three such stats per call, a call
// of a trivial tool through `jean2 mcp` took ~1.3 of sysmon's sleeps and ~2 more context
// switches of jean2 than with none (docs/performance.md, issue 25). The price: while the
// kernel resolves the path, the goroutine keeps its processor; a local file system answers
// in microseconds, a network file system that hangs would hold the processor until it
// answers (through os.Stat other goroutines could run meanwhile).

// Info is what Stat and Lstat tell about a file: enough to see whether a path still names
// the same file, what kind of file it is and whether it changed.
type Info struct {
	dev, ino uint64
	mode     fs.FileMode // the type bits only
	size     int64
	mod      time.Time
	fi       os.FileInfo // where the stat was not raw
}

// IsDir reports whether the file is a folder.
func (i Info) IsDir() bool { return i.mode.IsDir() }

// Type is the file's type bits (fs.ModeDir, fs.ModeSymlink, ...).
func (i Info) Type() fs.FileMode { return i.mode }

// Size is the file's size in bytes.
func (i Info) Size() int64 { return i.size }

// ModTime is the file's modification time.
func (i Info) ModTime() time.Time { return i.mod }

// SameFile reports whether i and j describe the same file (device and inode), as
// os.SameFile does.
func (i Info) SameFile(j Info) bool {
	if i.fi != nil || j.fi != nil {
		return i.fi != nil && j.fi != nil && os.SameFile(i.fi, j.fi)
	}
	return i.dev == j.dev && i.ino == j.ino
}

// Stat is os.Stat (links followed).
func Stat(path string) (Info, error) { return stat(path, true) }

// Lstat is os.Lstat (a link is described, not followed).
func Lstat(path string) (Info, error) { return stat(path, false) }

// statPortable is the fallback: os.Stat or os.Lstat.
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
	return Info{mode: fi.Mode().Type(), size: fi.Size(), mod: fi.ModTime(), fi: fi}, nil
}
