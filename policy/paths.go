package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// sensitivePatterns are substrings that make a lower-cased path sensitive.
var sensitivePatterns = [...]string{
	".env", ".pem", ".key", ".ssh/", "id_rsa", "id_ed25519", ".gitconfig", ".npmrc",
	"credentials", "secrets", "password", ".htpasswd",
}

// blockedRoots are system directories no tool may touch, nor anything below them.
var blockedRoots = [...]string{"/etc", "/usr", "/bin", "/sbin", "/boot", "/dev", "/proc", "/sys", "/root"}

// SensitivePatterns returns the substrings that make a path sensitive (SENSITIVE_FILE_PATTERNS).
func SensitivePatterns() []string { return append([]string(nil), sensitivePatterns[:]...) }

// BlockedRoots returns the system directories that are always refused.
func BlockedRoots() []string { return append([]string(nil), blockedRoots[:]...) }

// Resolve turns a path a tool gave into an absolute, cleaned path: "~" and "~/x" expand to
// home, an absolute path stays, a relative one is taken against workspace. Symlinks are not
// resolved here; Real does that.
func Resolve(p, workspace, home string) string {
	switch {
	case p == "~":
		p = home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(home, p[2:])
	case !filepath.IsAbs(p):
		p = filepath.Join(workspace, p)
	}
	return filepath.Clean(p)
}

// Real resolves every symlink in an absolute path. Where the path (or its tail) does not
// exist yet, the longest existing prefix is resolved and the rest appended, so a file about
// to be created is judged by where its parent really is.
func Real(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	var tail []string
	cur := p
	for {
		parent := filepath.Dir(cur)
		tail = append(tail, filepath.Base(cur))
		if parent == cur {
			return p
		}
		cur = parent
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			for i := len(tail) - 1; i >= 0; i-- {
				r = filepath.Join(r, tail[i])
			}
			return r
		} else if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
			// A permission error or a loop: judge the path as written.
			return p
		}
	}
}

func isNotDir(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// Within reports whether p is root or lies below it, comparing whole path elements
// (/a/proj-x is not within /a/proj). Both must be absolute and cleaned.
func Within(p, root string) bool {
	if p == root {
		return true
	}
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, root) && len(p) > len(root) && p[len(root)] == filepath.Separator
}

// InsideAny reports whether the real location of p lies within the real location of one of
// roots. Empty roots are ignored.
func InsideAny(p string, roots []string) bool {
	rp := Real(p)
	for _, r := range roots {
		if r == "" {
			continue
		}
		if Within(rp, Real(r)) {
			return true
		}
	}
	return false
}

// IsBlocked reports whether p, or where it really leads, is a blocked system directory or
// lies below one.
func IsBlocked(p string) bool {
	for _, cand := range []string{filepath.Clean(p), Real(p)} {
		for _, b := range blockedRoots {
			if Within(cand, b) {
				return true
			}
		}
	}
	return false
}

// IsSensitive reports whether the lower-cased path contains one of the sensitive patterns.
func IsSensitive(p string) bool {
	lp := strings.ToLower(filepath.ToSlash(p))
	for _, s := range sensitivePatterns {
		if strings.Contains(lp, s) {
			return true
		}
	}
	return false
}

// Scope is one call's view of the file system: its workspace, the extra allowed paths, the
// session's temporary folder and what "~" means.
type Scope struct {
	Workspace string
	Allowed   []string
	Home      string
	TempDir   string
}

// Resolve resolves p against the scope (see Resolve).
func (s Scope) Resolve(p string) string { return Resolve(p, s.Workspace, s.Home) }

// Roots are the places the scope may touch without asking: the workspace, the allowed paths
// and the temporary folder.
func (s Scope) Roots() []string {
	roots := make([]string, 0, len(s.Allowed)+2)
	roots = append(roots, s.Workspace)
	roots = append(roots, s.Allowed...)
	if s.TempDir != "" {
		roots = append(roots, s.TempDir)
	}
	return roots
}

// Inside reports whether p, resolved and with symlinks followed, lies within the workspace or
// an allowed path (the temporary folder is not the workspace and does not count here).
func (s Scope) Inside(p string) bool {
	roots := append([]string{s.Workspace}, s.Allowed...)
	return InsideAny(s.Resolve(p), roots)
}

// Blocked reports whether p is a blocked system path for this scope. Root's home (/root) is
// blocked, yet a user running as root keeps work there: a scope root below /root unblocks
// what lies inside that root, and nothing else.
func (s Scope) Blocked(p string) bool {
	rp := s.Resolve(p)
	if !IsBlocked(rp) {
		return false
	}
	real := Real(rp)
	for _, root := range s.Roots() {
		if root == "" {
			continue
		}
		rr := Real(root)
		if rr != "/root" && Within(rr, "/root") && Within(real, rr) {
			return false
		}
	}
	return true
}
