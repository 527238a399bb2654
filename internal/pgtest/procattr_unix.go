//go:build unix

package pgtest

import (
	"os"
	"syscall"
)

// sysProcAttr runs a child as id (when not nil). A server child gets its own process group,
// and on Linux the kernel kills it when the test binary dies first.
func sysProcAttr(id *identity, server bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{}
	if id != nil {
		a.Credential = &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid), Groups: []uint32{}}
	}
	if server {
		a.Setpgid = true
		setPdeathsig(a)
	}
	return a
}

// killGroup kills postgres and the backends it started.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
