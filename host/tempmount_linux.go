//go:build linux

package host

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jean2/jean2/internal/rawio"
	"github.com/jean2/jean2/sandbox"
)

// sweepTempFS unmounts the tmpfs mounts beneath root (Layout.Temp) that hosts which are
// gone (killed, crashed) left: their source names a dead host (sandbox.HostName). A tmpfs
// of a host that runs (another jean2 on the same home) is left to it. unmount is how the
// host unmounts (itself, or through its mounter). It returns the folders unmounted.
func sweepTempFS(root string, stale func(source string) bool, unmount func(dir string) error) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	var points []string
	for _, m := range rawio.ParseMountinfo(data) {
		if m.Type == "tmpfs" && strings.HasPrefix(m.Point, root+"/") && stale(m.Source) {
			points = append(points, m.Point)
		}
	}
	var errs []error
	for _, p := range points {
		errs = append(errs, unmount(p))
	}
	return points, errors.Join(errs...)
}

// isTempFS reports whether dir (not through a link) is the root of a tmpfs mount.
func isTempFS(dir string) bool {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	ok, err := sandbox.TempFSRoot(fd)
	return err == nil && ok
}
