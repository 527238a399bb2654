//go:build linux

package loader

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// replaceDir puts the directory src at dst. When dst exists the two are exchanged in one
// step (renameat2 RENAME_EXCHANGE), so a worker starting meanwhile sees the old
// node_modules or the new one, never none; the old one ends up at src.
func replaceDir(src, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		if _, statErr := os.Lstat(dst); errors.Is(statErr, os.ErrNotExist) {
			return os.Rename(src, dst)
		}
		return err
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		// The file system cannot exchange: move the old one aside, then the new one in.
		aside := filepath.Join(filepath.Dir(src), "node_modules.old")
		if err := os.Rename(dst, aside); err != nil {
			return err
		}
		return os.Rename(src, dst)
	}
	return err
}
