package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oracleReal finds where p really leads by a different road than Real: the standard
// library's EvalSymlinks for what exists, then, from the end backwards, a dangling final
// link's target or the parent's real location plus the name. ok is false when it cannot
// tell (a loop).
func oracleReal(p string, depth int) (string, bool) {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, true
	}
	if depth > 64 {
		return "", false
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, true
	}
	parentReal, ok := oracleReal(parent, depth+1)
	if !ok {
		return "", false
	}
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(parentReal, target)
		}
		return oracleReal(target, depth+1)
	case err == nil:
		return "", false // exists, yet EvalSymlinks failed: a loop below, or unreadable
	}
	return filepath.Join(parentReal, filepath.Base(p)), true
}

// FuzzScopeInside checks the containment property: whenever Inside(p) is true, the real
// path lies within a real scope root, both as an independent oracle sees it and as the
// kernel shows by actually creating the file when it does not exist yet.
func FuzzScopeInside(f *testing.F) {
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	tree(f, base)
	s := Scope{
		Workspace: filepath.Join(base, "ws"),
		Allowed:   []string{filepath.Join(base, "allowed")},
		Home:      filepath.Join(base, "home"),
		TempDir:   filepath.Join(base, "tmp"),
	}
	roots := []string{filepath.Join(base, "ws"), filepath.Join(base, "allowed")}
	for _, seed := range []string{
		"sub/file", "new", "in-link/file", "out-link/secret", "out-link/new", "out-file",
		"rel-out/x", "dangling-out", "dangling-in", "dangling-dir/f", "chain/file", "loop1",
		"loop1/x", "../ws-x/f", "../out/secret", "sub/../../out/x", "~/x", "/etc/passwd",
		filepath.Join(base, "allowed/back/file"), filepath.Join(base, "allowed/new"), ".", "..",
		"in-link/../out-link/secret", "chain/../../out",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > 512 || strings.ContainsRune(p, 0) {
			return
		}
		if !s.Inside(p) {
			return
		}
		resolved := s.Resolve(p)
		real, ok := oracleReal(resolved, 0)
		if ok && !withinAny(real, roots) {
			t.Fatalf("Inside(%q) is true but %s really leads to %s, outside %v", p, resolved, real, roots)
		}
		if _, err := os.Stat(resolved); !errors.Is(err, fs.ErrNotExist) {
			return
		}
		// Ask the kernel: create the file the way a tool's write would (following links).
		file, err := os.OpenFile(resolved, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			file, err = os.OpenFile(resolved, os.O_WRONLY|os.O_CREATE, 0o600)
			if err != nil {
				return
			}
		}
		file.Close()
		created, err := filepath.EvalSymlinks(resolved)
		if err != nil {
			t.Fatalf("created %s but cannot find it: %v", resolved, err)
		}
		os.Remove(created)
		if !withinAny(created, roots) {
			t.Fatalf("Inside(%q) is true but writing %s created %s, outside %v", p, resolved, created, roots)
		}
	})
}

func withinAny(p string, roots []string) bool {
	for _, r := range roots {
		rr, err := filepath.EvalSymlinks(r)
		if err == nil && Within(p, rr) {
			return true
		}
	}
	return false
}

// FuzzResolve checks that Resolve never panics and, given an absolute workspace and home,
// always answers an absolute, clean path; a relative path that does not climb out stays in
// the workspace.
func FuzzResolve(f *testing.F) {
	for _, seed := range [][3]string{
		{"~", "/w", "/h"}, {"~/x", "/w", "/h"}, {"../../x", "/w/p", "/h"}, {"a//b/./c/..", "/w", "/h"},
		{"", "/w", "/h"}, {"/abs/../x", "/w", "/h"}, {"~user", "/w", "/h"}, {"..", "/", "/"},
		{"a\x00b", "/w", "/h"}, {"~/../../..", "/w", "/h/u"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, p, ws, home string) {
		ws = "/" + ws
		home = "/" + home
		r := Resolve(p, ws, home)
		if !filepath.IsAbs(r) || filepath.Clean(r) != r {
			t.Fatalf("Resolve(%q, %q, %q) = %q: not absolute and clean", p, ws, home, r)
		}
		if got := (Scope{Workspace: ws, Home: home}).Resolve(p); got != r {
			t.Fatalf("Scope.Resolve = %q, Resolve = %q", got, r)
		}
		if !strings.HasPrefix(p, "~") && !filepath.IsAbs(p) {
			c := filepath.Clean(p)
			if c != ".." && !strings.HasPrefix(c, "../") && !Within(r, filepath.Clean(ws)) {
				t.Fatalf("relative %q resolved to %q, outside workspace %q", p, r, ws)
			}
		}
		_ = IsSensitive(r)
		_ = Within(r, filepath.Clean(ws))
	})
}
