//go:build !unix

package host

import (
	"os"
	"path/filepath"
)

// mcpCacheDir makes a server's cache folder; where there is no confinement (Windows) there
// is no server to race with.
func mcpCacheDir(base, key string) (string, error) {
	dir := filepath.Join(base, key)
	return dir, os.MkdirAll(filepath.Join(dir, "tmp"), 0o700)
}
