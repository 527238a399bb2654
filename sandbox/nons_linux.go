//go:build linux && (amd64 || arm64)

package sandbox

import (
	"golang.org/x/sys/unix"
)

// A new user namespace gives the process that makes it every capability inside it, and with
// them the kernel code that only CAP_SYS_ADMIN or CAP_NET_ADMIN reaches (namespaced mounts,
// netfilter, traffic control): the attack surface a worker without capabilities otherwise
// lacks. Mount, network and other namespaces need such a capability or come with a user
// namespace. So every worker (childProcess approved or not) and everything it starts is
// refused: unshare with any CLONE_NEW* flag, clone with any, and setns, fail with EPERM.
// clone3 passes its flags in memory, which seccomp cannot read: it fails with ENOSYS, and
// the C libraries (glibc, musl), Go and the runtimes then use clone, whose flags the filter
// sees. The launcher's own unshare (its mount namespace, mountns_linux.go) and setns (its
// network namespace) happen before it installs this filter.

// namespaceFlags are the clone and unshare flags that make a namespace. CLONE_NEWTIME
// (0x80) is only an unshare (and clone3) flag: in clone's flags those bits are the exit
// signal.
const (
	namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNamespaceFlags = namespaceFlags | unix.CLONE_NEWTIME
)

// noNamespacesFilter builds the program (offsets of struct seccomp_data as in nofork_linux.go).
func noNamespacesFilter() []unix.SockFilter {
	deny := bpfStmt(ret, seccompRetErrno|uint32(unix.EPERM))
	allow := bpfStmt(ret, seccompRetAllow)
	return append(nativeCallsOnly(deny),
		bpfJump(jeq, uint32(unix.SYS_SETNS), 0, 1),
		deny,
		bpfJump(jeq, uint32(unix.SYS_UNSHARE), 0, 4),
		bpfStmt(ld, 16), // unshare's flags (low 32 bits)
		bpfJump(jset, unshareNamespaceFlags, 0, 1),
		deny,
		allow,
		bpfJump(jeq, uint32(unix.SYS_CLONE), 0, 4),
		bpfStmt(ld, 16), // clone's flags (low 32 bits)
		bpfJump(jset, namespaceFlags, 0, 1),
		deny,
		allow,
		bpfJump(jeq, uint32(unix.SYS_CLONE3), 0, 1),
		bpfStmt(ret, seccompRetErrno|uint32(unix.ENOSYS)),
		allow,
	)
}

// denyNamespaces installs the filter on the calling thread; the exec that follows passes it
// on.
func denyNamespaces() error { return installFilter(noNamespacesFilter(), "against new namespaces") }
