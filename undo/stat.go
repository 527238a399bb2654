package undo

import (
	"github.com/jean2/jean2/internal/fsutil"
	unix "github.com/jean2/jean2/internal/xunix"
)

// keyOf is the part of a stat result that changes whenever a file's content, mode or
// identity does: ctime moves on every write and chmod and cannot be set back by a program.
// Linux and Darwin name the fields alike in x/sys (Mtim, Ctim), though Darwin's own headers
// call them st_mtimespec and st_ctimespec.
func keyOf(st *unix.Stat_t) statKey {
	return statKey{
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
		ino:   st.Ino,
		dev:   uint64(st.Dev), //nolint:unconvert // the type of Dev differs between architectures
		mode:  fsutil.ModeOf(uint32(st.Mode)),
	}
}
