//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// A launcher started in a pid namespace of its own is that namespace's init (pid 1): it
// starts the program as its child once every restriction holds (pidinit_linux.go). The host
// gives it the parent-death signal SIGKILL, so when jean2 dies, even by kill -9, the
// launcher dies, and with an init the kernel kills every process of its namespace: a
// child that made a session of its own, or forked twice, dies too. Without a namespace
// (PidNSAvailable says why) the launcher becomes the program, which dies with jean2 by its
// parent-death signal; what it started lives on until the next jean2 sweeps the cgroups.

// PidNSAvailable reports whether this process can start children in a new pid namespace
// (it needs CAP_SYS_ADMIN). It tries on a thread of its own, which goes back to the host's
// namespace for its children before it runs anything else.
func PidNSAvailable() error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/pid_for_children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("pid namespace: %w", err)
			return
		}
		defer unix.Close(home)
		err = unix.Unshare(unix.CLONE_NEWPID)
		if serr := unix.Setns(home, unix.CLONE_NEWPID); serr != nil {
			// Its children would be born in the new namespace: the thread ends with the
			// goroutine (locked) rather than start anyone else's.
			ch <- fmt.Errorf("pid namespace: return to the host's: %w", serr)
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("unshare(CLONE_NEWPID): %w", err)
		}
		ch <- err
	}()
	return <-ch
}

// InPidNamespace has cmd (a launcher's) start in a pid namespace of its own, killed when
// the thread that starts it exits (with jean2). It keeps what cmd's SysProcAttr already
// says (a process group of its own).
func InPidNamespace(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// InUserNamespace has cmd (a launcher's, started by a host that is not root) start in a user
// namespace of its own in which it is the same user and group (no other id is mapped, and
// setgroups is refused): there it holds the capabilities to build its view (a mount
// namespace) and to be a pid namespace's init, over nothing but what it made, and drops
// them with the rest before it executes the program.
func InUserNamespace(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= syscall.CLONE_NEWUSER
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	// An ordinary user keeps no capability across execve, not even in its own namespace:
	// these two are carried as ambient ones, for the mounts of the view and the drop of
	// the bounding set, and cleared by the launcher with every other (caps_linux.go).
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
}

// hostPid is the launcher's pid as the host sees it (the cgroups it makes are named after
// it): in a namespace of its own, getpid says 1, but /proc is still the host's mount.
func hostPid() int {
	if os.Getpid() != 1 {
		return os.Getpid()
	}
	if link, err := os.Readlink("/proc/self"); err == nil {
		if pid, err := strconv.Atoi(link); err == nil {
			return pid
		}
	}
	return os.Getpid()
}
