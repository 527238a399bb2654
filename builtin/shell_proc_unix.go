//go:build unix

package builtin

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup puts the command in a process group of its own (the launcher leads it, and
// bash, which it executes or starts, is in it), so that what bash starts can be ended with
// it. It keeps the rest of SysProcAttr (the launcher's pid namespace).
func shellOwnGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup ends the command's process group. What left the group (setsid) is ended by
// its cgroup where there is one (shellSandbox.release).
func shellKillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// signalOf is the signal that ended a process, if one did.
func shellSignal(st *os.ProcessState) (int, bool) {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal()), true
	}
	return 0, false
}
