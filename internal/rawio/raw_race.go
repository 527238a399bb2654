//go:build unix && race

package rawio

import "syscall"

// Under the race detector the I/O goes through syscall.Read and syscall.Write after all:
// they tell the detector that what one goroutine wrote to a descriptor happens before
// another goroutine's read of it, which a raw system call cannot, and a race build is for
// tests, where the runtime's bookkeeping costs nothing that matters. Everything around the
// calls (the poller, EAGAIN, partial writes) is the same as in a normal build.

func read(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return n, errnoOf(err)
}

func write(fd uintptr, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	n, err := syscall.Write(int(fd), p)
	if n < 0 {
		n = 0
	}
	return n, errnoOf(err)
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	return syscall.EIO
}
