//go:build unix

package fsutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The helpers below are for the host writing into a folder a tool's worker may write too (a
// session's temporary folder, a workspace, a staging folder an install script fills): the
// worker may have planted a symlink under any name it can guess, or swapped a folder for a
// link, to make the host write or delete where the worker itself may not. So:
//   - the folder is reached from a root the worker cannot change, with no symlink in the
//     rest of the path (openat2 RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH, or one O_NOFOLLOW
//     openat per component where openat2 is missing);
//   - a file is made new (O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC) relative to that folder's
//     descriptor, under a name with a random part the worker cannot predict.

// OpenDirBeneath opens the folder rel below root (rel "" or "." is root itself) without
// following any symlink from root on. root is trusted: jean2's own folders, which the
// worker cannot change, and may itself lie behind links (a home on /var/home).
func OpenDirBeneath(root, rel string) (*os.File, error) {
	rel = filepath.Clean(rel)
	if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("open %s below %s: the path leaves the folder", rel, root)
	}
	rootFd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rootFd)
	full := filepath.Join(root, rel)
	fd, err := openBeneath(rootFd, rel)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return os.NewFile(uintptr(fd), full), nil
}

// walkBeneath opens rel below dirFd one component at a time, refusing a symlink at each:
// what RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH does where openat2 is missing.
func walkBeneath(dirFd int, rel string) (int, error) {
	fd, err := unix.Openat(dirFd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return fd, nil
	}
	for _, name := range strings.Split(rel, "/") {
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// RandomName is prefix, 16 random hex digits and suffix: a name a tool cannot guess ahead.
func RandomName(prefix, suffix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b[:]) + suffix
}

// CreateIn creates a new file named prefix + random + suffix in the folder dir (a descriptor
// from OpenDirBeneath): never through a link, never over an existing entry.
func CreateIn(dir *os.File, prefix, suffix string, perm fs.FileMode) (*os.File, error) {
	for range 8 {
		name := RandomName(prefix, suffix)
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) {
			continue // a planted name, or chance: draw again
		}
		if err != nil {
			return nil, &fs.PathError{Op: "create", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
		// The umask may have narrowed perm; the file is ours, so set it through the descriptor.
		if err := f.Chmod(perm.Perm()); err != nil {
			f.Close()
			_ = unix.Unlinkat(int(dir.Fd()), name, 0)
			return nil, err
		}
		return f, nil
	}
	return nil, fmt.Errorf("create %s*%s in %s: every name drawn was taken", prefix, suffix, dir.Name())
}

// WriteNew writes data to a new file in the folder rel below root (see OpenDirBeneath),
// named prefix + random + suffix, and returns its path. Nothing is followed, nothing
// existing is overwritten; a partial file is removed.
func WriteNew(root, rel, prefix, suffix string, data []byte, perm fs.FileMode) (string, error) {
	dir, err := OpenDirBeneath(root, rel)
	if err != nil {
		return "", err
	}
	defer dir.Close()
	f, err := CreateIn(dir, prefix, suffix, perm)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = unix.Unlinkat(int(dir.Fd()), filepath.Base(f.Name()), 0)
		return "", fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// ReplaceIn writes data as the file name in the folder rel below root (see OpenDirBeneath):
// into a new file with a random name first, then renamed over name relative to the folder's
// descriptor, so whatever stood under name — a link included — is replaced, never followed.
func ReplaceIn(root, rel, name string, data []byte, perm fs.FileMode) error {
	if name == "" || strings.Contains(name, "/") || name == "." || name == ".." {
		return fmt.Errorf("replace %q in %s: not a file name", name, filepath.Join(root, rel))
	}
	dir, err := OpenDirBeneath(root, rel)
	if err != nil {
		return err
	}
	defer dir.Close()
	f, err := CreateIn(dir, "."+name+".tmp-", "", perm)
	if err != nil {
		return err
	}
	tmp := filepath.Base(f.Name())
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if err := unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), name); err != nil {
		_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
		return &fs.PathError{Op: "rename", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	return nil
}

// RemoveTree removes path and everything below it without following a symlink anywhere:
// a link is removed, never what it points to, and a folder swapped for a link while the
// removal runs is not entered (os.RemoveAll works with unlinkat and O_NOFOLLOW openat from
// the folder's descriptor on Unix). A path that is itself a link loses the link only.
func RemoveTree(path string) error {
	return os.RemoveAll(path)
}
