// Package fsutil holds the two file helpers several packages need: reading a file that must
// not be larger than a limit, and writing one so no reader ever sees it half-written.
package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ReadLimited reads a file of at most limit bytes; a larger file is an error that says so.
func ReadLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}

// WriteFileAtomic writes data to path (mode 0644) through a temporary file in the same
// folder and a rename, so a reader sees the old content or the new, never a part.
func WriteFileAtomic(path string, data []byte) error {
	return WriteFileAtomicPerm(path, data, 0o644)
}

// WriteFileDurable is WriteFileAtomicPerm for a file a person wrote (a configuration): the
// folder is made if missing and the content is synced before the rename, so a crash after it
// returns never leaves the old content or none.
func WriteFileDurable(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeAtomic(path, data, perm, true)
}

// WriteFileAtomicPerm is WriteFileAtomic with the file's mode. The temporary file is made
// new (O_EXCL, random name) and its mode set through its descriptor, so nothing is done
// by path but the rename.
func WriteFileAtomicPerm(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, data, perm, false)
}

func writeAtomic(path string, data []byte, perm os.FileMode, durable bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	var serr error
	if durable && werr == nil {
		serr = f.Sync()
	}
	if err := errors.Join(werr, serr, f.Chmod(perm.Perm()), f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
