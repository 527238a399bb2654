package toolfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// snapshotTree describes everything below root (not following links): kind, mode, and
// content or link target, keyed by relative path.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link -> " + target
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %v", fi.Mode())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %q", fi.Mode(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(t *testing.T, want, got map[string]string) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if want[k] != got[k] {
			t.Errorf("%s: want %q, got %q", k, want[k], got[k])
		}
	}
}

// seedTree lays out a workspace with varied modes, nesting and a symlink.
func seedTree(t *testing.T, w *world) {
	t.Helper()
	writeTestFile(t, w.in("README.md"), "# readme\n", 0o644)
	writeTestFile(t, w.in("run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	writeTestFile(t, w.in("private.txt"), "mine", 0o600)
	writeTestFile(t, w.in("log.txt"), "one\n", 0o640)
	writeTestFile(t, w.in("src/main.go"), "package main\n", 0o644)
	writeTestFile(t, w.in("src/util/strings.go"), "package util\n", 0o644)
	writeTestFile(t, w.in("src/util/bin.dat"), "\x00\x01\x02\xff", 0o600)
	writeTestFile(t, w.in("docs/guide.md"), "guide", 0o444)
	mustDo(t, os.MkdirAll(w.in("docs/empty"), 0o755))
	mustDo(t, os.Chmod(w.in("docs/empty"), 0o750))
	mustDo(t, os.Chmod(w.in("src/util"), 0o700))
	mustDo(t, os.Symlink("../README.md", w.in("src/readme-link")))
	writeTestFile(t, w.in("assets/logo.svg"), "<svg/>", 0o644)
	writeTestFile(t, w.in("assets/icons/a.png"), "png", 0o644)
}

func findChange(t *testing.T, changes []tool.Change, op, path string) tool.Change {
	t.Helper()
	for _, c := range changes {
		if c.Op == op && c.Path == path {
			return c
		}
	}
	t.Fatalf("no %s change for %s in %+v", op, path, changes)
	return tool.Change{}
}

func TestLedgerBeforeStates(t *testing.T) {
	w := newWorld(t)
	seedTree(t, w)
	f := w.fs()

	// write over an existing file
	mustDo(t, f.WriteFile(ctx, "private.txt", []byte("changed")))
	c := findChange(t, w.ledger.Changes(), OpWrite, w.in("private.txt"))
	if !c.OK || !c.Disk || c.Tool != "test-tool" || c.CallID != "call-1" || c.At.IsZero() {
		t.Fatalf("change = %+v", c)
	}
	if b := c.Before; !b.Exists || b.IsDir || string(b.Content) != "mine" || b.Mode.Perm() != 0o600 {
		t.Fatalf("before = %+v", b)
	}

	// create a new file with parents: each created parent is recorded, absent before
	n := len(w.ledger.Changes())
	mustDo(t, f.WriteFile(ctx, "new/a/b.txt", []byte("b")))
	got := w.ledger.Changes()[n:]
	wantSeq := []string{OpMkdir + " " + w.in("new"), OpMkdir + " " + w.in("new/a"), OpWrite + " " + w.in("new/a/b.txt")}
	if len(got) != 3 {
		t.Fatalf("changes = %+v", got)
	}
	for i, c := range got {
		if c.Op+" "+c.Path != wantSeq[i] || !c.OK || c.Before == nil || c.Before.Exists {
			t.Fatalf("change %d = %+v, want %s absent before", i, c, wantSeq[i])
		}
	}

	// append
	mustDo(t, f.AppendFile(ctx, "log.txt", []byte("two\n")))
	c = findChange(t, w.ledger.Changes(), OpAppend, w.in("log.txt"))
	if string(c.Before.Content) != "one\n" || c.Before.Mode.Perm() != 0o640 {
		t.Fatalf("append before = %+v", c.Before)
	}

	// mkdir -p records every directory it creates; an existing one records nothing
	n = len(w.ledger.Changes())
	mustDo(t, f.Mkdir(ctx, "x/y/z", true))
	mustDo(t, f.Mkdir(ctx, "x/y", true))
	got = w.ledger.Changes()[n:]
	if len(got) != 3 || got[0].Path != w.in("x") || got[2].Path != w.in("x/y/z") || got[1].Before.Exists {
		t.Fatalf("mkdir -p changes = %+v", got)
	}

	// rm file
	mustDo(t, f.Remove(ctx, "run.sh", false))
	c = findChange(t, w.ledger.Changes(), OpRemove, w.in("run.sh"))
	if string(c.Before.Content) != "#!/bin/sh\necho hi\n" || c.Before.Mode.Perm() != 0o755 {
		t.Fatalf("rm before = %+v", c.Before)
	}

	// rm -r tree: mode and entries recursively, links as links
	mustDo(t, f.Remove(ctx, "src", true))
	c = findChange(t, w.ledger.Changes(), OpRemove, w.in("src"))
	b := c.Before
	if !b.IsDir || !b.Mode.IsDir() || b.Incomplete != "" {
		t.Fatalf("rm -r before = %+v", b)
	}
	var names []string
	for _, e := range b.Entries {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "main.go,readme-link,util" {
		t.Fatalf("entries = %v", names)
	}
	link := b.Entries[1].State
	if link.Mode&fs.ModeSymlink == 0 || string(link.Content) != "../README.md" {
		t.Fatalf("link state = %+v", link)
	}
	util := b.Entries[2].State
	if !util.IsDir || util.Mode.Perm() != 0o700 || len(util.Entries) != 2 || !bytes.Equal(util.Entries[0].State.Content, []byte("\x00\x01\x02\xff")) {
		t.Fatalf("util state = %+v", util)
	}

	// rename file over an existing one: two entries, each with its before-state
	mustDo(t, f.Rename(ctx, "README.md", "log.txt"))
	changes := w.ledger.Changes()
	src, dst := changes[len(changes)-2], changes[len(changes)-1]
	if src.Op != OpRename || src.Path != w.in("README.md") || string(src.Before.Content) != "# readme\n" {
		t.Fatalf("rename source = %+v", src)
	}
	if dst.Op != OpRename || dst.Path != w.in("log.txt") || string(dst.Before.Content) != "one\ntwo\n" {
		t.Fatalf("rename destination = %+v", dst)
	}

	// rename dir
	mustDo(t, f.Rename(ctx, "docs", "manual"))
	changes = w.ledger.Changes()
	src, dst = changes[len(changes)-2], changes[len(changes)-1]
	if !src.Before.IsDir || len(src.Before.Entries) != 2 || dst.Before.Exists {
		t.Fatalf("rename dir: source %+v, destination %+v", src.Before, dst.Before)
	}

	// failures are recorded too, with nothing on disk
	n = len(w.ledger.Changes())
	wantCode(t, f.Remove(ctx, "missing", false), "ENOENT")
	wantCode(t, f.WriteFile(ctx, "../out/x", []byte("x")), "EACCES")
	got = w.ledger.Changes()[n:]
	if len(got) != 2 {
		t.Fatalf("failed changes = %+v", got)
	}
	for _, c := range got {
		if c.OK || c.Disk || c.Error == "" {
			t.Fatalf("failed change = %+v", c)
		}
	}
	if got[1].Path != filepath.Join(w.out, "x") {
		t.Fatalf("refused change path = %q", got[1].Path)
	}
	// Reads are not changes.
	n = len(w.ledger.Changes())
	_, _ = f.ReadFile(ctx, "log.txt")
	_, _ = f.ReadDir(ctx, ".")
	_, _ = f.Stat(ctx, "log.txt")
	_, _ = f.Exists(ctx, "log.txt")
	if len(w.ledger.Changes()) != n {
		t.Fatal("reads were recorded")
	}
}

// TestRestoreMixedSequence runs a turn of writes, appends, deletes, renames and mkdirs
// (some failing), restores it, and compares the whole tree with what it was.
func TestRestoreMixedSequence(t *testing.T) {
	w := newWorld(t)
	seedTree(t, w)
	original := snapshotTree(t, w.ws)
	f := w.fs()

	steps := []struct {
		name string
		run  func() error
		fail bool
	}{
		{"write over", func() error { return f.WriteFile(ctx, "README.md", []byte("# new readme")) }, false},
		{"write again", func() error { return f.WriteFile(ctx, "README.md", []byte("# third")) }, false},
		{"write new with parents", func() error { return f.WriteFile(ctx, "gen/out/a.txt", []byte("a")) }, false},
		{"append", func() error { return f.AppendFile(ctx, "log.txt", []byte("two\n")) }, false},
		{"append new", func() error { return f.AppendFile(ctx, "gen/new.log", []byte("x")) }, false},
		{"mkdir -p", func() error { return f.Mkdir(ctx, "a/b/c", true) }, false},
		{"mkdir", func() error { return f.Mkdir(ctx, "a/b/c/d", false) }, false},
		{"rm file", func() error { return f.Remove(ctx, "private.txt", false) }, false},
		{"write where removed", func() error { return f.WriteFile(ctx, "private.txt", []byte("impostor")) }, false},
		{"rename file over file", func() error { return f.Rename(ctx, "run.sh", "log.txt") }, false},
		{"rename dir", func() error { return f.Rename(ctx, "src/util", "a/util") }, false},
		{"write in moved dir", func() error { return f.WriteFile(ctx, "a/util/strings.go", []byte("package changed")) }, false},
		{"write inside a tree removed later", func() error { return f.WriteFile(ctx, "docs/guide.md", []byte("edited")) }, false},
		{"rm -r tree", func() error { return f.Remove(ctx, "docs", true) }, false},
		{"rm -r assets", func() error { return f.Remove(ctx, "assets", true) }, false},
		{"mkdir where a tree was", func() error { return f.Mkdir(ctx, "assets", false) }, false},
		{"extra file in it", func() error { return f.WriteFile(ctx, "assets/extra.txt", []byte("extra")) }, false},
		{"old name, new content", func() error { return f.WriteFile(ctx, "assets/logo.svg", []byte("<svg>v2</svg>")) }, false},
		{"recreate removed dir as file", func() error { return f.WriteFile(ctx, "docs", []byte("now a file")) }, false},
		{"rename link", func() error { return f.Rename(ctx, "src/readme-link", "moved-link") }, false},
		{"rm -r new tree", func() error { return f.Remove(ctx, "gen", true) }, false},
		{"rm dir onto which later", func() error { return f.Remove(ctx, "a/b", true) }, false},
		{"dir into empty dir", func() error { return f.Mkdir(ctx, "empty-target", false) }, false},
		{"rename dir onto empty dir", func() error { return f.Rename(ctx, "a", "empty-target") }, false},
		{"failing rm", func() error { return f.Remove(ctx, "nope", false) }, true},
		{"failing write", func() error { return f.WriteFile(ctx, "src/main.go/x", []byte("x")) }, true},
		{"refused write", func() error { return f.WriteFile(ctx, "../out/secret", []byte("x")) }, true},
	}
	for _, s := range steps {
		err := s.run()
		if (err != nil) != s.fail {
			t.Fatalf("%s: err = %v, want failure %v", s.name, err, s.fail)
		}
	}
	if after := snapshotTree(t, w.ws); len(after) == len(original) && fmt.Sprint(after) == fmt.Sprint(original) {
		t.Fatal("the sequence changed nothing; the test proves nothing")
	}

	report, err := Restore(w.ledger.Changes())
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	diffTrees(t, original, snapshotTree(t, w.ws))
	if got := readTestFile(t, filepath.Join(w.out, "secret")); got != "outside secret" {
		t.Fatal("outside file changed")
	}
	for _, p := range []string{w.in("empty-target"), w.in("moved-link")} {
		if !slices.Contains(report.Removed, p) {
			t.Errorf("report.Removed lacks %s: %+v", p, report)
		}
	}
	for _, p := range []string{w.in("run.sh"), w.in("src/util"), w.in("src/readme-link")} {
		if !slices.Contains(report.Recreated, p) {
			t.Errorf("report.Recreated lacks %s: %+v", p, report)
		}
	}
	for _, p := range []string{w.in("README.md"), w.in("log.txt"), w.in("private.txt"), w.in("docs")} {
		if !slices.Contains(report.Restored, p) {
			t.Errorf("report.Restored lacks %s: %+v", p, report)
		}
	}

	// Restoring again changes nothing more.
	if _, err := Restore(w.ledger.Changes()); err != nil {
		t.Fatalf("second Restore: %v", err)
	}
	diffTrees(t, original, snapshotTree(t, w.ws))
}

func TestRestoreRefusesIncomplete(t *testing.T) {
	w := newWorld(t)
	writeTestFile(t, w.in("big.bin"), strings.Repeat("x", 1000), 0o644)
	writeTestFile(t, w.in("small.txt"), "small", 0o644)
	writeTestFile(t, w.in("tree/a"), strings.Repeat("a", 600), 0o644)
	writeTestFile(t, w.in("tree/b"), strings.Repeat("b", 600), 0o644)
	f := w.fs(func(o *Options) { o.MaxSnapshotBytes = 512 })

	mustDo(t, f.WriteFile(ctx, "small.txt", []byte("changed")))
	mustDo(t, f.Remove(ctx, "big.bin", false))
	mustDo(t, f.Remove(ctx, "tree", true))
	changes := w.ledger.Changes()
	for _, p := range []string{w.in("big.bin"), w.in("tree")} {
		c := findChange(t, changes, OpRemove, p)
		if c.Before == nil || !strings.Contains(c.Before.Incomplete, "512-byte snapshot limit") || c.Before.Content != nil || c.Before.Entries != nil {
			t.Fatalf("%s before = %+v", p, c.Before)
		}
		if !c.Before.Exists || c.Before.IsDir != (p == w.in("tree")) {
			t.Fatalf("%s before keeps its kind: %+v", p, c.Before)
		}
	}

	_, err := Restore(changes)
	var refusal *RestoreRefusal
	if !errors.As(err, &refusal) {
		t.Fatalf("Restore = %v, want a refusal", err)
	}
	var paths []string
	for _, p := range refusal.Problems {
		paths = append(paths, p.Path)
	}
	if !slices.Equal(paths, []string{w.in("big.bin"), w.in("tree")}) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("refusal = %v", err)
	}
	// Nothing was put back, not even what could have been.
	if got := readTestFile(t, w.in("small.txt")); got != "changed" {
		t.Fatalf("small.txt = %q: a refused restore changed the disk", got)
	}

	// A change with no undo data (recorded by the tool itself) is refused too.
	_, err = Restore([]tool.Change{{Path: w.in("small.txt"), Tool: "jx", Disk: true, OK: true}})
	if !errors.As(err, &refusal) || !strings.Contains(err.Error(), "no undo data") {
		t.Fatalf("Restore of a tool-recorded change = %v", err)
	}
	// A tampered snapshot cannot lead outside.
	_, err = Restore([]tool.Change{{Path: w.in("d"), Disk: true, Before: &tool.FileState{Exists: true, IsDir: true,
		Entries: []tool.DirState{{Name: "../../out/x", State: tool.FileState{Exists: true}}}}}})
	if !errors.As(err, &refusal) {
		t.Fatalf("Restore of a tampered snapshot = %v", err)
	}
	_, err = Restore([]tool.Change{{Path: "relative/path", Disk: true, Before: &tool.FileState{}}})
	if !errors.As(err, &refusal) {
		t.Fatalf("Restore of a relative path = %v", err)
	}
}

// TestRestoreOnlyEarliestMatters: a file the turn created and then grew past the snapshot
// limit still restores, because only the earliest change decides the path's old state.
func TestRestoreOnlyEarliestMatters(t *testing.T) {
	w := newWorld(t)
	f := w.fs(func(o *Options) { o.MaxSnapshotBytes = 256 })
	mustDo(t, f.WriteFile(ctx, "grown.log", []byte("start")))
	mustDo(t, f.AppendFile(ctx, "grown.log", bytes.Repeat([]byte("y"), 1000)))
	mustDo(t, f.AppendFile(ctx, "grown.log", []byte("more")))
	changes := w.ledger.Changes()
	if changes[len(changes)-1].Before.Incomplete == "" {
		t.Fatal("the later snapshot should be incomplete")
	}
	report, err := Restore(changes)
	mustDo(t, err)
	notExist(t, w.in("grown.log"))
	if !slices.Equal(report.Removed, []string{w.in("grown.log")}) {
		t.Fatalf("report = %+v", report)
	}
}

func TestRestoreVerifySeam(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	mustDo(t, f.WriteFile(ctx, "a.txt", []byte("a")))
	_, err := RestoreWith(w.ledger.Changes(), RestoreOptions{Verify: func(p string) error {
		return errors.New("edited outside jean2 since")
	}})
	var refusal *RestoreRefusal
	if !errors.As(err, &refusal) || !strings.Contains(err.Error(), "edited outside jean2") {
		t.Fatalf("RestoreWith = %v", err)
	}
	if _, err := os.Stat(w.in("a.txt")); err != nil {
		t.Fatal("a refused restore removed the file")
	}
}

func TestRestoreRefusesSymlinkedParent(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	writeTestFile(t, w.in("d/f.txt"), "old", 0o644)
	mustDo(t, f.WriteFile(ctx, "d/f.txt", []byte("new")))
	// After the turn, something outside jean2 swaps d for a link leading out.
	mustDo(t, os.RemoveAll(w.in("d")))
	mustDo(t, os.Symlink(w.out, w.in("d")))
	_, err := Restore(w.ledger.Changes())
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Restore = %v, want a refusal to follow the link", err)
	}
	notExist(t, filepath.Join(w.out, "f.txt"))
}

func BenchmarkWriteFile(b *testing.B) {
	base, _ := filepath.EvalSymlinks(b.TempDir())
	f := New(Options{Scope: scopeFor(base)})
	data := bytes.Repeat([]byte("x"), 4096)
	for b.Loop() {
		if err := f.WriteFile(ctx, "dir/f.txt", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFile(b *testing.B) {
	base, _ := filepath.EvalSymlinks(b.TempDir())
	f := New(Options{Scope: scopeFor(base)})
	if err := f.WriteFile(ctx, "dir/sub/f.txt", bytes.Repeat([]byte("x"), 4096)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := f.ReadFile(ctx, "dir/sub/f.txt"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestoreTree(b *testing.B) {
	base, _ := filepath.EvalSymlinks(b.TempDir())
	for b.Loop() {
		b.StopTimer()
		ws := filepath.Join(base, "ws")
		os.RemoveAll(ws)
		for i := range 100 {
			os.MkdirAll(filepath.Join(ws, "t", fmt.Sprint(i%10)), 0o755)
			os.WriteFile(filepath.Join(ws, "t", fmt.Sprint(i%10), fmt.Sprint(i)), bytes.Repeat([]byte("x"), 1024), 0o644)
		}
		ledger := tool.NewLedger()
		f := New(Options{Scope: scopeFor(base), Ledger: ledger})
		b.StartTimer()
		if err := f.Remove(ctx, "t", true); err != nil {
			b.Fatal(err)
		}
		if _, err := Restore(ledger.Changes()); err != nil {
			b.Fatal(err)
		}
	}
}

func scopeFor(base string) policy.Scope {
	return policy.Scope{Workspace: filepath.Join(base, "ws"), TempDir: filepath.Join(base, "tmp"), Home: base}
}
