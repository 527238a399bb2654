//go:build !linux && !darwin

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// LandlockABI reports that there is no Landlock outside Linux.
func LandlockABI() (int, error) { return 0, errors.New("Landlock exists only on Linux") }

// enter cannot apply file rules here; it refuses a spec that asks for them and otherwise
// executes the program (resource limits are not set).
func enter(spec Spec, program string, args []string) error {
	if spec.Landlock {
		return errors.New("Landlock exists only on Linux")
	}
	if spec.Seatbelt != nil {
		return errors.New("Seatbelt exists only on macOS")
	}
	if len(spec.SealedDirs) > 0 || spec.View != nil {
		return errNoMountSeal
	}
	if err := syscall.Exec(program, append([]string{program}, args...), os.Environ()); err != nil {
		return fmt.Errorf("execute %s: %w", program, err)
	}
	return nil
}
