package pgtest

import (
	"os"
	"syscall"
)

func sysProcAttr(*identity, bool) *syscall.SysProcAttr { return nil }

func killGroup(p *os.Process) { _ = p.Kill() }
