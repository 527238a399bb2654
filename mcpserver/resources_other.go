//go:build !unix

package mcpserver

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/jean2/jean2/internal/fsutil"
)

// readBeneath reads the file rel below root, refusing a link in its place, at most limit
// bytes. (Without openat, a link in a folder above it is not caught.)
func readBeneath(root, rel string, limit int64) ([]byte, error) {
	p := filepath.Join(root, rel)
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return fsutil.ReadLimited(p, limit)
}
