//go:build unix

package mcpclient

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile holds an exclusive lock on path (made when missing) until unlock: two jean2
// processes trusting at once (serve's API and `jean2 mcp trust`) do not lose each other's
// entry in their read-modify-write.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
