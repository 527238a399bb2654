//go:build !linux

package worker

import (
	"syscall"
	"time"
)

// cpuTime is not read here: only the age of calls in flight makes a pool grow.
func cpuTime(int) (time.Duration, bool) { return 0, false }

// waitExit cannot wait without reaping here, so leftovers of the worker's group are not
// signalled after it exits.
func waitExit(int) bool { return false }

// setDeathSignal does nothing where the kernel has no parent-death signal; a worker then
// notices its host is gone when its input ends.
func setDeathSignal(*syscall.SysProcAttr) {}
