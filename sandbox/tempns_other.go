//go:build !linux

package sandbox

import "errors"

// EnterTempNamespace: the temporary folders are tmpfs mounts on Linux only.
func EnterTempNamespace() (int, bool) { return 0, false }

func runTempMounter([]string) int { return ExitLaunchFailed }

// TakeTempMounter: no mounter outside Linux.
func TakeTempMounter() *TempMounter { return nil }

var errNoTempFS = errors.New("a tmpfs is mounted on Linux only")

// Mount: outside Linux the temporary folders' quota is measured.
func (m *TempMounter) Mount(root, rel, source string, mb int) (bool, error) {
	return false, errNoTempFS
}

func (m *TempMounter) Unmount(string) error { return nil }

func (m *TempMounter) Probe() error { return errNoTempFS }
