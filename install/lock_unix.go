//go:build unix

package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockName keeps two jean2 processes from installing or removing the same tool at once.
// The lock lives in the cache, not the tools folder, so a watcher never sees it. It waits
// while another process holds it, until ctx ends.
func lockName(ctx context.Context, cacheDir, name string, waiting func()) (func(), error) {
	dir := filepath.Join(cacheDir, "install-locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	told := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another install of %s: %w", name, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
