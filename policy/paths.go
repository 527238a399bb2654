package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// maxSymlinks bounds how many links Real follows in one path, as the kernel does (Linux
// gives ELOOP past 40).
const maxSymlinks = 40

// Real resolves every symlink in an absolute path (a relative one is first made absolute
// against the current directory). It walks the path one element at a time, as the kernel
// does, and follows every link it meets, dangling ones included: a link whose target does
// not exist yet is judged by where that target would be, so writing through it cannot lead
// out of the place it seems to be in. Where the path (or its tail) does not exist, the rest
// is appended as written below the last element that does. A loop of links (more than 40)
// returns the path as written; the kernel refuses to follow it too.
func Real(p string) string { return realWith(p, os.Lstat, os.Readlink) }

// realWith is Real with the two calls that look at the file system given: Real's own, or a
// Resolver's, which remembers what they said.
func realWith(p string, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) string {
	if !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	p = filepath.Clean(p)
	resolved := string(filepath.Separator)
	rest := p
	links := 0
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(rest, string(filepath.Separator))
		switch name {
		case "", ".":
			continue
		case "..":
			// resolved holds no links, so its parent is lexical.
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, name)
		fi, err := lstat(next)
		if err != nil {
			// Missing, below a file, or unreadable: nothing further can be followed, so the
			// rest lies where it is written.
			return filepath.Join(next, rest)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		links++
		if links > maxSymlinks {
			return p
		}
		target, err := readlink(next)
		if err != nil {
			return filepath.Join(next, rest)
		}
		if filepath.IsAbs(target) {
			resolved = string(filepath.Separator)
		}
		rest = target + string(filepath.Separator) + rest
	}
	return resolved
}

// Resolver is Real for the many paths of one plan (a shell command's toolchains, rules and
// view name the same folders several times over, and share their leading ones): each
// element on the way is looked at once, and what it was is remembered. It sees the file
// system as it was when it first looked, so it is made for one plan and dropped after:
// a plan made from it must be checked where it is applied, as the launcher does (a rule's
// Exact path must still lead to itself). A nil *Resolver is Real itself. Safe for
// concurrent use.
type Resolver struct {
	mu   sync.Mutex
	seen map[string]seenElement
}

// seenElement is what a Resolver saw of one path: lstat's answer and, for a link, where it
// leads.
type seenElement struct {
	fi      fs.FileInfo
	err     error
	target  string
	linkErr error
}

// NewResolver returns a Resolver that has seen nothing yet.
func NewResolver() *Resolver { return &Resolver{seen: map[string]seenElement{}} }

// Real is policy.Real, each element looked at once in the Resolver's life.
func (r *Resolver) Real(p string) string {
	if r == nil {
		return Real(p)
	}
	return realWith(p, func(p string) (fs.FileInfo, error) {
		e := r.look(p)
		return e.fi, e.err
	}, func(p string) (string, error) {
		e := r.look(p)
		return e.target, e.linkErr
	})
}

// look is what p is, looked at the first time it is asked for.
func (r *Resolver) look(p string) seenElement {
	r.mu.Lock()
	e, ok := r.seen[p]
	r.mu.Unlock()
	if ok {
		return e
	}
	e.fi, e.err = os.Lstat(p)
	if e.err == nil && e.fi.Mode()&fs.ModeSymlink != 0 {
		e.target, e.linkErr = os.Readlink(p)
	}
	r.mu.Lock()
	r.seen[p] = e
	r.mu.Unlock()
	return e
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

// BlockedAsWritten reports whether the path, cleaned and taken as written (no link
// followed), is a blocked system directory or lies below one. It is the whole answer only
// for a path known to hold no symlink (one the kernel just opened with RESOLVE_NO_SYMLINKS);
// IsBlocked is for any other.
func BlockedAsWritten(p string) bool {
	p = filepath.Clean(p)
	for _, b := range blockedRoots {
		if Within(p, b) {
			return true
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
