//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runInit is the end of the launcher when it is the init of a pid namespace of its own
// (pidns_linux.go): it starts program as its child, from the calling thread, which holds
// every restriction (Landlock, seccomp, the capability drop: all of them per thread; the
// limits are the process's), passes on the signals the host sends, reaps whatever is
// orphaned in the namespace, and ends as the program ended. When it exits the kernel kills
// the rest of the namespace. It returns the exit code to end with, or an error when the
// program could not be started.
func runInit(program string, args []string, extraFDs, dataMB int) (int, error) {
	// Nothing in the namespace may trace it or read its /proc entries: its other threads
	// hold none of the restrictions. An exec makes the program dumpable again.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("make the launcher non-dumpable: %w", err)
	}
	sigs := catchSignals()
	pid, err := startWithDataLimit(program, args, extraFDs, dataMB)
	if err != nil {
		return 0, err
	}
	// The program has its copies; the protocol's pipes and standard output must reach their
	// end when the program closes them. Standard error stays for the launcher's last words.
	for fd := 0; fd < 3+extraFDs; fd++ {
		if fd != 2 {
			_ = unix.Close(fd)
		}
	}
	var mu sync.Mutex
	reaped := false
	go func() {
		for s := range sigs {
			mu.Lock()
			if forwarded(s) && !reaped { // once reaped the pid may be another process's
				_ = unix.Kill(pid, s.(syscall.Signal))
			}
			mu.Unlock()
		}
	}()
	ws, err := reapUntil(pid, func() { mu.Lock(); reaped = true; mu.Unlock() })
	if err != nil {
		return 0, err
	}
	return exitAs(ws), nil
}

// startWithDataLimit starts the program as the init's child with RLIMIT_DATA at dataMB from
// its first instruction, as if the launcher had become it: a runtime sizes its reservations
// to the limit it starts under (Bun aborted when the limit came after its start). Only the
// soft limit is lowered around the fork — the init may raise it back, and its Go runtime
// needs room for its next thread — and the program's hard limit is lowered to it as soon as
// it exists (the memory cgroup holds meanwhile).
func startWithDataLimit(program string, args []string, extraFDs, dataMB int) (int, error) {
	var own unix.Rlimit
	n := uint64(dataMB) << 20
	if dataMB > 0 {
		if err := unix.Getrlimit(unix.RLIMIT_DATA, &own); err != nil {
			return 0, fmt.Errorf("read RLIMIT_DATA: %w", err)
		}
		if n > own.Max {
			n = own.Max
		}
		if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: n, Max: own.Max}); err != nil {
			return 0, fmt.Errorf("set the memory limit (RLIMIT_DATA %d MiB): %w", dataMB, err)
		}
	}
	pid, err := syscall.ForkExec(program, append([]string{program}, args...), &syscall.ProcAttr{
		Env:   os.Environ(), // the host's environment for the launcher, passed on unchanged
		Files: inheritedFiles(extraFDs),
	})
	if dataMB > 0 {
		_ = unix.Setrlimit(unix.RLIMIT_DATA, &own)
	}
	if err != nil {
		return 0, fmt.Errorf("execute %s: %w", program, err)
	}
	if dataMB > 0 {
		if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: n, Max: n}, nil); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return 0, fmt.Errorf("set the memory limit (RLIMIT_DATA %d MiB) of %s: %w", dataMB, program, err)
		}
	}
	return pid, nil
}

// catchSignals has every signal the launcher does not ignore delivered to the channel it
// returns, from before the program starts so that none is missed. An init receives only the
// signals it handles, and Go's own handling of a signal sent with kill (SIGILL, SIGTRAP,
// SIGSYS…) would end it: caught, each is either passed on or dropped, so a process of the
// namespace that signals the init signals the program at most. What the launcher ignores
// (SIGXFSZ, setLimits; whatever it inherited ignored) stays ignored, for the program too.
func catchSignals() chan os.Signal {
	sigs := make(chan os.Signal, 16)
	for n := syscall.Signal(1); n < 32; n++ {
		if n != syscall.SIGKILL && n != syscall.SIGSTOP && !signal.Ignored(n) {
			signal.Notify(sigs, n)
		}
	}
	return sigs
}

// forwarded reports whether the init passes s on to the program: the signals a shell or a
// supervisor sends to stop, suspend or notify a program. Faults, SIGCHLD and SIGURG (Go's
// preemption) are the init's own.
func forwarded(s os.Signal) bool {
	switch s {
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2,
		syscall.SIGALRM, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
		syscall.SIGABRT, syscall.SIGVTALRM, syscall.SIGIO, syscall.SIGPWR, syscall.SIGXCPU:
		return true
	}
	return false
}

// inheritedFiles are the descriptors the program receives, each at its own number, as it
// did when the launcher executed it in place: the standard streams and the protocol's
// pipes. One the host left closed stays closed.
func inheritedFiles(extraFDs int) []uintptr {
	files := make([]uintptr, 3+extraFDs)
	for fd := range files {
		files[fd] = uintptr(fd)
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			files[fd] = ^uintptr(0) // ForkExec closes it in the child
		}
	}
	return files
}

// reapUntil waits for every child of the init, the orphans the namespace hands it
// included, until program (pid) ends; gone is called once it has been reaped.
func reapUntil(pid int, gone func()) (unix.WaitStatus, error) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, fmt.Errorf("wait for the program: %w", err)
		case got == pid:
			gone()
			return ws, nil
		}
	}
}

// exitAs ends the launcher as the program ended, where it can: with its exit code, or by
// SIGKILL. An init cannot die of any other signal it sends itself (the kernel ignores them
// for a namespace's init): a program killed by signal N ends the launcher with 128+N, as a
// shell reports it.
func exitAs(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled() && ws.Signal() == unix.SIGKILL:
		killSelf()
		return 128 + int(unix.SIGKILL) // not reached
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return ExitLaunchFailed
}

// killSelf ends the launcher by SIGKILL. A namespace's init ignores a plain kill from
// itself, but not one that says it comes from the kernel (SI_KERNEL), which a process may
// send to itself.
func killSelf() {
	var info [128]byte                                        // siginfo_t
	*(*int32)(unsafe.Pointer(&info[0])) = int32(unix.SIGKILL) // si_signo
	*(*int32)(unsafe.Pointer(&info[8])) = 0x80                // si_code: SI_KERNEL
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGQUEUEINFO, uintptr(os.Getpid()), uintptr(unix.SIGKILL), uintptr(unsafe.Pointer(&info[0])), 0, 0, 0)
}
