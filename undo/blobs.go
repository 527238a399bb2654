package undo

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// blobStore keeps file contents by their SHA-256: blobs/ab/cdef…, written once through a
// temporary file and a rename, so a blob is whole or absent and identical contents are kept
// once, whatever path or turn they came from.
type blobStore struct {
	dir string // <Dir>/blobs
	tmp string // <Dir>/tmp, on the same file system so the rename is atomic
}

func (b *blobStore) path(d digest) string {
	h := d.String()
	return filepath.Join(b.dir, h[:2], h[2:])
}

// init makes the 256 fan-out folders once, so writing a blob never needs a MkdirAll.
func (b *blobStore) init() error {
	for _, d := range []string{b.dir, b.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	for i := range 256 {
		if err := os.Mkdir(filepath.Join(b.dir, fmt.Sprintf("%02x", i)), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// has reports whether the blob is stored.
func (b *blobStore) has(d digest) bool {
	_, err := os.Lstat(b.path(d))
	return err == nil
}

// put stores data under its digest unless it is there already; it reports whether it wrote.
func (b *blobStore) put(d digest, data []byte) (bool, error) {
	if b.has(d) {
		return false, nil
	}
	f, err := os.CreateTemp(b.tmp, "blob-*")
	if err != nil {
		return false, fmt.Errorf("store a copy: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("store a copy: %w", err)
	}
	if err := os.Rename(tmp, b.path(d)); err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("store a copy: %w", err)
	}
	return true, nil
}

// get reads a blob back and checks it still has the content it is named after.
func (b *blobStore) get(d digest) ([]byte, error) {
	data, err := os.ReadFile(b.path(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the copy %s is missing from the undo store", d)
	}
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(data) != d {
		return nil, fmt.Errorf("the copy %s in the undo store is damaged", d)
	}
	return data, nil
}
