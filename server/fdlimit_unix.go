//go:build unix

package server

import "syscall"

// openFileLimit is this process's limit on open files (0 when unknown).
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return rl.Cur
}
