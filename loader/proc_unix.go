//go:build unix

package loader

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts the installer in a process group of its own and makes cancelling
// stop the whole group: npm runs package scripts as children, and they must not outlive it.
// SIGTERM first; exec's WaitDelay then kills what is left.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}

// endProcessGroup kills what is left of the installer's process group once it has exited:
// an install script's children that it did not wait for. (A process that made a session of
// its own has left the group; the confinement's cgroup ends it.)
func endProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
