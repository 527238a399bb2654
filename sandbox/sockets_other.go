//go:build linux && !(amd64 || arm64)

package sandbox

// allowSockets has no filter for this architecture: every socket family stays open to
// workers here, pathname UNIX sockets and vsock included (see sockets_linux.go).
func allowSockets(unixSockets bool) error { return nil }

// denyNamespaces has no filter for this architecture: workers here may make user
// namespaces (see nons_linux.go).
func denyNamespaces() error { return nil }

// denyMetadata has no filter for this architecture: set-ID bits and, without a view,
// metadata changes stay open to workers here (see metadata_linux.go).
func denyMetadata(bool) error { return nil }
