//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// enter applies spec to the calling process and thread, then executes program: in place,
// or as its child when the launcher is the init of a pid namespace (pidinit_linux.go). It
// returns only on failure.
func enter(spec Spec, program string, args []string) error {
	// Landlock holds the thread that restricts itself; the exec (or the fork of the init's
	// child) must happen on that thread. It is never unlocked: the process image is
	// replaced or the launcher exits.
	runtime.LockOSThread()
	if spec.Seatbelt != nil {
		return fmt.Errorf("the spec asks for a Seatbelt profile, which exists only on macOS")
	}

	ppid, deathSig := os.Getppid(), deathSignal()
	// Before anything is opened: only the standard streams and the protocol's pipes pass.
	if err := closeInherited(spec.ExtraFDs); err != nil {
		return err
	}
	if err := joinCgroups(spec); err != nil {
		return err
	}
	if err := enterNetwork(spec); err != nil { // netns_linux.go: while setns is allowed, before Landlock
		return err
	}
	if err := enterMounts(spec); err != nil {
		return err
	}
	nproc := 0
	if spec.PidsCgroup == "" && spec.NProcExtra > 0 && os.Getuid() != 0 {
		nproc = userTasks(os.Getuid()) + spec.NProcExtra // /proc is closed once Landlock holds
	}
	if spec.Landlock {
		if _, err := restrictSelf(initProcRules(spec)); err != nil {
			return fmt.Errorf("apply Landlock: %w", err)
		}
	}
	if err := refusePowers(spec); err != nil {
		return err
	}
	if err := keepDeathSignal(deathSig, ppid); err != nil {
		return err
	}
	return execute(spec, program, args, nproc)
}

// enterMounts gives the launcher a mount namespace of its own: the view of the machine
// (view_linux.go), or at least the .jean2 folders read-only; before Landlock (which forbids
// mounts to a restricted thread) and the capability drop.
func enterMounts(spec Spec) error {
	if spec.View != nil {
		return buildView(spec.View)
	}
	if len(spec.SealedDirs) > 0 {
		return sealDirs(spec.SealedDirs)
	}
	return nil
}

// refusePowers takes from the process, once Landlock holds, what would let the worker out:
// new namespaces, metadata changes, new processes (NoFork), new privileges and capabilities.
func refusePowers(spec Spec) error {
	// After the launcher's own unshare and setns: from here on no process of the worker makes
	// a namespace (nons_linux.go).
	if err := denyNamespaces(); err != nil {
		return fmt.Errorf("refuse new namespaces: %w", err)
	}
	// Without a view nothing else keeps the metadata of what the worker can see (jean2's
	// token, the user's keys) from changing (metadata_linux.go).
	if err := denyMetadata(spec.View == nil); err != nil {
		return fmt.Errorf("refuse metadata changes: %w", err)
	}
	if spec.NoFork {
		if err := denyProcesses(); err != nil {
			return fmt.Errorf("refuse process creation: %w", err)
		}
	}
	// Capabilities go last, once the cgroups are joined and Landlock's rules are opened with
	// the host's own powers; nothing the worker executes can have them back.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// execute becomes program (or, as the init of a pid namespace, runs it as its child) under
// the spec's resource limits; nproc is the task limit counted before /proc closed.
func execute(spec Spec, program string, args []string, nproc int) error {
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
	asInit := os.Getpid() == 1 && !spec.NoFork
	own := spec
	if asInit {
		// The init goes on running Go after the program starts, and RLIMIT_DATA counts its
		// thread stacks and heap arenas: a new thread would fail (pthread_create: EAGAIN)
		// and end it. That limit is the program's alone (runInit sets it around the fork).
		own.DataMB = 0
	}
	if err := setLimits(own, nproc); err != nil {
		return err
	}
	if asInit {
		// The init of a pid namespace of its own (the host started it so): the program is
		// its child, and the launcher ends as the program did, as it would have had it
		// become the program.
		code, err := runInit(program, args, spec.ExtraFDs, spec.DataMB)
		if err != nil {
			return err
		}
		os.Exit(code)
	}
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fmt.Errorf("execute %s: %w", program, errno)
}

// joinCgroups moves the launcher (so the worker it becomes, and everything that starts)
// into its own groups: the pids one and the memory one, one group when both are in the same
// (unified) folder.
func joinCgroups(spec Spec) error {
	if spec.PidsCgroup != "" && spec.PidsCgroup == spec.MemoryCgroup {
		return joinGroup(spec.PidsCgroup, func(g string) [][2]string {
			return append(pidsLimits(spec.PidsMax), memoryLimits(g, spec.MemoryMaxMB)...)
		})
	}
	if spec.PidsCgroup != "" {
		if err := joinGroup(spec.PidsCgroup, func(string) [][2]string { return pidsLimits(spec.PidsMax) }); err != nil {
			return fmt.Errorf("pids %w", err)
		}
	}
	if spec.MemoryCgroup != "" {
		if err := joinGroup(spec.MemoryCgroup, func(g string) [][2]string { return memoryLimits(g, spec.MemoryMaxMB) }); err != nil {
			return fmt.Errorf("memory %w", err)
		}
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
	if spec.FileMB > 0 {
		ignoreFileSizeSignal()
		n := uint64(spec.FileMB) << 20
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("set the file size limit (RLIMIT_FSIZE %d MiB): %w", spec.FileMB, err)
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

// initProcRules are the spec's rules as the launcher applies them. A rule on /proc/self
// names the folder of the process that opens it; a launcher that becomes the program keeps
// it, but an init starts the program as its child, whose folder is another: without it Bun
// aborts at start (it reads /proc/self/cgroup). In the view /proc is the launcher's own pid
// namespace's, which holds only the init (not dumpable: nothing may read its entries) and
// the program's processes, so the rule becomes /proc itself there.
func initProcRules(spec Spec) []Rule {
	if os.Getpid() != 1 || spec.NoFork || spec.View == nil {
		return spec.Rules
	}
	rules := make([]Rule, 0, len(spec.Rules))
	for _, r := range spec.Rules {
		if r.Path == "/proc/self" || r.Path == "/proc/thread-self" {
			r.Path = "/proc"
		}
		rules = append(rules, r)
	}
	return rules
}
