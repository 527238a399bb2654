package toolfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	unix "github.com/jean2/jean2/internal/xunix"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// Defaults for the size caps.
const (
	DefaultMaxReadBytes     = 256 << 20 // ReadFile refuses larger files
	DefaultMaxSnapshotBytes = 64 << 20  // undo data kept per snapshot before it is marked incomplete
	DefaultMaxWriteBytes    = 1 << 30   // bytes one call may write through writeFile and appendFile
)

// Ledger operation names (tool.Change.Op).
const (
	OpWrite  = "write"
	OpAppend = "append"
	OpMkdir  = "mkdir"
	OpRemove = "rm"
	OpRename = "rename"
)

// Grants says whether a permission granted earlier (ctx.ask with type "permission")
// covers a path outside the call's scope. It is asked about the real path, with symlinks
// resolved, so a grant for a link does not extend to where the link leads unless it names
// that place too. write is true for writeFile, appendFile, mkdir, rm and rename.
type Grants interface {
	Covers(path string, write bool) bool
}

// GrantsFunc adapts a function to Grants.
type GrantsFunc func(path string, write bool) bool

// Covers calls f.
func (f GrantsFunc) Covers(path string, write bool) bool { return f(path, write) }

// Options configure one call's file system. New copies them; zero fields take defaults.
type Options struct {
	Scope  policy.Scope // workspace, allowed paths, session temp dir, home
	Tool   string       // the tool's name, for the ledger
	CallID string       // the call's id, for the ledger
	// Ledger receives every change. Nil records into a fresh ledger nobody reads (a detached
	// call).
	Ledger *tool.Ledger
	// Grants covers paths outside the scope; nil grants nothing.
	Grants Grants
	// Protected are places no operation touches, to read or to write, whatever the scope
	// and the grants: jean2's home, its tools folder, the credential folders
	// (policy.ProtectedPaths). The session's temporary folder is exempt, though it lies in
	// jean2's home. A rename or recursive rm of a folder that holds one is refused too.
	Protected []string
	// ProtectedPlaces, when not nil, is Protected as ExpandPlaces gives it, resolved once
	// by the caller (the host, at its start and each reload) so that a call does not
	// resolve every protected place again (one lstat per path element of each).
	ProtectedPlaces []string
	// RealRoots, when set, says where the scope's workspace folder and allowed paths really
	// are (their paths as given → real paths), as the caller pinned them: used instead of
	// resolving their links again, so a root a hostile tool replaced by a link since leads
	// nowhere new.
	RealRoots map[string]string
	// ReadOnly are places read but never changed (each workspace root's .jean2 folder,
	// whose settings jean2 acts on). A rename or recursive rm of a folder that holds one is
	// refused too.
	ReadOnly []string
	// MaxReadBytes caps ReadFile (default DefaultMaxReadBytes).
	MaxReadBytes int64
	// MaxWriteBytes caps what one call writes through writeFile and appendFile, all files
	// together (default DefaultMaxWriteBytes), so a tool cannot fill the disk through the
	// host. A write that would pass it is refused whole, with EDQUOT.
	MaxWriteBytes int64
	// MaxSnapshotBytes caps the undo data of one snapshot: file contents plus a small
	// per-entry overhead (default DefaultMaxSnapshotBytes). Past it the snapshot is kept
	// without content and marked Incomplete, and Restore refuses it.
	MaxSnapshotBytes int64
}

// FS is a call's file system, enforced by the host. It is safe for concurrent use.
type FS struct {
	opts Options
	// places are the scope roots', the protected places' and the read-only places' real
	// locations, resolved once, at the first operation: a call is short, and a root swapped
	// for a link afterwards can only make the old location the one that counts. Lazily,
	// because most calls never touch the file system and resolving costs a system call per
	// path element.
	placesOnce sync.Once
	roots      []string
	tempDir    string       // the session's temporary folder, real; "" when none
	protected  []string     // as given (cleaned) and real
	protOnce   sync.Once    // protected alone, for the fast path of reads (fast.go)
	readOnly   []string     // as given (cleaned) and real
	written    atomic.Int64 // bytes reserved by writes so far, against MaxWriteBytes
}

var _ tool.FS = (*FS)(nil)

