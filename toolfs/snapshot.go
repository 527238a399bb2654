package toolfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	unix "github.com/jean2/jean2/internal/xunix"

	"github.com/jean2/jean2/tool"
)

// entryOverhead is what each snapshot entry costs against the snapshot limit besides its
// content and name, so a tree of a million empty files is bounded too.
const entryOverhead = 64

// snapshotAt records what stands at name in dirfd (path is its real path, for messages), not
// following a final symlink: nothing, a file (content and mode), a symlink (its target in
// Content, fs.ModeSymlink in Mode) or a directory (mode and every entry, recursively). The
// tree is walked by descriptor, each folder opened with O_NOFOLLOW from its parent's, so a
// folder swapped for a link while it is read is never followed. Past the snapshot limit, or
// where part of the tree cannot be read or held (a device, a named pipe), it returns the
// top-level kind and mode with Incomplete set and no content. Only the end of ctx is an
// error.
func (f *FS) snapshotAt(ctx context.Context, dirfd int, name, path string) (*tool.FileState, error) {
	st, err := statAt(dirfd, name)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return &tool.FileState{Exists: false}, nil
	}
	if err != nil {
		return nil, pathErr("lstat", path, err)
	}
	return f.snapshotOf(ctx, dirfd, name, path, st)
}

// snapshotOf is snapshotAt for a name already examined.
func (f *FS) snapshotOf(ctx context.Context, dirfd int, name, path string, st fileStat) (*tool.FileState, error) {
	s := &snapshotter{ctx: ctx, root: path, limit: f.opts.MaxSnapshotBytes}
	state, err := s.state(dirfd, name, path, st)
	if err != nil {
		return nil, err
	}
	if s.incomplete != "" {
		return &tool.FileState{Exists: true, IsDir: st.isDir(), Mode: st.mode, Incomplete: s.incomplete}, nil
	}
	return &state, nil
}

type snapshotter struct {
	ctx        context.Context
	root       string
	limit      int64
	used       int64
	incomplete string // why the snapshot cannot be kept whole; "" while it can
}

// charge counts n bytes against the limit and reports whether the snapshot is still whole.
func (s *snapshotter) charge(n int64) bool {
	if s.incomplete != "" {
		return false
	}
	s.used += n
	if s.used > s.limit {
		s.incomplete = fmt.Sprintf("the undo data for %s is larger than the %d-byte snapshot limit, so it was not kept; this change cannot be restored", s.root, s.limit)
	}
	return s.incomplete == ""
}

func (s *snapshotter) cannot(format string, args ...any) {
	if s.incomplete == "" {
		s.incomplete = fmt.Sprintf(format, args...) + "; this change cannot be restored"
	}
}

// state is the before-state of name in dirfd (path is its name in messages), examined as
// fi: its content, link target or entries, as far as the budget allows. A snapshot that
// cannot be whole records why in s.incomplete and state goes on without an error; only a
// cancelled context is one.
func (s *snapshotter) state(dirfd int, name, path string, fi fileStat) (tool.FileState, error) {
	if err := s.ctx.Err(); err != nil {
		return tool.FileState{}, err
	}
	st := tool.FileState{Exists: true, Mode: fi.mode}
	if !s.charge(entryOverhead + int64(len(name))) {
		return st, nil
	}
	var err error
	switch mode := fi.mode; {
	case mode.IsRegular():
		st.Content, err = s.fileContent(dirfd, name, path, fi.size)
	case mode&fs.ModeSymlink != 0:
		st.Content = s.linkTarget(dirfd, name, path)
	case mode.IsDir():
		st.IsDir = true
		st.Entries, err = s.dirEntries(dirfd, name, path)
	default:
		s.cannot("%s is a %s, which a snapshot cannot hold", path, kindOf(mode))
	}
	if err != nil {
		return tool.FileState{}, err
	}
	return st, nil
}

// fileContent reads the regular file name in dirfd, examined at size bytes; nil when the
// snapshot cannot hold it.
func (s *snapshotter) fileContent(dirfd int, name, path string, size int64) ([]byte, error) {
	if !s.charge(size) {
		return nil, nil
	}
	fd, err := openAtName(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		s.cannot("could not read %s for its snapshot: %v", path, err)
		return nil, nil
	}
	file := os.NewFile(uintptr(fd), path)
	defer file.Close()
	// The file may have grown since it was examined: read at most what is left of the
	// budget.
	room := s.limit - s.used + size
	data, err := readAll(s.ctx, file, size, room)
	switch {
	case errors.Is(err, ErrTooLarge):
		s.charge(room + 1)
		return nil, nil
	case s.ctx.Err() != nil:
		return nil, s.ctx.Err()
	case err != nil:
		s.cannot("could not read %s for its snapshot: %v", path, err)
		return nil, nil
	}
	s.used += int64(len(data)) - size
	return data, nil
}

// linkTarget reads the symlink name in dirfd; nil when the snapshot cannot hold it.
func (s *snapshotter) linkTarget(dirfd int, name, path string) []byte {
	target, err := readlinkAt(dirfd, name)
	if err != nil {
		s.cannot("could not read the link %s for its snapshot: %v", path, err)
		return nil
	}
	if !s.charge(int64(len(target))) {
		return nil
	}
	return []byte(target)
}

// dirEntries is the states of the folder name's entries in dirfd, sorted by name; as far as
// it got when the snapshot cannot be whole.
func (s *snapshotter) dirEntries(dirfd int, name, path string) ([]tool.DirState, error) {
	fd, err := openAtName(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		s.cannot("could not list %s for its snapshot: %v", path, err)
		return nil, nil
	}
	defer unix.Close(fd)
	names, err := readNames(fd, path)
	if err != nil {
		s.cannot("could not list %s for its snapshot: %v", path, err)
		return nil, nil
	}
	slices.Sort(names)
	var entries []tool.DirState
	for _, n := range names {
		child := filepath.Join(path, n)
		info, err := statAt(fd, n)
		if errors.Is(err, unix.ENOENT) {
			continue // removed while we looked: it is not part of the before-state
		}
		if err != nil {
			s.cannot("could not examine %s for its snapshot: %v", child, err)
			return entries, nil
		}
		cs, err := s.state(fd, n, child, info)
		if err != nil {
			return nil, err
		}
		if s.incomplete != "" {
			return entries, nil
		}
		entries = append(entries, tool.DirState{Name: n, State: cs})
	}
	return entries, nil
}

// readlinkAt reads the target of the symlink name in dirfd.
func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		var n int
		err := retryEINTR(func() (err error) { n, err = unix.Readlinkat(dirfd, name, buf); return err })
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
