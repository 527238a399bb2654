//go:build unix && !linux

package fsutil

// openBeneath opens rel below dirFd as a folder, one O_NOFOLLOW component at a time.
func openBeneath(dirFd int, rel string) (int, error) { return walkBeneath(dirFd, rel) }
