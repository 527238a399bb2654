package rawio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Stat and Lstat tell what os.Stat and os.Lstat tell about the things jean2's per-call
// checks look at: a file, a folder, a link to a folder, a missing path, a folder made again.
func TestStatAgreesWithOS(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "approvals.json")
	if err := os.WriteFile(file, []byte(`{"approvals":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "ws")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	for _, c := range []struct {
		path   string
		follow bool
	}{{file, true}, {file, false}, {sub, true}, {sub, false}, {link, true}, {link, false}} {
		want, err := os.Stat(c.path)
		if !c.follow {
			want, err = os.Lstat(c.path)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := stat(c.path, c.follow)
		if err != nil {
			t.Fatalf("stat(%s, follow %v): %v", c.path, c.follow, err)
		}
		if got.Type() != want.Mode().Type() || got.IsDir() != want.IsDir() || !got.ModTime().Equal(want.ModTime()) {
			t.Errorf("stat(%s, follow %v): type %v dir %v mod %v; os says %v %v %v", c.path, c.follow,
				got.Type(), got.IsDir(), got.ModTime(), want.Mode().Type(), want.IsDir(), want.ModTime())
		}
		if !want.IsDir() && got.Size() != want.Size() {
			t.Errorf("stat(%s, follow %v): size %d, os says %d", c.path, c.follow, got.Size(), want.Size())
		}
		// The fallback of the other platforms tells the same.
		if p, err := statPortable(c.path, c.follow); err != nil || p.Type() != got.Type() || p.Size() != got.Size() || !p.ModTime().Equal(got.ModTime()) {
			t.Errorf("statPortable(%s, follow %v) = %v %d %v, %v; stat says %v %d %v", c.path, c.follow, p.Type(), p.Size(), p.ModTime(), err, got.Type(), got.Size(), got.ModTime())
		}
	}
	if fi, _ := Lstat(link); fi.Type() != fs.ModeSymlink {
		t.Errorf("Lstat of a link: type %v, want a link", fi.Type())
	}
	if fi, _ := Stat(link); !fi.IsDir() {
		t.Errorf("Stat of a link to a folder: type %v, want the folder", fi.Type())
	}

	a, _ := Stat(sub)
	b, _ := Stat(link)
	if !a.SameFile(b) {
		t.Error("a folder and the link to it: not the same file")
	}
	if f, _ := Stat(file); a.SameFile(f) {
		t.Error("a folder and a file: the same file")
	}
	// A folder moved aside and made again is another file: what the pins see.
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if again, _ := Stat(sub); a.SameFile(again) {
		t.Error("a folder made again in the old one's place: the same file")
	}

	_, err := Stat(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "missing") {
		t.Errorf("Stat of a missing path: %v; want a PathError naming it that is fs.ErrNotExist", err)
	}
	if _, err := Lstat("bad\x00path"); err == nil {
		t.Error("Lstat of a path with a NUL: no error")
	}
}
