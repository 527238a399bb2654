//go:build !linux

package host

import "errors"

// mountTempFS: a size-limited tmpfs is mounted on Linux only; elsewhere the quota is measured.
func mountTempFS(root, rel, source string, mb int) (bool, error) {
	return false, errors.New("a tmpfs is mounted on Linux only")
}

func unmountTempFS(string) error { return nil }

// ProbeTempFS: no tmpfs quota outside Linux.
func ProbeTempFS() error { return errors.New("a tmpfs is mounted on Linux only") }

// sweepTempFS has no tmpfs to sweep outside Linux.
func sweepTempFS(string, func(string) bool) ([]string, error) { return nil, nil }

func isTempFS(string) bool { return false }
