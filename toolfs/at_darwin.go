//go:build darwin

package toolfs

import (
	"time"

	"github.com/jean2/jean2/internal/fsutil"
	"golang.org/x/sys/unix"
)

// statAt describes name in dirfd, not following a final symlink, with the creation time
// macOS keeps (st_birthtimespec, Btim in x/sys), as Node's stat().birthtime gives it.
func statAt(dirfd int, name string) (fileStat, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return fileStat{}, err
	}
	mtime := time.Unix(st.Mtim.Unix())
	btime := mtime
	if st.Btim.Sec != 0 || st.Btim.Nsec != 0 {
		btime = time.Unix(st.Btim.Unix())
	}
	return fileStat{mode: fsutil.ModeOf(uint32(st.Mode)), size: st.Size, mtime: mtime, btime: btime}, nil
}

// renameAt renames with renameatx_np; noReplace is its RENAME_EXCL, which fails with EEXIST
// rather than replace what stands at the destination, atomically (as Linux's
// RENAME_NOREPLACE).
func renameAt(fromDir int, from string, toDir int, to string, noReplace bool) error {
	var flags uint32
	if noReplace {
		flags = unix.RENAME_EXCL
	}
	return retryEINTR(func() error { return unix.RenameatxNp(fromDir, from, toDir, to, flags) })
}