// New returns the file system for one call.
func New(opts Options) *FS {
	o := opts
	o.Scope.Allowed = slices.Clone(opts.Scope.Allowed)
	o.Protected = slices.Clone(opts.Protected)
	o.ReadOnly = slices.Clone(opts.ReadOnly)
	if o.Ledger == nil {
		o.Ledger = tool.NewLedger()
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.MaxSnapshotBytes <= 0 {
		o.MaxSnapshotBytes = DefaultMaxSnapshotBytes
	}
	if o.MaxWriteBytes <= 0 {
		o.MaxWriteBytes = DefaultMaxWriteBytes
	}
	return &FS{opts: o}
}

func (f *FS) places() *FS {
	f.placesOnce.Do(func() {
		for _, root := range append([]string{f.opts.Scope.Workspace}, f.opts.Scope.Allowed...) {
			if root == "" || !filepath.IsAbs(root) {
				continue
			}
			if real, ok := f.opts.RealRoots[filepath.Clean(root)]; ok {
				f.roots = append(f.roots, real)
			} else {
				f.roots = append(f.roots, policy.Real(root))
			}
		}
		if t := f.opts.Scope.TempDir; t != "" && filepath.IsAbs(t) {
			f.tempDir = tempRoot(t)
			if f.tempDir != "" {
				f.roots = append(f.roots, f.tempDir)
			}
		}
		f.protectedPlaces()
		f.readOnly = ExpandPlaces(f.opts.ReadOnly)
	})
	return f
}

func (f *FS) realRoots() []string { return f.places().roots }

// tempRoot is the temporary folder t as a root: t's folder resolved, and t's own name
// itself, never a link. The workers of a workspace may write the folder that holds its
// sessions' folders, so a hostile one can put a link in the place of a session's folder; a
// root taken through it would be wherever the link leads ("/"). A temporary folder that is
// a link is no root at all, and lying in jean2's home it is then protected like the rest.
func tempRoot(t string) string {
	t = filepath.Clean(t)
	real := filepath.Join(policy.Real(filepath.Dir(t)), filepath.Base(t))
	if fi, err := os.Lstat(real); err == nil && !fi.IsDir() {
		return ""
	}
	return real
}

// protectedPlaces are the protected places as given and real: the host's, resolved once per
// host (Options.ProtectedPlaces), or Options.Protected resolved at the first use.
func (f *FS) protectedPlaces() []string {
	f.protOnce.Do(func() {
		if f.opts.ProtectedPlaces != nil {
			f.protected = f.opts.ProtectedPlaces
		} else {
			f.protected = ExpandPlaces(f.opts.Protected)
		}
	})
	return f.protected
}

// ExpandPlaces returns each absolute path as written (cleaned) and, where it differs, where
// it really leads: what Protected and ReadOnly places are judged against.
func ExpandPlaces(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		out = append(out, filepath.Clean(p))
		if r := policy.Real(p); r != filepath.Clean(p) {
			out = append(out, r)
		}
	}
	return out
}

// rootOf returns the scope root (real) that holds real, the deepest when several do, or "".
func (f *FS) rootOf(real string) string {
	best := ""
	for _, root := range f.realRoots() {
		if len(root) > len(best) && policy.Within(real, root) {
			best = root
		}
	}
	return best
}

// grantTop returns the highest folder holding real that a grant covers, or "": the top of
// the grant real falls under, when that grant is for a folder.
func (f *FS) grantTop(real string) string {
	if f.opts.Grants == nil {
		return ""
	}
	top := ""
	for dir := real; ; dir = filepath.Dir(dir) {
		if !f.opts.Grants.Covers(dir, false) {
			return top
		}
		top = dir
		if dir == filepath.Dir(dir) {
			return top
		}
	}
}

