//go:build !linux

package worker

// waitExit cannot wait without reaping here, so leftovers of the worker's group are not
// signalled after it exits.
func waitExit(int) bool { return false }
