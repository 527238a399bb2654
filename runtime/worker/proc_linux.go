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

// setDeathSignal has the kernel kill a worker whose host died: a worker stuck in a tool's
// endless loop never reads the end of its input. Linux sends it when the thread that started
// the worker exits, which in Go happens only to a thread a goroutine locked and left; such a
// worker would die early and be replaced like any crashed one.
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
