//go:build unix

package mcpserver

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/jean2/jean2/internal/fsutil"
	"golang.org/x/sys/unix"
)

// readBeneath reads the file rel below root, following no link from root on, at most limit
// bytes.
func readBeneath(root, rel string, limit int64) ([]byte, error) {
	dir, err := fsutil.OpenDirBeneath(root, filepath.Dir(rel))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	fd, err := unix.Openat(int(dir.Fd()), filepath.Base(rel), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s below %s: %w", rel, root, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(root, rel))
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Join(root, rel))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is longer than %d bytes", filepath.Join(root, rel), limit)
	}
	return data, nil
}
