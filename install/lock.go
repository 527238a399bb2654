package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jean2/jean2/internal/fsutil"
)

// lockName keeps two jean2 processes from installing or removing the same tool at once.
// The lock lives in the cache, not the tools folder, so a watcher never sees it. It waits
// while another process holds it, until ctx ends.
func lockName(ctx context.Context, cacheDir, name string, waiting func()) (func(), error) {
	dir := filepath.Join(cacheDir, "install-locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	unlock, err := fsutil.LockFile(ctx, filepath.Join(dir, name+".lock"), waiting)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("waiting for another install of %s: %w", name, context.Cause(ctx))
	}
	return unlock, err
}
