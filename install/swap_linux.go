//go:build linux

package install

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps two existing directories in one step (renameat2 RENAME_EXCHANGE), so the
// tool's folder is never missing, not even for a moment. ok is false when the file system
// cannot exchange; the caller then falls back to two renames.
func exchange(a, b string) (ok bool, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return false, nil
	}
	return false, err
}
