package fsutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	unix "github.com/jean2/jean2/internal/xunix"
)

// LockFile takes an exclusive lock on path (a lock file, made 0600 when missing) that other
// processes and other goroutines of this one respect: flock on Unix, LockFileEx on Windows.
// It waits while another holds it, polling with a growing pause (5 ms to 200 ms) until ctx
// ends; waiting, when not nil, is called once, the first time the lock is found busy, so a
// command can say what it waits for. unlock releases the lock by closing the file (the
// system drops the lock with it, and with a process that dies holding it).
//
// Every cross-process lock of jean2 (bundling a tool folder, installing a tool, building a
// Go tool, the MCP trust store, the TypeScript compiler's cache) goes through here.
func LockFile(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|lockNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	pause := 5 * time.Millisecond
	for told := false; ; {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("waiting for the lock %s: %w", path, context.Cause(ctx))
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}
