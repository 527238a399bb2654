//go:build unix

package toolfs

import (
	"context"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// readOpened reads the regular file open at fd (and closes fd), up to limit bytes. It works
// on the descriptor itself: an os.File made from a non-blocking descriptor asks the kernel
// for its flags and tries to register it with the poller (two more system calls, refused
// for a regular file) before the first read, a fifth of what a small read cost.
func readOpened(ctx context.Context, fd int, path string, limit int64) ([]byte, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, pathErr("fstat", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return nil, errnoErr("read", path, syscall.EISDIR)
	default:
		return nil, ErrNotRegular
	}
	if st.Size > limit {
		return nil, tooLarge(st.Size, limit)
	}
	return readAll(ctx, fdReader{fd}, st.Size, limit)
}

// fdReader reads a descriptor, as io.Reader (0 bytes read is the end).
type fdReader struct{ fd int }

func (r fdReader) Read(p []byte) (int, error) {
	var n int
	err := retryEINTR(func() (err error) { n, err = unix.Read(r.fd, p); return err })
	switch {
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}
