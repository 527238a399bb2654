//go:build !linux || !(amd64 || arm64)

package sandbox

import "errors"

// CanDenyProcesses reports whether this build can refuse process creation to a worker.
func CanDenyProcesses() bool { return false }

func denyProcesses() error {
	return errors.New("refusing process creation needs seccomp on linux/amd64 or linux/arm64")
}
