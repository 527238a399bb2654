//go:build !unix

package rawio

import "syscall"

// Elsewhere nothing is read raw: polled finds no descriptor non-blocking.

func read(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EINVAL }
func write(uintptr, []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
func isNonblocking(uintptr) bool                 { return false }
