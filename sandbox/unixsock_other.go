//go:build linux && !(amd64 || arm64)

package sandbox

// denyUnixSockets has no filter for this architecture: pathname UNIX sockets stay open to
// workers here (see unixsock_linux.go).
func denyUnixSockets() error { return nil }

// denyNamespaces has no filter for this architecture: workers here may make user
// namespaces (see nons_linux.go).
func denyNamespaces() error { return nil }

// denyMetadata has no filter for this architecture: set-ID bits and, without a view,
// metadata changes stay open to workers here (see metadata_linux.go).
func denyMetadata(bool) error { return nil }
