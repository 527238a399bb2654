//go:build !linux && !darwin

package toolfs

import (
	"errors"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
	unix "github.com/jean2/jean2/internal/xunix"
)

// statAt describes name in dirfd, not following a final symlink; the creation time falls
// back to the modification time.
func statAt(dirfd int, name string) (fileStat, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return fileStat{}, err
	}
	sec, nsec := st.Mtim.Unix()
	mtime := time.Unix(sec, nsec)
	return fileStat{mode: fsutil.ModeOf(uint32(st.Mode)), size: st.Size, mtime: mtime, btime: mtime}, nil
}

// renameAt renames with renameat; without renameat2, noReplace is checked just before,
// which is not atomic.
func renameAt(fromDir int, from string, toDir int, to string, noReplace bool) error {
	if noReplace {
		if _, err := statAt(toDir, to); err == nil {
			return unix.EEXIST
		} else if !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return retryEINTR(func() error { return unix.Renameat(fromDir, from, toDir, to) })
}
