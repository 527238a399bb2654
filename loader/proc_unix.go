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
