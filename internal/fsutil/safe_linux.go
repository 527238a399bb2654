package fsutil

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openBeneath opens rel below dirFd as a folder with openat2, which refuses any symlink and
// any escape in one call; where openat2 is missing (or filtered) it walks the components.
func openBeneath(dirFd int, rel string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(dirFd, rel, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			return walkBeneath(dirFd, rel)
		default:
			return -1, err
		}
	}
}
