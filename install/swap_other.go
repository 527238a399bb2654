//go:build !linux

package install

// exchange is not available here; the swap uses two renames.
func exchange(a, b string) (bool, error) { return false, nil }
