//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LandlockABI returns the Landlock ABI version the kernel offers, or 0 and why it offers
// none (not built in, or not enabled at boot).
func LandlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0:
		return int(v), nil
	case errno == unix.ENOSYS:
		return 0, errors.New("the kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)")
	case errno == unix.EOPNOTSUPP:
		return 0, errors.New("Landlock is built in but not enabled at boot (add landlock to the lsm= kernel parameter)")
	default:
		return 0, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
}

// Landlock access rights by the ABI version that introduced them.
const (
	fsV1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	// fileRights are the only rights a rule on a file (not a folder) may carry.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS is every file system right the kernel of this ABI can restrict: all of them are
// denied unless a rule grants them.
func handledFS(abi int) uint64 {
	h := uint64(fsV1)
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		h |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return h
}

// openRulePath opens the path of rule r (O_PATH). O_PATH follows symlinks: the rule lands
// on what the path really is; the planner only gives paths it resolved itself. An Exact
// path is first opened refusing any link on the way: when that succeeds it leads to itself
// (checked), with none of the look through /proc that addRule does otherwise (a shell
// command's rules are a few hundred). Refused, or without openat2, it is opened as before
// and addRule finds where it leads, and says so.
func openRulePath(r Rule) (fd int, checked bool, err error) {
	if r.Exact && filepath.IsAbs(r.Path) && filepath.Clean(r.Path) == r.Path {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := unix.Openat2(unix.AT_FDCWD, r.Path, &how)
		if err == nil {
			return fd, true, nil
		}
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return -1, false, err
		}
	}
	fd, err = unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	return fd, false, err
}

// handledScopes are the IPC scopes of this ABI: from 6 on a worker cannot signal a process
// outside its domain (the host, other workers) nor connect to an abstract UNIX socket made
// outside it.
func handledScopes(abi int) uint64 {
	if abi >= 6 {
		return unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	}
	return 0
}

// rights maps an Access to Landlock rights.
func rights(a Access) uint64 {
	var r uint64
	if a&Read != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	}
	if a&List != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_READ_DIR
	}
	if a&Write != 0 {
		// Not MAKE_CHAR or MAKE_BLOCK: a tool has no business making device nodes.
		r |= unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
			unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
			unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	if a&Exec != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_EXECUTE
	}
	if a&Device != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// restrictSelf applies rules to the calling thread with Landlock, so that the program it
// executes next (and everything that program starts) is held to them. The caller must hold
// its OS thread locked from here to the exec. It returns the ABI it applied.
func restrictSelf(rules []Rule) (int, error) {
	abi, err := LandlockABI()
	if err != nil {
		return 0, err
	}
	if abi < 1 {
		return 0, errors.New("Landlock is not available")
	}
	handled := handledFS(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled, Scoped: handledScopes(abi)}
	// Older kernels know a shorter struct; they accept the longer one when its tail is zero.
	size := unsafe.Sizeof(attr)
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return abi, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)

	for _, r := range rules {
		if err := addRule(ruleset, r, handled); err != nil {
			return abi, err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return abi, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return abi, fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return abi, nil
}

func addRule(ruleset int, r Rule, handled uint64) error {
	fd, checked, err := openRulePath(r)
	if err != nil {
		if r.Optional && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) {
			return nil
		}
		return fmt.Errorf("sandbox rule %s: %w", r, err)
	}
	defer unix.Close(fd)
	if r.Exact && !checked {
		// The planner resolved this path: if it now leads elsewhere, something swapped a
		// folder on the way for a link since (a worker, in a folder it may write).
		got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			return fmt.Errorf("sandbox rule %s: see where it leads: %w", r, err)
		}
		if got != r.Path {
			return fmt.Errorf("sandbox rule %s: the path now leads to %s (a folder on the way was replaced by a link since the rule was made): refused", r, got)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("sandbox rule %s: %w", r, err)
	}
	access := rights(r.Access) & handled
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("sandbox rule %s: landlock_add_rule: %w", r, syscall.Errno(errno))
	}
	return nil
}
