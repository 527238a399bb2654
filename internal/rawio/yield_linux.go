package rawio

import "syscall"

// yield gives the CPU to another thread that is ready to run on it, if there is one.
func yield() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}
