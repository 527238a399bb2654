//go:build !unix

package toolfs

import (
	"context"
	"os"
	"syscall"
)

// readOpened reads the regular file open at fd (and closes it), up to limit bytes.
func readOpened(ctx context.Context, fd int, path string, limit int64) ([]byte, error) {
	file := os.NewFile(uintptr(fd), path)
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		return nil, errnoErr("read", path, syscall.EISDIR)
	case !fi.Mode().IsRegular():
		return nil, ErrNotRegular
	case fi.Size() > limit:
		return nil, tooLarge(fi.Size(), limit)
	}
	return readAll(ctx, file, fi.Size(), limit)
}
