//go:build !linux

package loader

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// replaceDir puts the directory src at dst, moving an existing dst aside first.
func replaceDir(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		if err := os.Rename(dst, filepath.Join(filepath.Dir(src), "node_modules.old")); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(src, dst)
}
