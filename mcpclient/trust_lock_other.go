//go:build !unix

package mcpclient

// lockFile is a no-op where flock is missing: this process's mutex still orders its own.
func lockFile(string) (func(), error) { return func() {}, nil }
