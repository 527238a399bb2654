package tool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// StateOf is what stands at path now, for a Change's Before: absent, a file (its content,
// when at most maxBytes), a symbolic link (its target) or an empty folder. A built-in that
// writes jean2's own files with os rather than through ctx.fs (skill_manage, memory) takes
// it before the write, so Restore can put the path back. What it cannot keep whole (a larger
// file, a folder with entries) is marked Incomplete, and Restore refuses it.
func StateOf(path string, maxBytes int64) (*FileState, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &FileState{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	st := &FileState{Exists: true, IsDir: fi.IsDir(), Mode: fi.Mode()}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", path, err)
		}
		st.Content = []byte(target)
	case fi.IsDir():
		if ents, err := os.ReadDir(path); err != nil || len(ents) > 0 {
			st.Incomplete = "a folder with entries is not kept"
		}
	case !fi.Mode().IsRegular():
		st.Incomplete = "not a file, a link or a folder"
	case fi.Size() > maxBytes:
		st.Incomplete = fmt.Sprintf("%d bytes, more than the %d kept", fi.Size(), maxBytes)
	default:
		st.Content, err = readAtMost(path, maxBytes)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", path, err)
		}
	}
	return st, nil
}

func readAtMost(path string, maxBytes int64) ([]byte, error) {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err == nil && int64(len(data)) > maxBytes {
		err = fmt.Errorf("it grew past %d bytes while being read", maxBytes)
	}
	return data, err
}
