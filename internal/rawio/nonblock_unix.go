//go:build unix

package rawio

import "syscall"

func isNonblocking(fd uintptr) bool {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	return errno == 0 && flags&syscall.O_NONBLOCK != 0
}
