//go:build linux

package host

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jean2/jean2/sandbox"
)

// sweepTempFS unmounts the tmpfs mounts beneath root (Layout.Temp) that hosts which are
// gone (killed, crashed) left: their source names a dead host (sandbox.HostName). A tmpfs
// of a host that runs (another jean2 on the same home) is left to it. unmount is how the
// host unmounts (itself, or through its mounter). It returns the folders unmounted.
func sweepTempFS(root string, stale func(source string) bool, unmount func(dir string) error) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional…] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || len(fields) < sep+3 || fields[sep+1] != "tmpfs" {
			continue
		}
		point := unescapeMountinfo(fields[4])
		if strings.HasPrefix(point, root+"/") && stale(unescapeMountinfo(fields[sep+2])) {
			points = append(points, point)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	var errs []error
	for _, p := range points {
		errs = append(errs, unmount(p))
	}
	return points, errors.Join(errs...)
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
