package toolfs

import (
	"context"
	"path/filepath"
	"strings"

	unix "github.com/jean2/jean2/internal/xunix"
	"github.com/jean2/jean2/policy"
)

// The fast path of reads. check resolves every symlink of a path (one lstat per element)
// before deciding, and again to judge blocked places; for the common case, a path inside
// the workspace that holds no link at all, the kernel can answer the same question in the
// open itself. openAt with AT_FDCWD and an absolute path refuses a symlink on any element
// (RESOLVE_NO_SYMLINKS, or a walk with O_NOFOLLOW): when it succeeds, the path as written
// is the real path, so judging it as written is judging what was opened. The judgement is
// the one check makes, on that path: inside a scope root as written (a root that itself
// holds a link makes every path below it fail the open), not blocked, not in a protected
// place. Anything else (a link on the way, a grant outside the roots, any error) falls back
// to check, which decides and words the refusal.

// fastReadPath returns p resolved when a read of it may be tried on the fast path: inside a
// scope root as written, in no blocked or protected place (the places as given and real).
func (f *FS) fastReadPath(p string) (string, bool) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false
	}
	resolved := f.opts.Scope.Resolve(p)
	if !filepath.IsAbs(resolved) || policy.BlockedAsWritten(resolved) {
		return "", false
	}
	inRoot := false
	for _, root := range f.opts.Scope.Roots() {
		if root != "" && filepath.IsAbs(root) && policy.Within(resolved, filepath.Clean(root)) {
			inRoot = true
			break
		}
	}
	if !inRoot {
		return "", false
	}
	inTemp := f.opts.Scope.TempDir != "" && policy.Within(resolved, filepath.Clean(f.opts.Scope.TempDir))
	for _, place := range f.protectedPlaces() {
		if policy.Within(resolved, place) && !inTemp {
			return "", false
		}
	}
	return resolved, true
}

// fastOpen opens p for reading on the fast path: the descriptor and the target, or ok false
// when the full check must decide (or the call is over, which check's path reports).
func (f *FS) fastOpen(ctx context.Context, op, p string, flags int) (int, target, bool) {
	if ctx.Err() != nil {
		return -1, target{}, false
	}
	resolved, ok := f.fastReadPath(p)
	if !ok {
		return -1, target{}, false
	}
	fd, err := openAt(unix.AT_FDCWD, resolved, flags, 0)
	if err != nil {
		return -1, target{}, false
	}
	return fd, target{op: op, given: p, real: resolved}, true
}

// openForRead opens p for a read: on the fast path when it can, else after the full check.
// The error is the check's refusal, the call's end, or the open's failure, as *Error.
func (f *FS) openForRead(ctx context.Context, op, p string, flags int) (int, target, error) {
	if fd, t, fast := f.fastOpen(ctx, op, p, flags); fast {
		return fd, t, nil
	}
	t, denied := f.check(op, p, readAccess, true)
	if denied != nil {
		return -1, t, denied
	}
	if err := aborted(ctx, t); err != nil {
		return -1, t, err
	}
	fd, err := f.openReal(t.real, flags, 0)
	if err != nil {
		return -1, t, t.fail(pathErr("open", t.real, err))
	}
	return fd, t, nil
}
