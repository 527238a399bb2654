//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

// PidNSAvailable reports that there are no pid namespaces here.
func PidNSAvailable() error { return errors.New("pid namespaces exist only on Linux") }

// InPidNamespace does nothing where there are no pid namespaces.
func InPidNamespace(*exec.Cmd) {}

// InUserNamespace does nothing where there are no user namespaces.
func InUserNamespace(*exec.Cmd) {}
