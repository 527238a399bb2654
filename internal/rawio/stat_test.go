package rawio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A Stater tells what os.Stat and os.Lstat tell about the things jean2's per-call checks
// look at: a file, a folder, a link to a folder, a missing path, a folder made again.
func TestStaterAgreesWithOS(t *testing.T) {
	st := NewStater()
	defer st.Close()
	for name, st := range map[string]*Stater{"nil": nil, "NewStater": st} {
		t.Run(name, func(t *testing.T) { staterAgreesWithOS(t, st) })
	}
}

func staterAgreesWithOS(t *testing.T, st *Stater) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
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
	}{{file, true}, {file, false}, {sub, true}, {sub, false}, {link, true}, {link, false}, {filepath.Join(link, "."), true}} {
		want, err := os.Stat(c.path)
		if !c.follow {
			want, err = os.Lstat(c.path)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.stat(c.path, c.follow)
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
		if !got.SameFile(infoOf(want)) {
			t.Errorf("stat(%s, follow %v): not the file os.Stat found", c.path, c.follow)
		}
	}
	if fi, _ := st.Lstat(link); fi.Type() != fs.ModeSymlink {
		t.Errorf("Lstat of a link: type %v, want a link", fi.Type())
	}
	if fi, _ := st.Stat(link); !fi.IsDir() {
		t.Errorf("Stat of a link to a folder: type %v, want the folder", fi.Type())
	}
	a, _ := st.Stat(sub)
	b, _ := st.Stat(link)
	if !a.SameFile(b) {
		t.Error("a folder and the link to it: not the same file")
	}
	if f, _ := st.Stat(file); a.SameFile(f) {
		t.Error("a folder and a file: the same file")
	}
	// A folder moved aside and made again is another file: what the pins see.
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if again, _ := st.Stat(sub); a.SameFile(again) {
		t.Error("a folder made again in the old one's place: the same file")
	}
	for _, missing := range []string{filepath.Join(dir, "missing"), filepath.Join(file, "below-a-file")} {
		_, err := st.Stat(missing)
		_, want := os.Stat(missing)
		var pe, wantPE *fs.PathError
		if !errors.As(err, &pe) || !errors.As(want, &wantPE) || pe.Path != missing || pe.Op != wantPE.Op || !errors.Is(err, wantPE.Err) {
			t.Errorf("Stat(%s): %v; os.Stat says %v", missing, err, want)
		}
	}
	if _, err := st.Lstat("bad\x00path"); err == nil {
		t.Error("Lstat of a path with a NUL: no error")
	}
	if _, err := st.Stat("relative/path"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a relative path that is not there: %v", err)
	}
}