// openReal opens real, a checked real path, from the descriptor of the scope root that holds
// it (RESOLVE_BENEATH, no symlinks), or, outside every root, of the granted folder that holds
// it. What neither holds (a root itself seen from its parent, a granted file's folder) is
// opened from / with no symlink allowed on the way: exactly the checked path or nothing.
func (f *FS) openReal(real string, flags int, mode uint32) (int, error) {
	root := f.rootOf(real)
	if root == "" {
		root = f.grantTop(real)
	}
	if root == "" || root == real {
		return openAt(unix.AT_FDCWD, real, flags, mode)
	}
	rfd, err := openAt(unix.AT_FDCWD, root, oDirRef, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	rel := strings.TrimPrefix(strings.TrimPrefix(real, root), string(filepath.Separator))
	if rel == "" {
		rel = "."
	}
	return openAt(rfd, rel, flags, mode)
}

// openParent opens the directory holding real and returns it with real's final name, for
// the *at calls that act on that name.
func (f *FS) openParent(real string) (int, string, error) {
	if real == string(filepath.Separator) {
		fd, err := openAt(unix.AT_FDCWD, real, oDirRef, 0)
		return fd, ".", err
	}
	fd, err := f.openReal(filepath.Dir(real), oDirRef, 0)
	return fd, filepath.Base(real), err
}

// target is a path after the policy check: where the operation happens.
type target struct {
	op    string
	given string // as the tool gave it
	real  string // resolved real path
}

func (t target) fail(err error) *Error {
	return &Error{Op: t.op, Path: t.given, Resolved: t.real, Code: codeOf(err), Err: err}
}

// Kinds of access check is asked about.
const (
	readAccess  = iota
	writeAccess // changes the path
	treeAccess  // changes the path and, when it is a folder, everything it holds (rm -r, rename)
)

// check resolves p and decides whether op may touch it. follow says whether the final
// component is followed when it is a symlink (true for reads, writes and mkdir, as Node
// does; false for rm and rename, which act on a link itself).
func (f *FS) check(op, p string, access int, follow bool) (target, *Error) {
	t := target{op: op, given: p}
	deny := func(code string, err error) (target, *Error) {
		return t, &Error{Op: op, Path: p, Resolved: t.real, Code: code, Denied: true, Err: err}
	}
	if p == "" {
		return deny("EINVAL", errors.New("empty path"))
	}
	if strings.ContainsRune(p, 0) {
		return deny("EINVAL", errors.New("path holds a NUL byte"))
	}
	resolved := f.opts.Scope.Resolve(p)
	if !filepath.IsAbs(resolved) {
		return deny("EINVAL", fmt.Errorf("resolves to %q, which is not absolute: the call's workspace or home is not set", resolved))
	}
	switch {
	case follow:
		t.real = policy.Real(resolved)
	case resolved == string(filepath.Separator):
		t.real = resolved
	default:
		t.real = filepath.Join(policy.Real(filepath.Dir(resolved)), filepath.Base(resolved))
	}
	// Blocked is judged on the path as given (and where it leads) and, when the final link
	// is not followed, on the place actually touched: rm of a link that sits in /etc is as
	// blocked as rm of /etc/passwd.
	if f.opts.Scope.Blocked(p) || (!follow && f.opts.Scope.Blocked(t.real)) {
		return deny("EPERM", ErrBlocked)
	}
	// Protected and read-only places are judged on the path as written and on where it
	// leads: a .jean2 that is a link is as read-only as the folder it names.
	for _, cand := range []string{resolved, t.real} {
		if err := f.guard(cand, access); err != nil {
			return deny("EACCES", err)
		}
	}
	if !f.allowed(t.real, access != readAccess) {
		return deny("EACCES", outsideErr(t.real))
	}
	return t, nil
}

// guard refuses a path in a protected place, a change in a read-only one, and a tree change
// of a folder that holds either. The session's temporary folder is open though it lies in
// jean2's home (which, for a call working from ~, is also the workspace's .jean2).
func (f *FS) guard(path string, access int) error {
	g := f.places()
	inTemp := g.tempDir != "" && policy.Within(path, g.tempDir)
	for _, p := range g.protected {
		if policy.Within(path, p) && !inTemp {
			return fmt.Errorf("%w (%s is protected)", ErrProtected, p)
		}
		if access == treeAccess && policy.Within(p, path) {
			return fmt.Errorf("%w (%s holds the protected %s)", ErrProtected, path, p)
		}
	}
	if access == readAccess {
		return nil
	}
	for _, r := range g.readOnly {
		if policy.Within(path, r) && !inTemp {
			return fmt.Errorf("%w (%s is read-only)", ErrReadOnly, r)
		}
		if access == treeAccess && policy.Within(r, path) {
			return fmt.Errorf("%w (%s holds the read-only %s)", ErrReadOnly, path, r)
		}
	}
	return nil
}

func outsideErr(real string) error {
	return fmt.Errorf("%w; to get access, ask permission for %s (ctx.ask({type: 'permission', resource: 'file', paths: ['%s']})) or add it to the workspace's allowed paths",
		ErrOutsideScope, real, real)
}

// allowed reports whether real (a resolved real path) lies in a scope root or is covered
// by a grant.
func (f *FS) allowed(real string, write bool) bool {
	for _, root := range f.realRoots() {
		if policy.Within(real, root) {
			return true
		}
	}
	return f.opts.Grants != nil && f.opts.Grants.Covers(real, write)
}

// record puts one change on the ledger. disk says whether the disk may have changed; a
// refusal, or a failure the OS reports before changing anything, is recorded with
// disk=false and no undo data, and Restore skips it.
func (f *FS) record(op, path string, before *tool.FileState, disk bool, err error) {
	c := tool.Change{Path: path, Tool: f.opts.Tool, CallID: f.opts.CallID, Op: op, Disk: disk, OK: err == nil, Before: before}
	if err != nil {
		c.Error = err.Error()
	}
	f.opts.Ledger.Record(c)
}

// refused records a change that never reached the disk and returns its error.
func (f *FS) refused(ledgerOp string, t target, err *Error) error {
	path := t.real
	if path == "" {
		path = t.given
	}
	f.record(ledgerOp, path, nil, false, err)
	return err
}

func aborted(ctx context.Context, t target) *Error {
	if err := ctx.Err(); err != nil {
		return t.fail(err)
	}
	return nil
}

// pathErr wraps an errno from a system call on path.
func pathErr(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// ReadFile reads a whole file, up to the read cap.
func (f *FS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	// O_NONBLOCK so a named pipe planted in the workspace cannot hang the call in open.
	const flags = unix.O_RDONLY | unix.O_NONBLOCK
	fd, t, err := f.openForRead(ctx, "readFile", p, flags)
	if err != nil {
		return nil, err
	}
	data, err := readOpened(ctx, fd, t.real, f.opts.MaxReadBytes)
	if err != nil {
		return nil, t.fail(err)
	}
	return data, nil
}

func tooLarge(size, limit int64) error {
	if size < 0 {
		return fmt.Errorf("%w: more than %d bytes (the read limit is %d bytes)", ErrTooLarge, limit, limit)
	}
	return fmt.Errorf("%w: %d bytes (the read limit is %d bytes)", ErrTooLarge, size, limit)
}

// readChunk is how much is read between checks of the call's signal.
const readChunk = 1 << 20

// readAll reads r, a regular file, to the end, refusing more than limit bytes and stopping
// when ctx ends. A regular file's read returns less than asked only at its end, so a file
// read in one go (sizeHint+1 asked, at most sizeHint given) needs no second read to see the
// end: one system call fewer per file, which grep over a tree makes thousands of times.
func readAll(ctx context.Context, r io.Reader, sizeHint, limit int64) ([]byte, error) {
	capacity := min(max(sizeHint, 0), limit) + 1
	buf := make([]byte, 0, capacity)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(int(limit)+1-len(buf), max(len(buf), 512)))
		}
		room := min(cap(buf)-len(buf), readChunk)
		n, err := r.Read(buf[len(buf) : len(buf)+room])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, tooLarge(-1, limit)
		}
		if err == io.EOF || (err == nil && n > 0 && n < room) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// WriteFile replaces a file's content, creating it and its missing parent directories.
