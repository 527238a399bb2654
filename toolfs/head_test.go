package toolfs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// ReadHead reads a file's first bytes and says its size, under ReadFile's checks: a
// symlink out of the workspace and a folder are refused.
func TestReadHead(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	ctx := context.Background()
	writeTestFile(t, w.in("big.txt"), "0123456789", 0o644)
	data, size, err := f.ReadHead(ctx, w.in("big.txt"), 4)
	if err != nil || string(data) != "0123" || size != 10 {
		t.Fatalf("ReadHead(4) = %q, %d, %v; want 0123, 10", data, size, err)
	}
	if data, size, err = f.ReadHead(ctx, w.in("big.txt"), 100); err != nil || string(data) != "0123456789" || size != 10 {
		t.Fatalf("ReadHead(100) = %q, %d, %v; want the whole file", data, size, err)
	}
	mustDo(t, os.Symlink(filepath.Join(w.out, "secret"), w.in("link")))
	if data, _, err := f.ReadHead(ctx, w.in("link"), 100); data != nil {
		t.Fatalf("ReadHead through a link out read %q", data)
	} else {
		wantDenied(t, err, "EACCES")
	}
	mustDo(t, os.Mkdir(w.in("dir"), 0o755))
	_, _, err = f.ReadHead(ctx, w.in("dir"), 100)
	wantCode(t, err, "EISDIR")
}
