package builtin_test

import "syscall"

// mountIdleSessionTemp mounts a small tmpfs on dir, as the host mounts a session's
// temporary folder; unmount takes it off.
func mountIdleSessionTemp(dir string) (unmount func(), err error) {
	if err := syscall.Mount("bench-idle", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m"); err != nil {
		return nil, err
	}
	return func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) }, nil
}