func (f *FS) WriteFile(ctx context.Context, p string, data []byte) error {
	return f.write(ctx, "writeFile", OpWrite, p, data, true)
}

// AppendFile adds to the end of a file, creating the file (not its parents, as Node does).
func (f *FS) AppendFile(ctx context.Context, p string, data []byte) error {
	return f.write(ctx, "appendFile", OpAppend, p, data, false)
}

func (f *FS) write(ctx context.Context, op, ledgerOp, p string, data []byte, truncate bool) error {
	t, denied := f.check(op, p, writeAccess, true)
	if denied != nil {
		return f.refused(ledgerOp, t, denied)
	}
	if err := aborted(ctx, t); err != nil {
		return f.refused(ledgerOp, t, err)
	}
	if err := f.reserve(t, int64(len(data))); err != nil {
		return f.refused(ledgerOp, t, err)
	}
	var dirfd int
	if truncate {
		fd, err := f.makeDirs(ctx, t, filepath.Dir(t.real))
		if err != nil {
			return f.refused(ledgerOp, t, err)
		}
		dirfd = fd
	} else {
		fd, err := f.openReal(filepath.Dir(t.real), oDirRef, 0)
		if err != nil {
			return f.refused(ledgerOp, t, t.fail(pathErr("open", t.real, err)))
		}
		dirfd = fd
	}
	defer unix.Close(dirfd)
	name := filepath.Base(t.real)
	flag := unix.O_WRONLY | unix.O_APPEND
	if truncate {
		flag = unix.O_WRONLY | unix.O_TRUNC
	}
	// Snapshot, then open. When nothing stood there, O_EXCL makes sure nothing appeared in
	// between, so "did not exist" stays true; if something did, snapshot again.
	var before *tool.FileState
	var fd int
	for attempt := 0; ; attempt++ {
		var err error
		before, err = f.snapshotFile(ctx, t, dirfd, name)
		if err != nil {
			return f.refused(ledgerOp, t, t.fail(err))
		}
		open := flag
		if !before.Exists {
			open |= unix.O_CREAT | unix.O_EXCL
		}
		fd, err = openAtName(dirfd, name, open|unix.O_NONBLOCK, 0o666)
		if err == nil {
			break
		}
		if errors.Is(err, unix.EEXIST) && !before.Exists && attempt == 0 {
			continue
		}
		if !before.Exists && errors.Is(err, unix.EEXIST) {
			err = ErrChanged
		} else {
			err = pathErr("open", t.real, err)
		}
		e := t.fail(err)
		f.record(ledgerOp, t.real, before, false, e)
		return e
	}
	file := os.NewFile(uintptr(fd), t.real)
	_, werr := file.Write(data)
	cerr := file.Close()
	if err := errors.Join(werr, cerr); err != nil {
		e := t.fail(err)
		f.record(ledgerOp, t.real, before, true, e)
		return e
	}
	f.record(ledgerOp, t.real, before, true, nil)
	return nil
}

