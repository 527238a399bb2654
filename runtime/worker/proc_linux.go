//go:build linux

package worker

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime is how long the worker's main thread, where a JavaScript worker runs its tool's
// code, has had work: the time it ran plus the time it waited to run (the first two fields
// of /proc/PID/schedstat, in nanoseconds). Waiting counts so that a busy worker on a
// machine busy with other things still counts as busy.
func cpuTime(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(raw)
	if len(f) < 2 {
		return 0, false
	}
	ran, err1 := strconv.ParseInt(string(f[0]), 10, 64)
	waited, err2 := strconv.ParseInt(string(f[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ran + waited), true
}

// waitExit blocks until the process has exited without reaping it, so its process group can
// still be signalled safely: while the zombie exists its pid (the group id) is not reused.
// It reports whether it could.
func waitExit(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}

// setDeathSignal has the kernel kill a worker whose host died: a worker stuck in a tool's
// endless loop never reads the end of its input. Linux sends it when the thread that started
// the worker exits, which in Go happens only to a thread a goroutine locked and left; such a
// worker would die early and be replaced like any crashed one.
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
