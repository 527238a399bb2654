//go:build !(linux && (amd64 || arm64))

package sandbox

// helperMain: the namespace and socket probes exist only where the launcher has seccomp
// filters.
func helperMain() {}