// reserve counts n bytes against the call's write budget, or refuses them all. Bytes of a
// write that fails later stay counted: the budget bounds what a call may try to put on disk.
func (f *FS) reserve(t target, n int64) *Error {
	if f.written.Add(n) <= f.opts.MaxWriteBytes {
		return nil
	}
	f.written.Add(-n)
	return &Error{Op: t.op, Path: t.given, Resolved: t.real, Code: "EDQUOT", Denied: true,
		Err: fmt.Errorf("%w: %d more bytes would pass the call's limit of %d bytes written through ctx.fs (%d written so far)", ErrWriteBudget, n, f.opts.MaxWriteBytes, f.written.Load())}
}

// snapshotFile is the before-state of a write target, name in dirfd: absent, or a regular
// file. A directory or a special file is refused before anything changes.
func (f *FS) snapshotFile(ctx context.Context, t target, dirfd int, name string) (*tool.FileState, error) {
	st, err := statAt(dirfd, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return &tool.FileState{Exists: false}, nil
	case err != nil:
		return nil, pathErr("lstat", t.real, err)
	case st.isDir():
		return nil, errnoErr("open", t.real, syscall.EISDIR)
	case st.isLink():
		return nil, ErrChanged
	case !st.isRegular():
		return nil, ErrNotRegular
	}
	return f.snapshotOf(ctx, dirfd, name, t.real, st)
}

