//go:build linux && (amd64 || arm64)

package sandbox

import (
	"golang.org/x/sys/unix"
)

// Sockets are held to an allow-list in every launch, whatever the network: a family that is
// not named is refused, so one the kernel gains later (or one this list forgot) is refused
// too. A network namespace holds TCP, UDP and abstract UNIX sockets, but not vsock (on
// Firecracker or WSL2 it reaches the hypervisor's services), and a family's code is kernel
// attack surface a worker has no use for (AF_ALG, AF_PACKET, netlink's audit and uevent).
// The list:
//
//   - socket(AF_INET) and socket(AF_INET6): the egress proxy, and what Node, Bun and Go make
//     for their own use; the namespace (or Landlock's TCP rules) decides what they reach.
//   - socket(AF_NETLINK, …, NETLINK_ROUTE): getifaddrs (glibc's getaddrinfo with
//     AI_ADDRCONFIG, libuv's uv_interface_addresses behind Node's os.networkInterfaces) and
//     Go's net.Interfaces read the addresses through it; changing a route or an address
//     needs CAP_NET_ADMIN, which a worker never holds.
//   - socket(AF_UNIX), unless the network is isolated: a pathname UNIX socket is not part of
//     any network namespace (docker's socket, an ssh agent, another program's control
//     socket), and Landlock governs connect() on one only from ABI 9
//     (LANDLOCK_ACCESS_FS_RESOLVE_UNIX). Then it fails with EACCES.
//   - socketpair(AF_UNIX), always: its two ends reach nothing else, and libuv (Node's
//     child-process stdio), Bun's spawn and Python's multiprocessing make one. The kernel
//     makes a pair of no other family that matters, but asking may load a family's module.
//
// Every other family fails with EAFNOSUPPORT, which programs take for "not built into this
// kernel" and fall back from. io_uring, which could make and connect sockets outside
// seccomp's view, answers ENOSYS (runtimes fall back to plain system calls). System calls
// of another ABI fail, so the filter cannot be stepped around with int 0x80 or x32 numbers
// (there socketcall would carry its arguments in memory, where seccomp cannot read them).

// allowSockets installs the filter on the calling thread (the exec that follows passes it
// on); unixSockets says whether socket(AF_UNIX) is allowed.
func allowSockets(unixSockets bool) error {
	return installFilter(socketFilter(unixSockets), "holding sockets to an allow-list")
}

// socketFilter builds the program (offsets of struct seccomp_data as in nofork_linux.go; a
// socket's domain is args[0] at 16, its protocol args[2] at 32, low 32 bits). Jumps only go
// forward, so each block ends in its own verdicts.
func socketFilter(unixSockets bool) []unix.SockFilter {
	allow := bpfStmt(ret, seccompRetAllow)
	unsupported := bpfStmt(ret, seccompRetErrno|uint32(unix.EAFNOSUPPORT))
	unixVerdict := allow
	if !unixSockets {
		unixVerdict = bpfStmt(ret, seccompRetErrno|uint32(unix.EACCES))
	}
	return append(nativeCallsOnly(bpfStmt(ret, seccompRetErrno|uint32(unix.EPERM))),
		bpfJump(jeq, uint32(unix.SYS_IO_URING_SETUP), 0, 1),
		bpfStmt(ret, seccompRetErrno|uint32(unix.ENOSYS)),

		bpfJump(jeq, uint32(unix.SYS_SOCKET), 0, 10), // not socket: to socketpair
		bpfStmt(ld, 16),                     // domain
		bpfJump(jeq, unix.AF_INET, 5, 0),    // allow
		bpfJump(jeq, unix.AF_INET6, 4, 0),   // allow
		bpfJump(jeq, unix.AF_UNIX, 4, 0),    // unixVerdict
		bpfJump(jeq, unix.AF_NETLINK, 0, 4), // unsupported
		bpfStmt(ld, 32),                     // protocol
		bpfJump(jeq, unix.NETLINK_ROUTE, 0, 2),
		allow,
		unixVerdict,
		unsupported,

		bpfJump(jeq, uint32(unix.SYS_SOCKETPAIR), 0, 4), // not socketpair: allow
		bpfStmt(ld, 16), // domain
		bpfJump(jeq, unix.AF_UNIX, 0, 1),
		allow,
		unsupported,

		allow,
	)
}
