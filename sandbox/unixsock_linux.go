//go:build linux && (amd64 || arm64)

package sandbox

import (
	"golang.org/x/sys/unix"
)

// A network namespace holds TCP, UDP and abstract UNIX sockets, but not pathname UNIX
// sockets: a worker that can resolve /run/docker.sock, an ssh agent's socket in /tmp or
// another program's control socket connects to it whatever its namespace, and Landlock
// governs connect() on them only from ABI 9 (LANDLOCK_ACCESS_FS_RESOLVE_UNIX). So a worker
// isolated from the network may not make AF_UNIX sockets at all: socket(AF_UNIX, …) fails
// with EACCES. socketpair stays allowed (its two ends reach nothing else; runtimes use it for
// child processes' pipes), and so do the descriptors the worker was given. io_uring, which
// could make and connect sockets outside seccomp's view, answers ENOSYS (runtimes fall back
// to plain system calls). System calls of another ABI fail, so the filter cannot be stepped
// around with int 0x80 or x32 numbers.

// denyUnixSockets installs the filter on the calling thread (the exec that follows passes it
// on).
func denyUnixSockets() error {
	deny := bpfStmt(ret, seccompRetErrno|uint32(unix.EACCES))
	prog := append(nativeCallsOnly(deny),
		bpfJump(jeq, uint32(unix.SYS_IO_URING_SETUP), 0, 1),
		bpfStmt(ret, seccompRetErrno|uint32(unix.ENOSYS)),
		bpfJump(jeq, uint32(unix.SYS_SOCKET), 0, 3),
		bpfStmt(ld, 16), // socket's domain
		bpfJump(jeq, unix.AF_UNIX, 0, 1),
		deny,
		bpfStmt(ret, seccompRetAllow),
	)
	return installFilter(prog, "against UNIX sockets")
}
