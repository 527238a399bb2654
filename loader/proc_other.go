//go:build !unix

package loader

import "os/exec"

func ownProcessGroup(cmd *exec.Cmd) {}

func endProcessGroup(cmd *exec.Cmd) {}
