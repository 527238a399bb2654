//go:build !unix

package builtin

import (
	"os"
	"os/exec"
)

func shellOwnGroup(*exec.Cmd) {}

func shellKillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func shellSignal(*os.ProcessState) (int, bool) { return 0, false }
