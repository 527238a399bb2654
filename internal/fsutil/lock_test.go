package fsutil

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A held lock makes the next taker wait (told once), until the holder lets go or its
// context ends.
func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := LockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var told atomic.Int32
	if _, err := LockFile(ctx, path, func() { told.Add(1) }); err == nil || !strings.Contains(err.Error(), "waiting for the lock") {
		t.Fatalf("a second taker while held: %v", err)
	}
	if told.Load() != 1 {
		t.Fatalf("waiting was called %d times", told.Load())
	}
	got := make(chan error, 1)
	go func() {
		u, err := LockFile(context.Background(), path, nil)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("taken while held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not taken after the holder let go")
	}
}
