//go:build linux

package worker

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExit blocks until the process has exited without reaping it, so its process group can
// still be signalled safely: while the zombie exists its pid (the group id) is not reused.
// It reports whether it could.
func waitExit(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}