// makeDirs creates dir and its missing parents (mkdir -p), recording each directory it
// creates, and returns dir opened. Each one must itself be allowed: a grant for a file does
// not let a tool create the directories above it. The deepest existing directory is opened
// as openReal does; each missing one is made with mkdirat in its parent's descriptor and
// opened from it, never by path.
func (f *FS) makeDirs(ctx context.Context, t target, dir string) (int, *Error) {
	var missing []string
	fd := -1
	for cur := dir; ; cur = filepath.Dir(cur) {
		d, err := f.openReal(cur, oDirRef, 0)
		if err == nil {
			fd = d
			break
		}
		switch {
		case errors.Is(err, unix.ENOENT) && filepath.Dir(cur) != cur:
			missing = append(missing, cur)
			continue
		case errors.Is(err, unix.ELOOP):
			return -1, t.fail(ErrChanged)
		case errors.Is(err, unix.ENOTDIR):
			return -1, t.fail(errnoErr("mkdir", cur, syscall.ENOTDIR))
		}
		return -1, t.fail(pathErr("open", cur, err))
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		fail := func(e *Error) (int, *Error) {
			unix.Close(fd)
			return -1, e
		}
		if err := aborted(ctx, t); err != nil {
			return fail(err)
		}
		if err := f.guard(d, writeAccess); err != nil {
			return fail(&Error{Op: t.op, Path: t.given, Resolved: d, Code: "EACCES", Denied: true, Err: err})
		}
		if !f.allowed(d, true) {
			return fail(&Error{Op: t.op, Path: t.given, Resolved: d, Code: "EACCES", Denied: true, Err: outsideErr(d)})
		}
		name := filepath.Base(d)
		err := retryEINTR(func() error { return unix.Mkdirat(fd, name, 0o777) })
		made := err == nil
		if err != nil && !errors.Is(err, unix.EEXIST) {
			// The caller records the failure on its own target.
			return fail(t.fail(pathErr("mkdir", d, err)))
		}
		if made {
			f.record(OpMkdir, d, &tool.FileState{Exists: false}, true, nil)
		}
		// Made by someone else in between is fine if it is a real directory.
		next, err := openAt(fd, name, oDirRef, 0)
		if err != nil {
			if !made && (errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)) {
				err = ErrChanged
			} else {
				err = pathErr("open", d, err)
			}
			return fail(t.fail(err))
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// Mkdir makes a directory; recursive makes missing parents too. A recursive mkdir of a
// directory that already exists changes nothing and records nothing.
func (f *FS) Mkdir(ctx context.Context, p string, recursive bool) error {
	t, denied := f.check("mkdir", p, writeAccess, true)
	if denied != nil {
		return f.refused(OpMkdir, t, denied)
	}
	if err := aborted(ctx, t); err != nil {
		return f.refused(OpMkdir, t, err)
	}
	dirfd, name, err := f.openParent(t.real)
	if err == nil {
		defer unix.Close(dirfd)
		st, err := statAt(dirfd, name)
		switch {
		case err == nil && recursive && st.isDir():
			return nil
		case err == nil:
			return f.refused(OpMkdir, t, t.fail(errnoErr("mkdir", t.real, syscall.EEXIST)))
		case !errors.Is(err, unix.ENOENT):
			return f.refused(OpMkdir, t, t.fail(pathErr("lstat", t.real, err)))
		}
	} else if !recursive || !errors.Is(err, unix.ENOENT) {
		return f.refused(OpMkdir, t, t.fail(pathErr("mkdir", t.real, err)))
	}
	if recursive {
		fd, err := f.makeDirs(ctx, t, t.real)
		if err != nil {
			// Directories made before the failure are on the ledger already.
			return f.refused(OpMkdir, t, err)
		}
		unix.Close(fd)
		return nil
	}
	if err := retryEINTR(func() error { return unix.Mkdirat(dirfd, name, 0o777) }); err != nil {
		return f.refused(OpMkdir, t, t.fail(pathErr("mkdir", t.real, err)))
	}
	f.record(OpMkdir, t.real, &tool.FileState{Exists: false}, true, nil)
	return nil
}

// Remove deletes a file, a symlink (not what it points to) or, with recursive, a directory
// tree. A directory without recursive is EISDIR, as Node's fs.rm answers.
func (f *FS) Remove(ctx context.Context, p string, recursive bool) error {
	access := writeAccess
	if recursive {
		access = treeAccess
	}
	t, denied := f.check("rm", p, access, false)
	if denied != nil {
		return f.refused(OpRemove, t, denied)
	}
	if t.real == string(filepath.Separator) {
		return f.refused(OpRemove, t, &Error{Op: "rm", Path: p, Resolved: t.real, Code: "EPERM", Denied: true, Err: errors.New("refusing to remove the root directory")})
	}
	if err := aborted(ctx, t); err != nil {
		return f.refused(OpRemove, t, err)
	}
	dirfd, name, err := f.openParent(t.real)
	if err != nil {
		return f.refused(OpRemove, t, t.fail(pathErr("lstat", t.real, err)))
	}
	defer unix.Close(dirfd)
	st, err := statAt(dirfd, name)
	if err != nil {
		return f.refused(OpRemove, t, t.fail(pathErr("lstat", t.real, err)))
	}
	if st.isDir() && !recursive {
		return f.refused(OpRemove, t, t.fail(errnoErr("rm", t.real, syscall.EISDIR)))
	}
	before, err := f.snapshotOf(ctx, dirfd, name, t.real, st)
	if err != nil {
		return f.refused(OpRemove, t, t.fail(err))
	}
	if st.isDir() {
		if err := removeAllAt(dirfd, name, t.real); err != nil {
			// Part of the tree may be gone: the disk changed.
			e := t.fail(err)
			f.record(OpRemove, t.real, before, true, e)
			return e
		}
	} else if err := retryEINTR(func() error { return unix.Unlinkat(dirfd, name, 0) }); err != nil {
		e := t.fail(pathErr("unlink", t.real, err))
		f.record(OpRemove, t.real, before, false, e)
		return e
	}
	f.record(OpRemove, t.real, before, true, nil)
	return nil
}

// Rename moves from to to with rename(2) semantics, as Node does: a file replaces a file, a
// directory replaces an empty directory, and a symlink is moved, not followed. Two ledger
// entries are recorded, the source then the destination, each with its before-state.
func (f *FS) Rename(ctx context.Context, from, to string) error {
	ft, fromDenied := f.check("rename", from, treeAccess, false)
	tt, toDenied := f.check("rename", to, treeAccess, false)
	recordBoth := func(fromBefore, toBefore *tool.FileState, disk bool, err error) {
		f.record(OpRename, pathOf(ft), fromBefore, disk, err)
		f.record(OpRename, pathOf(tt), toBefore, disk, err)
	}
	failed := func(e *Error) error {
		recordBoth(nil, nil, false, e)
		return e
	}
	if e := renameRefused(ctx, ft, tt, fromDenied, toDenied); e != nil {
		return failed(e)
	}
	fromDir, fromName, err := f.openParent(ft.real)
	if err != nil {
		return failed(ft.fail(pathErr("lstat", ft.real, err)))
	}
	defer unix.Close(fromDir)
	fromInfo, err := statAt(fromDir, fromName)
	if err != nil {
		return failed(ft.fail(pathErr("lstat", ft.real, err)))
	}
	toDir, toName, err := f.openParent(tt.real)
	if err != nil {
		return failed(ft.fail(&os.LinkError{Op: "rename", Old: ft.real, New: tt.real, Err: err}))
	}
	defer unix.Close(toDir)
	// Answer the destination's refusals before taking a deep snapshot of either side.
	if e := destinationRefused(toDir, toName, fromInfo, ft, tt); e != nil {
		return failed(e)
	}
	fromBefore, err := f.snapshotOf(ctx, fromDir, fromName, ft.real, fromInfo)
	if err != nil {
		return failed(ft.fail(err))
	}
	var toBefore *tool.FileState
	for attempt := 0; ; attempt++ {
		toBefore = fromBefore
		if tt.real != ft.real {
			toBefore, err = f.snapshotAt(ctx, toDir, toName, tt.real)
			if err != nil {
				return failed(tt.fail(err))
			}
		}
		// When nothing stood at the destination, RENAME_NOREPLACE keeps it so: whatever
		// appeared in between is snapshotted first, then replaced.
		err = renameAt(fromDir, fromName, toDir, toName, !toBefore.Exists)
		if errors.Is(err, unix.EEXIST) && !toBefore.Exists && attempt == 0 {
			continue
		}
		break
	}
	if err != nil {
		e := ft.fail(&os.LinkError{Op: "rename", Old: ft.real, New: tt.real, Err: err})
		recordBoth(fromBefore, toBefore, false, e)
		return e
	}
	recordBoth(fromBefore, toBefore, true, nil)
	return nil
}

// renameRefused is why a rename of ft to tt is refused before either is touched: the
// policy denied one (fromDenied, toDenied), one is the root, or ctx is done; nil when it
// may go on.
func renameRefused(ctx context.Context, ft, tt target, fromDenied, toDenied *Error) *Error {
	if denied := cmpErr(fromDenied, toDenied); denied != nil {
		return denied
	}
	for _, t := range []target{ft, tt} {
		if t.real == string(filepath.Separator) {
			return &Error{Op: "rename", Path: t.given, Resolved: t.real, Code: "EPERM", Denied: true, Err: errors.New("refusing to rename the root directory")}
		}
	}
	return aborted(ctx, ft)
}

// destinationRefused is why rename(2) would refuse to put the source (examined as
// fromInfo) in place of the folder toName in toDir: a non-folder cannot replace a folder,
// nor anything a folder with entries. nil when nothing refuses.
func destinationRefused(toDir int, toName string, fromInfo fileStat, ft, tt target) *Error {
	toInfo, err := statAt(toDir, toName)
	if err != nil || !toInfo.isDir() || ft.real == tt.real {
		return nil
	}
	if !fromInfo.isDir() {
		return tt.fail(errnoErr("rename", tt.real, syscall.EISDIR))
	}
	nonEmpty, err := dirHasEntries(toDir, toName, tt.real)
	if err == nil && !nonEmpty {
		return nil
	}
	if err == nil {
		err = errnoErr("rename", tt.real, syscall.ENOTEMPTY)
	}
	return tt.fail(err)
}

func pathOf(t target) string {
	if t.real != "" {
		return t.real
	}
	return t.given
}

func cmpErr(a, b *Error) *Error {
	if a != nil {
		return a
	}
	return b
}

func dirHasEntries(dirfd int, name, path string) (bool, error) {
	fd, err := openAtName(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false, pathErr("open", path, err)
	}
	defer unix.Close(fd)
	names, err := readNames(fd, path)
	return len(names) > 0, err
}

// ReadDir lists a directory, sorted by name. Entries are described as Node's Dirent does: a
// symlink is neither a file nor a directory.
func (f *FS) ReadDir(ctx context.Context, p string) ([]tool.DirEntry, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY
	fd, t, err := f.openForRead(ctx, "readDir", p, flags)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	entries, err := readEntries(fd, t.real)
	if err != nil {
		return nil, t.fail(err)
	}
	slices.SortFunc(entries, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	out := make([]tool.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = tool.DirEntry{Name: e.name, IsDirectory: e.typ.IsDir(), IsFile: e.typ.IsRegular()}
	}
	return out, nil
}

// Exists reports whether p exists: false (no error) when it is missing, an error when the
// path is refused or cannot be examined.
func (f *FS) Exists(ctx context.Context, p string) (bool, error) {
	t, denied := f.check("exists", p, readAccess, true)
	if denied != nil {
		return false, denied
	}
	if err := aborted(ctx, t); err != nil {
		return false, err
	}
	missing := func(err error) bool { return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) }
	dirfd, name, err := f.openParent(t.real)
	if err != nil {
		if missing(err) {
			return false, nil
		}
		return false, t.fail(pathErr("lstat", t.real, err))
	}
	defer unix.Close(dirfd)
	_, err = statAt(dirfd, name)
	switch {
	case err == nil:
		return true, nil
	case missing(err):
		return false, nil
	}
	return false, t.fail(pathErr("lstat", t.real, err))
}

// Stat describes p, following symlinks (inside the scope only: the real location is what is
// checked).
func (f *FS) Stat(ctx context.Context, p string) (tool.FileInfo, error) {
	t, denied := f.check("stat", p, readAccess, true)
	if denied != nil {
		return tool.FileInfo{}, denied
	}
	if err := aborted(ctx, t); err != nil {
		return tool.FileInfo{}, err
	}
	dirfd, name, err := f.openParent(t.real)
	if err != nil {
		return tool.FileInfo{}, t.fail(pathErr("lstat", t.real, err))
	}
	defer unix.Close(dirfd)
	st, err := statAt(dirfd, name)
	if err != nil {
		return tool.FileInfo{}, t.fail(pathErr("lstat", t.real, err))
	}
	if st.isLink() {
		return tool.FileInfo{}, t.fail(ErrChanged)
	}
	return tool.FileInfo{
		Size:        st.size,
		IsDirectory: st.isDir(),
		IsFile:      st.isRegular(),
		ModifiedAt:  st.mtime,
		CreatedAt:   st.btime,
	}, nil
}
