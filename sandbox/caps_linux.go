//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A host that runs as root (the usual case in a container) would hand its workers root's
// capabilities: a raw packet socket sees the loopback traffic of every process, sethostname
// renames the machine, CAP_DAC_OVERRIDE reads any user's files, CAP_SETUID becomes any
// user. The launcher drops every capability before it executes the runtime.
//
// The worker keeps the host's uid. Switching to an unprivileged uid would lose the worker
// its workspace, which a root host's user owns as root; uid 0 without capabilities reaches
// only what file modes grant root as owner (its own files), and Landlock narrows that to the
// worker's rules. Without CAP_DAC_OVERRIDE, a file of another user is reached only through
// the permission bits that user gave everyone.

// Securebits (linux/securebits.h), which x/sys/unix does not name.
const (
	secbitNoroot                = 1 << 0
	secbitNorootLocked          = 1 << 1
	secbitNoSetuidFixup         = 1 << 2
	secbitNoSetuidFixupLocked   = 1 << 3
	secbitKeepCapsLocked        = 1 << 5
	secbitNoCapAmbientRaise     = 1 << 6
	secbitNoCapAmbientRaiseLock = 1 << 7
	lockedSecurebits            = secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked | secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLock
	capSetpcap                  = 8
)

// dropCapabilities empties the calling thread's capability sets for good: the bounding set
// (so no exec can bring one back), the ambient set, and the permitted, effective and
// inheritable sets; and locks the securebits so that uid 0 gains nothing at exec, a change
// of uid restores nothing and nothing can be raised again. A process without CAP_SETPCAP
// (a host that is not root) cannot touch the bounding set or the securebits; it has nothing
// to drop there, and no_new_privs keeps an exec from adding anything. The caller holds its
// OS thread locked: capabilities belong to a thread, and the exec that follows carries the
// calling thread's.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Effective&(1<<capSetpcap) != 0 {
		// The kernel answers EINVAL past its last capability.
		for c := 0; c < 64; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				if errors.Is(err, unix.EINVAL) && c > 0 {
					break
				}
				return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
			}
		}
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
			return fmt.Errorf("lock the securebits: %w", err)
		}
	}
	// Linux before 4.3 has no ambient set (EINVAL): nothing to clear.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	// Check rather than trust: a worker must not start with a capability.
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return fmt.Errorf("capabilities remain after capset: %+v", data)
		}
	}
	return nil
}

// keepDeathSignal restores the parent-death signal the host set (the kernel clears it when
// a thread's credentials change in some ways) and makes sure the host did not die in the
// meantime, since the signal is only sent for a death that happens after it is set.
func keepDeathSignal(sig int, ppid int) error {
	if sig == 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(sig), 0, 0, 0); err != nil {
		return fmt.Errorf("set the parent-death signal: %w", err)
	}
	if os.Getppid() != ppid {
		return errors.New("the host exited while the worker started")
	}
	return nil
}

// deathSignal reads the parent-death signal the launcher was started with (0 for none).
func deathSignal() int {
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		return 0
	}
	return int(sig)
}

// closeInherited marks every descriptor above 2+keep close-on-exec, so that the program
// receives only its standard streams and the keep descriptors from 3 on that the host
// passes on purpose (the worker protocol's pipes). A descriptor the host holds without
// close-on-exec — one it inherited from whatever started it, or one a C library opened —
// would otherwise reach the tool, whatever Landlock says: a descriptor is not a path.
func closeInherited(keep int) error {
	first := uint(3 + keep)
	err := unix.CloseRange(first, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("close_range: %w", err)
	}
	// Linux before 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list open descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < int(first) {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("close descriptor %d at exec: %w", fd, err)
		}
	}
	return nil
}

// ignoreFileSizeSignal makes a write past RLIMIT_FSIZE fail with EFBIG instead of killing
// the worker with SIGXFSZ: an ignored signal stays ignored across exec.
func ignoreFileSizeSignal() { signal.Ignore(syscall.SIGXFSZ) }
