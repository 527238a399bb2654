//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// enter applies spec to the calling process and thread, then executes program. It returns
// only on failure.
func enter(spec Spec, program string, args []string) error {
	// Landlock holds the thread that restricts itself; the exec must happen on that thread.
	// It is never unlocked: the process image is replaced or the launcher exits.
	runtime.LockOSThread()
	if err := enterNetwork(spec); err != nil {
		return err
	}

	if spec.PidsCgroup != "" {
		if err := joinPidsCgroup(spec.PidsCgroup, spec.PidsMax); err != nil {
			return err
		}
	}
	nproc := 0
	if spec.PidsCgroup == "" && spec.NProcExtra > 0 && os.Getuid() != 0 {
		nproc = userTasks(os.Getuid()) + spec.NProcExtra // /proc is closed once Landlock holds
	}
	if spec.Landlock {
		if _, err := restrictSelf(spec.Rules); err != nil {
			return fmt.Errorf("apply Landlock: %w", err)
		}
	}
	if spec.NoFork {
		if err := denyProcesses(); err != nil {
			return fmt.Errorf("refuse process creation: %w", err)
		}
	}
	// Everything execve needs is made before the memory limit is set: the launcher's own Go
	// runtime must not be the one that meets it.
	argv0, err := unix.BytePtrFromString(program)
	if err != nil {
		return fmt.Errorf("execute %s: %w", program, err)
	}
	argv, err := cStrings(append([]string{program}, args...))
	if err != nil {
		return fmt.Errorf("execute %s: %w", program, err)
	}
	// The environment is the one the host gave the launcher, passed on unchanged.
	envv, err := cStrings(os.Environ())
	if err != nil {
		return fmt.Errorf("execute %s: %w", program, err)
	}
	if err := setLimits(spec, nproc); err != nil {
		return err
	}
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fmt.Errorf("execute %s: %w", program, errno)
}

// joinPidsCgroup makes the worker's own group under parent, caps its tasks and moves the
// launcher (so the worker it becomes, and everything that starts) into it.
func joinPidsCgroup(parent string, max int) error {
	dir := filepath.Join(parent, "w-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("pids cgroup %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		return fmt.Errorf("pids cgroup %s: set pids.max: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("pids cgroup %s: join: %w", dir, err)
	}
	return nil
}

func setLimits(spec Spec, nproc int) error {
	// A crashing worker leaves no core file: its memory may hold a tool's secrets.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fmt.Errorf("set RLIMIT_CORE: %w", err)
	}
	if nproc > 0 {
		n := uint64(nproc)
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("set RLIMIT_NPROC %d: %w", n, err)
		}
	}
	if spec.DataMB > 0 {
		n := uint64(spec.DataMB) << 20
		if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("set the memory limit (RLIMIT_DATA %d MiB): %w", spec.DataMB, err)
		}
	}
	return nil
}

// userTasks counts the threads of every process of uid, which is what the kernel compares
// with RLIMIT_NPROC.
func userTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var owner, threads int = -1, 0
		for _, line := range strings.Split(string(data), "\n") {
			switch {
			case strings.HasPrefix(line, "Uid:"):
				if f := strings.Fields(line); len(f) > 1 {
					owner, _ = strconv.Atoi(f[1])
				}
			case strings.HasPrefix(line, "Threads:"):
				if f := strings.Fields(line); len(f) > 1 {
					threads, _ = strconv.Atoi(f[1])
				}
			}
		}
		if owner == uid {
			n += threads
		}
	}
	return n
}

// cStrings makes the NULL-terminated array of C strings execve takes.
func cStrings(ss []string) ([]*byte, error) {
	out := make([]*byte, len(ss)+1)
	for i, s := range ss {
		p, err := unix.BytePtrFromString(s)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}
