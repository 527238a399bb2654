//go:build darwin

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// This file is compiled for macOS and checked by go vet there, but no test of it runs:
// there is no Mac among the machines that test jean2 (docs/security.md says so).

// LandlockABI reports that there is no Landlock outside Linux.
func LandlockABI() (int, error) { return 0, errors.New("Landlock exists only on Linux") }

// SeatbeltAvailable reports whether /usr/bin/sandbox-exec is there to run workers under a
// profile. It is deprecated by Apple but present on every macOS release (Codex and
// Anthropic's sandbox-runtime use it too).
func SeatbeltAvailable() error {
	fi, err := os.Stat(SeatbeltExec)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", SeatbeltExec, err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", SeatbeltExec)
	}
	return nil
}

// enter sets the limits Darwin has (RLIMIT_FSIZE, RLIMIT_NPROC, RLIMIT_DATA, which macOS
// does not enforce for every allocation), closes inherited descriptors above the protocol's
// at exec, and executes the program through sandbox-exec with the spec's profile. A spec
// without a profile executes the program as it is (sandbox mode node or off).
func enter(spec Spec, program string, args []string) error {
	if spec.Landlock {
		return errors.New("Landlock exists only on Linux")
	}
	if len(spec.SealedDirs) > 0 || spec.View != nil {
		return errNoMountSeal
	}
	if spec.NetNS != "" {
		return errors.New("network namespaces exist only on Linux")
	}
	markCloseOnExec(spec.ExtraFDs)
	limits := []struct {
		res int
		mb  int
	}{{unix.RLIMIT_FSIZE, spec.FileMB}, {unix.RLIMIT_DATA, spec.DataMB}}
	for _, l := range limits {
		if l.mb > 0 {
			v := uint64(l.mb) << 20
			if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
				return fmt.Errorf("set resource limit %d: %w", l.res, err)
			}
		}
	}
	if spec.NProcExtra > 0 && os.Getuid() != 0 {
		if err := limitProcesses(spec.NProcExtra); err != nil {
			return err
		}
	}
	argv := append([]string{program}, args...)
	path := program
	if spec.Seatbelt != nil {
		if err := SeatbeltAvailable(); err != nil {
			return fmt.Errorf("Seatbelt: %w", err)
		}
		path = SeatbeltExec
		argv = append([]string{SeatbeltExec}, spec.Seatbelt.Args(program, args)...)
	}
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("execute %s: %w", path, err)
	}
	return nil
}

// markCloseOnExec sets close-on-exec on every descriptor above the standard streams and
// the extra ones the program receives, so that nothing else the launcher inherited passes
// to the worker. Darwin has no close_range; descriptors are tried up to the soft limit
// (bounded, since a huge limit would make this slow).
func markCloseOnExec(extra int) {
	var lim unix.Rlimit
	max := 4096
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(max) {
		max = int(lim.Cur)
	}
	for fd := 3 + extra; fd < max; fd++ {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	}
}

// limitProcesses sets RLIMIT_NPROC to the processes the user runs now plus extra. The
// kernel counts every process of the user (a desktop session runs hundreds), so the cap is
// relative to that count, and never above the hard limit in force.
func limitProcesses(extra int) error {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid())
	if err != nil {
		return fmt.Errorf("count the user's processes for RLIMIT_NPROC: %w", err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		return fmt.Errorf("read RLIMIT_NPROC: %w", err)
	}
	v := min(uint64(len(procs)+extra), lim.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: v, Max: v}); err != nil {
		return fmt.Errorf("set RLIMIT_NPROC to %d: %w", v, err)
	}
	return nil
}
