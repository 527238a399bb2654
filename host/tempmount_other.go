//go:build !linux

package host

// sweepTempFS has no tmpfs to sweep outside Linux.
func sweepTempFS(string, func(string) bool, func(string) error) ([]string, error) { return nil, nil }

func isTempFS(string) bool { return false }
