//go:build !linux

package builtin_test

import "errors"

// mountIdleSessionTemp: session tmpfs mounts are Linux's.
func mountIdleSessionTemp(string) (func(), error) {
	return nil, errors.New("session tmpfs mounts are made on Linux only")
}
