//go:build !unix

package mcpserver

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// readBeneath reads the file rel below root, refusing a link in its place, at most limit
// bytes. (Without openat, a link in a folder above it is not caught.)
func readBeneath(root, rel string, limit int64) ([]byte, error) {
	p := filepath.Join(root, rel)
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is longer than %d bytes", p, limit)
	}
	return data, nil
}
