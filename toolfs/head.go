package toolfs

import (
	"context"
	"io"
	"os"
	"syscall"

	unix "github.com/jean2/jean2/internal/xunix"
)

// ReadHead reads at most limit bytes from the start of a regular file, under the same
// checks as ReadFile, and returns the file's whole size with them: a preview of a file
// that may be too large to read whole (the web client's file browser, an @path mention).
func (f *FS) ReadHead(ctx context.Context, p string, limit int64) ([]byte, int64, error) {
	// O_NONBLOCK so a named pipe planted in the workspace cannot hang the open.
	fd, t, err := f.openForRead(ctx, "readFile", p, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, 0, err
	}
	file := os.NewFile(uintptr(fd), t.real)
	defer file.Close()
	fi, err := file.Stat()
	switch {
	case err != nil:
		return nil, 0, t.fail(err)
	case fi.IsDir():
		return nil, 0, t.fail(errnoErr("read", t.real, syscall.EISDIR))
	case !fi.Mode().IsRegular():
		return nil, 0, t.fail(ErrNotRegular)
	}
	data, err := readAll(ctx, io.LimitReader(file, limit), min(fi.Size(), limit), limit)
	if err != nil {
		return nil, 0, t.fail(err)
	}
	return data, fi.Size(), nil
}
