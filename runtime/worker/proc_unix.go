//go:build unix

package worker

import (
	"os/exec"
	"syscall"
)

// Each worker leads a process group of its own, so a signal reaches whatever the tool
// started too, and a terminal's Ctrl-C reaches the host, which stops workers in order.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the worker's process group. Linux does not hand out a pid that
// is still some process group's id, so the group id stays the worker's while any member of
// the group lives.
func signalGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}
