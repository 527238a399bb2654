//go:build unix

package rawio

import "syscall"

func isNonblocking(fd uintptr) bool {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	return errno == 0 && flags&syscall.O_NONBLOCK != 0
}

// yield gives the CPU to another thread that is ready to run on it, if there is one.
func yield() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}
