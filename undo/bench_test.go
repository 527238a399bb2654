package undo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchWorkspace writes files files of about 1 KiB in folders of 100.
func benchWorkspace(b *testing.B, files int) string {
	b.Helper()
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := range files {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", i/100))
		if i%100 == 0 {
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		content := fmt.Appendf(nil, "// file %d\n%0900d\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", i%100)), content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

func benchStore(b *testing.B) *Snapshots {
	b.Helper()
	s, err := New(Options{Dir: filepath.Join(b.TempDir(), "undo"), PruneEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	// The files were written moments ago; in use they are older than the racy window, and
	// the benchmark measures that case.
	s.racy = 0
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkBegin10k: Begin on a workspace of 10,000 files (10 MB). cold: an empty store
// (every file read, hashed and copied); warm: nothing changed since the last walk (a stat
// of each path, no read).
func BenchmarkBegin10k(b *testing.B) {
	ctx := context.Background()
	root := benchWorkspace(b, 10_000)
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s := benchStore(b)
			b.StartTimer()
			t, err := s.Begin(ctx, TurnSpec{Roots: []string{root}})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			t.Discard()
			s.Close()
			b.StartTimer()
		}
	})
	b.Run("warm", func(b *testing.B) {
		s := benchStore(b)
		t, err := s.Begin(ctx, TurnSpec{Roots: []string{root}})
		if err != nil {
			b.Fatal(err)
		}
		t.Discard()
		for b.Loop() {
			t, err := s.Begin(ctx, TurnSpec{Roots: []string{root}})
			if err != nil {
				b.Fatal(err)
			}
			t.Discard()
		}
	})
}

// BenchmarkFinish10k: Finish on the 10,000-file workspace after a turn changed 10 files
// (the walk, reading the 10, storing the new snapshot, the diff, the before-states).
func BenchmarkFinish10k(b *testing.B) {
	ctx := context.Background()
	root := benchWorkspace(b, 10_000)
	s := benchStore(b)
	t, err := s.Begin(ctx, TurnSpec{Roots: []string{root}})
	if err != nil {
		b.Fatal(err)
	}
	t.Discard()
	n := 0
	for b.Loop() {
		b.StopTimer()
		t, err := s.Begin(ctx, TurnSpec{Roots: []string{root}})
		if err != nil {
			b.Fatal(err)
		}
		for i := range 10 {
			n++
			p := filepath.Join(root, fmt.Sprintf("pkg%03d", i*7), fmt.Sprintf("f%03d.go", i))
			if err := os.WriteFile(p, fmt.Appendf(nil, "changed %d", n), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		changes, err := t.Finish(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(changes) != 10 {
			b.Fatalf("%d changes, want 10", len(changes))
		}
		b.StopTimer()
		t.Discard()
		b.StartTimer()
	}
}
