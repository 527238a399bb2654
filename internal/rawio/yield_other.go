//go:build !linux

package rawio

// yield is a no-op where package syscall has no sched_yield; a poll then yields only to
// goroutines.
func yield() {}
