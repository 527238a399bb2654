package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Found by a fault-injection pass: jean2 started on a full disk said "disk I/O error
// (4874)" (SQLite's SQLITE_IOERR_SHMSIZE), which names nothing. Opening a database on a
// full disk (a small tmpfs, filled) fails with an error that is ENOSPC and says the disk
// is full.
func TestOpenOnAFullDiskNamesIt(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "jean2.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	filler.Close()
	db, err = Open(context.Background(), path)
	if err == nil {
		db.Close()
		t.Fatal("a database opened on a full disk")
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "is full") {
		t.Fatalf("opening on a full disk: %v (ENOSPC: %v), want it to name the full disk", err, errors.Is(err, syscall.ENOSPC))
	}
	t.Logf("opening on a full disk: %v", err)
}
