//go:build !(linux && (amd64 || arm64))

package sandbox

// helperMain: the namespace probe exists only where the launcher refuses namespaces.
func helperMain() {}
