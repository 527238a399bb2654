//go:build !(linux && (amd64 || arm64))

package rawio

func stat(path string, follow bool) (Info, error) { return statPortable(path, follow) }
