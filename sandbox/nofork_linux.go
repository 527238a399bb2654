//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock decides which files may be executed, but a worker may execute its runtime's
// dynamic loader, and `ld.so /usr/bin/cat` then runs cat (the loader maps it; Landlock does
// not govern mmap). So that a tool without the childProcess permission cannot start a
// process at all, the launcher also installs a seccomp filter: clone may only make threads
// (CLONE_THREAD), fork and vfork fail with EPERM, and clone3 fails with ENOSYS, which makes
// the C library fall back to clone. System calls of another ABI (32-bit or x32 on amd64)
// fail too, so the filter cannot be stepped around.

// CanDenyProcesses reports whether this build can refuse process creation to a worker.
func CanDenyProcesses() bool { return true }

const (
	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000
	x32SyscallBit   = 0x40000000
	cloneThread     = 0x00010000
)

// The BPF instructions the launcher's filters use.
const (
	ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret  = unix.BPF_RET | unix.BPF_K
)

// nativeCallsOnly starts every filter of the launcher: a call of another ABI (32-bit, or
// x32 numbers on amd64) gets deny, so no filter can be stepped around; then it loads the
// system call's number for the rules that follow. Offsets are those of struct seccomp_data
// (nr at 0, arch at 4, args[0] at 16, little-endian).
func nativeCallsOnly(deny unix.SockFilter) []unix.SockFilter {
	return []unix.SockFilter{
		bpfStmt(ld, 4), // arch
		bpfJump(jeq, auditArch, 1, 0),
		deny,           // another ABI
		bpfStmt(ld, 0), // syscall number
		bpfJump(jge, x32SyscallBit, 0, 1),
		deny, // x32 numbers
	}
}

func bpfStmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// noForkFilter builds the program; the offsets are those of struct seccomp_data (nr at 0,
// arch at 4, args[0] at 16, little-endian).
func noForkFilter() []unix.SockFilter {
	deny := bpfStmt(ret, seccompRetErrno|uint32(unix.EPERM))
	prog := append(nativeCallsOnly(deny),
		bpfJump(jeq, uint32(unix.SYS_CLONE3), 0, 1),
		bpfStmt(ret, seccompRetErrno|uint32(unix.ENOSYS)),
		bpfJump(jeq, uint32(unix.SYS_CLONE), 0, 4), // not clone: past the clone checks
		bpfStmt(ld, 16), // clone's flags (low 32 bits)
		bpfJump(jset, cloneThread, 0, 1),
		bpfStmt(ret, seccompRetAllow), // a thread
	)
	prog = append(prog, deny) // clone without CLONE_THREAD: a process
	for _, nr := range forkSyscalls {
		prog = append(prog, bpfJump(jeq, nr, 0, 1), deny)
	}
	return append(prog, bpfStmt(ret, seccompRetAllow))
}

// denyProcesses installs the filter on the calling thread; the exec that follows passes it
// on to the runtime and everything the runtime's threads do.
func denyProcesses() error { return installFilter(noForkFilter(), "against new processes") }

// installFilter installs a seccomp program on the calling thread (with no_new_privs, which
// seccomp requires of a process without CAP_SYS_ADMIN); the launcher's filters stack, and
// the exec that follows passes them all on. what names the filter in an error.
func installFilter(prog []unix.SockFilter, what string) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp filter %s: %w", what, err)
	}
	return nil
}
