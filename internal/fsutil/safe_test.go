//go:build unix

package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// WriteNew never writes through a link: not one planted under the name's prefix, not one
// standing for a folder of the path below the root.
func TestWriteNewRefusesLinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sessions", "s1"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(outside, "bashrc")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every name with the prefix the worker could guess points outside.
	_ = os.Symlink(victim, filepath.Join(root, "sessions", "s1", "r-.json"))
	path, err := WriteNew(root, "sessions/s1", "r-", ".json", []byte("data"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || !strings.HasPrefix(filepath.Base(path), "r-") || filepath.Dir(path) != filepath.Join(root, "sessions", "s1") {
		t.Fatalf("%s: %v %v", path, fi, err)
	}
	// A folder of the path swapped for a link to outside: refused.
	if err := os.Rename(filepath.Join(root, "sessions", "s1"), filepath.Join(root, "sessions", "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "sessions", "s1")); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteNew(root, "sessions/s1", "r-", ".json", []byte("data"), 0o600); !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("through a linked folder: %v", err)
	}
	if _, err := WriteNew(root, "../outside", "r-", ".json", []byte("data"), 0o600); err == nil {
		t.Fatal("a path leaving the root was accepted")
	}
	entries, _ := os.ReadDir(outside)
	if data, _ := os.ReadFile(victim); string(data) != "keep" || len(entries) != 1 {
		t.Fatalf("outside changed: %q %v", data, entries)
	}
	// The root itself may lie behind a link (jean2's home on /var/home).
	linkedRoot := filepath.Join(base, "linked-root")
	if err := os.Symlink(root, linkedRoot); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteNew(linkedRoot, "sessions/old", "r-", ".json", []byte("x"), 0o600); err != nil {
		t.Fatalf("root behind a link: %v", err)
	}
}

// ReplaceIn replaces a link planted under the name instead of writing through it.
func TestReplaceInReplacesLinks(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "staging")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(base, "bashrc")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "record.json")); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceIn(dir, ".", "record.json", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "record.json"))
	data, _ := os.ReadFile(filepath.Join(dir, "record.json"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 || string(data) != "new" {
		t.Fatalf("%v %v %q", fi, err, data)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep" {
		t.Fatalf("wrote through the link: %q", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left: %v", entries)
	}
	if err := ReplaceIn(dir, ".", "../x", nil, 0o644); err == nil {
		t.Fatal("a name with a slash was taken")
	}
}

// RemoveTree removes a folder a worker filled with links to outside without touching what
// they point to, and a path that is a link loses the link only.
func TestRemoveTreeDoesNotFollowLinks(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "sub", "f"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(base, "tmp")
	if err := os.MkdirAll(filepath.Join(tmp, "deep"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"dirlink", "deep/dirlink"} {
		if err := os.Symlink(outside, filepath.Join(tmp, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "sub", "f"), filepath.Join(tmp, "filelink")); err != nil {
		t.Fatal(err)
	}
	if err := RemoveTree(tmp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", tmp, err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := RemoveTree(link); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(outside, "sub", "f")); err != nil || string(data) != "keep" {
		t.Fatalf("outside changed: %q %v", data, err)
	}
}
