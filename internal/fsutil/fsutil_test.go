package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadLimitedAndWriteAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFileAtomic(p, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("%v %v", fi, err)
	}
	if data, err := ReadLimited(p, 5); err != nil || string(data) != "hello" {
		t.Fatalf("%q %v", data, err)
	}
	if _, err := ReadLimited(p, 4); err == nil || !strings.Contains(err.Error(), "larger than 4 bytes") {
		t.Fatalf("over the limit: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}
