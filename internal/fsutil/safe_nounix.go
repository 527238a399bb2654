//go:build !unix

package fsutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Where there is no openat (Windows), the helpers keep their contracts as far as the
// platform allows: a new file under a random name made with O_EXCL, a replacement by
// rename, a removal that removes a link rather than enter it.

// RandomName is prefix, 16 random hex digits and suffix.
func RandomName(prefix, suffix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:]) + suffix
}

// WriteNew writes data to a new file in root/rel named prefix + random + suffix.
func WriteNew(root, rel, prefix, suffix string, data []byte, perm fs.FileMode) (string, error) {
	dir := filepath.Join(root, rel)
	for range 8 {
		p := filepath.Join(dir, RandomName(prefix, suffix))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, werr := f.Write(data)
		if err := errors.Join(werr, f.Close()); err != nil {
			os.Remove(p)
			return "", err
		}
		return p, nil
	}
	return "", errors.New("every name drawn was taken")
}

// ReplaceIn writes data as root/rel/name through a new file and a rename.
func ReplaceIn(root, rel, name string, data []byte, perm fs.FileMode) error {
	return WriteFileAtomicPerm(filepath.Join(root, rel, name), data, perm)
}

// RemoveTree removes path and everything below it.
func RemoveTree(path string) error { return os.RemoveAll(path) }
