package toolfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/jean2/jean2/tool"
)

// entryOverhead is what each snapshot entry costs against the snapshot limit besides its
// content and name, so a tree of a million empty files is bounded too.
const entryOverhead = 64

// snapshot records what stands at path (not following a final symlink): nothing, a file
// (content and mode), a symlink (its target in Content, fs.ModeSymlink in Mode) or a
// directory (mode and every entry, recursively). Past the snapshot limit, or where part of
// the tree cannot be read or held (a device, a named pipe), it returns the top-level kind
// and mode with Incomplete set and no content. Only the end of ctx is an error.
func (f *FS) snapshot(ctx context.Context, path string) (*tool.FileState, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return &tool.FileState{Exists: false}, nil
	}
	if err != nil {
		return nil, err
	}
	s := &snapshotter{ctx: ctx, root: path, limit: f.opts.MaxSnapshotBytes}
	st, err := s.state(path, fi)
	if err != nil {
		return nil, err
	}
	if s.incomplete != "" {
		return &tool.FileState{Exists: true, IsDir: fi.IsDir(), Mode: fi.Mode(), Incomplete: s.incomplete}, nil
	}
	return &st, nil
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

func (s *snapshotter) state(path string, fi fs.FileInfo) (tool.FileState, error) {
	if err := s.ctx.Err(); err != nil {
		return tool.FileState{}, err
	}
	st := tool.FileState{Exists: true, Mode: fi.Mode()}
	if !s.charge(entryOverhead + int64(len(fi.Name()))) {
		return st, nil
	}
	mode := fi.Mode()
	switch {
	case mode.IsRegular():
		if !s.charge(fi.Size()) {
			return st, nil
		}
		file, err := openNoSymlinks(path, os.O_RDONLY|oNonBlock, 0)
		if err != nil {
			s.cannot("could not read %s for its snapshot: %v", path, err)
			return st, nil
		}
		defer file.Close()
		// The file may have grown since Lstat: read at most what is left of the budget.
		room := s.limit - s.used + fi.Size()
		data, err := readAll(s.ctx, file, fi.Size(), room)
		switch {
		case errors.Is(err, ErrTooLarge):
			s.charge(room + 1)
			return st, nil
		case s.ctx.Err() != nil:
			return tool.FileState{}, s.ctx.Err()
		case err != nil:
			s.cannot("could not read %s for its snapshot: %v", path, err)
			return st, nil
		}
		s.used += int64(len(data)) - fi.Size()
		st.Content = data
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			s.cannot("could not read the link %s for its snapshot: %v", path, err)
			return st, nil
		}
		if !s.charge(int64(len(target))) {
			return st, nil
		}
		st.Content = []byte(target)
	case mode.IsDir():
		st.IsDir = true
		d, err := openNoSymlinks(path, os.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			s.cannot("could not list %s for its snapshot: %v", path, err)
			return st, nil
		}
		entries, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			s.cannot("could not list %s for its snapshot: %v", path, err)
			return st, nil
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			child := filepath.Join(path, e.Name())
			info, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while we looked: it is not part of the before-state
			}
			if err != nil {
				s.cannot("could not examine %s for its snapshot: %v", child, err)
				return st, nil
			}
			cs, err := s.state(child, info)
			if err != nil {
				return tool.FileState{}, err
			}
			if s.incomplete != "" {
				return st, nil
			}
			st.Entries = append(st.Entries, tool.DirState{Name: e.Name(), State: cs})
		}
	default:
		s.cannot("%s is a %s, which a snapshot cannot hold", path, kindOf(mode))
	}
	return st, nil
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
