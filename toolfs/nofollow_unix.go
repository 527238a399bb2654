//go:build unix && !linux

package toolfs

import "syscall"

const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)
