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
	"syscall"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// Defaults for the size caps.
const (
	DefaultMaxReadBytes     = 256 << 20 // ReadFile refuses larger files
	DefaultMaxSnapshotBytes = 64 << 20  // undo data kept per snapshot before it is marked incomplete
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
	// MaxReadBytes caps ReadFile (default DefaultMaxReadBytes).
	MaxReadBytes int64
	// MaxSnapshotBytes caps the undo data of one snapshot: file contents plus a small
	// per-entry overhead (default DefaultMaxSnapshotBytes). Past it the snapshot is kept
	// without content and marked Incomplete, and Restore refuses it.
	MaxSnapshotBytes int64
}

// FS is a call's file system, enforced by the host. It is safe for concurrent use.
type FS struct {
	opts Options
	// roots are the scope roots' real locations, resolved once, at the first operation: a
	// call is short, and a root swapped for a link afterwards can only make the old location
	// the one that counts. Lazily, because most calls never touch the file system and
	// resolving costs a system call per path element.
	rootsOnce sync.Once
	roots     []string
}

var _ tool.FS = (*FS)(nil)

// New returns the file system for one call.
func New(opts Options) *FS {
	o := opts
	o.Scope.Allowed = slices.Clone(opts.Scope.Allowed)
	if o.Ledger == nil {
		o.Ledger = tool.NewLedger()
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.MaxSnapshotBytes <= 0 {
		o.MaxSnapshotBytes = DefaultMaxSnapshotBytes
	}
	return &FS{opts: o}
}

func (f *FS) realRoots() []string {
	f.rootsOnce.Do(func() {
		for _, root := range f.opts.Scope.Roots() {
			if root != "" && filepath.IsAbs(root) {
				f.roots = append(f.roots, policy.Real(root))
			}
		}
	})
	return f.roots
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

// check resolves p and decides whether op may touch it. follow says whether the final
// component is followed when it is a symlink (true for reads, writes and mkdir, as Node
// does; false for rm and rename, which act on a link itself).
func (f *FS) check(op, p string, write, follow bool) (target, *Error) {
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
	if !f.allowed(t.real, write) {
		return deny("EACCES", outsideErr(t.real))
	}
	return t, nil
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

// ReadFile reads a whole file, up to the read cap.
func (f *FS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	t, denied := f.check("readFile", p, false, true)
	if denied != nil {
		return nil, denied
	}
	if err := aborted(ctx, t); err != nil {
		return nil, err
	}
	// O_NONBLOCK so a named pipe planted in the workspace cannot hang the call in open.
	file, err := openNoSymlinks(t.real, os.O_RDONLY|oNonBlock, 0)
	if err != nil {
		return nil, t.fail(err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, t.fail(err)
	}
	switch {
	case fi.IsDir():
		return nil, t.fail(errnoErr("read", t.real, syscall.EISDIR))
	case !fi.Mode().IsRegular():
		return nil, t.fail(ErrNotRegular)
	case fi.Size() > f.opts.MaxReadBytes:
		return nil, t.fail(tooLarge(fi.Size(), f.opts.MaxReadBytes))
	}
	data, err := readAll(ctx, file, fi.Size(), f.opts.MaxReadBytes)
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

// readAll reads r to the end, refusing more than limit bytes and stopping when ctx ends.
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
		if err == io.EOF {
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
	t, denied := f.check(op, p, true, true)
	if denied != nil {
		return f.refused(ledgerOp, t, denied)
	}
	if err := aborted(ctx, t); err != nil {
		return f.refused(ledgerOp, t, err)
	}
	if truncate {
		if err := f.makeDirs(ctx, t, filepath.Dir(t.real)); err != nil {
			return f.refused(ledgerOp, t, err)
		}
	}
	flag := os.O_WRONLY | os.O_APPEND
	if truncate {
		flag = os.O_WRONLY | os.O_TRUNC
	}
	// Snapshot, then open. When nothing stood there, O_EXCL makes sure nothing appeared in
	// between, so "did not exist" stays true; if something did, snapshot again.
	var before *tool.FileState
	var file *os.File
	for attempt := 0; ; attempt++ {
		var err error
		before, err = f.snapshotFile(ctx, t)
		if err != nil {
			return f.refused(ledgerOp, t, t.fail(err))
		}
		open := flag
		if !before.Exists {
			open |= os.O_CREATE | os.O_EXCL
		}
		file, err = openNoSymlinks(t.real, open|oNonBlock, 0o666)
		if err == nil {
			break
		}
		if errors.Is(err, fs.ErrExist) && !before.Exists && attempt == 0 {
			continue
		}
		if !before.Exists && errors.Is(err, fs.ErrExist) {
			err = ErrChanged
		}
		e := t.fail(err)
		f.record(ledgerOp, t.real, before, false, e)
		return e
	}
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

// snapshotFile is the before-state of a write target: absent, or a regular file. A directory
// or a special file is refused before anything changes.
func (f *FS) snapshotFile(ctx context.Context, t target) (*tool.FileState, error) {
	fi, err := os.Lstat(t.real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &tool.FileState{Exists: false}, nil
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, errnoErr("open", t.real, syscall.EISDIR)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, ErrChanged
	case !fi.Mode().IsRegular():
		return nil, ErrNotRegular
	}
	return f.snapshot(ctx, t.real)
}

// makeDirs creates dir and its missing parents (mkdir -p), recording each directory it
// creates. Each one must itself be allowed: a grant for a file does not let a tool create
// the directories above it.
func (f *FS) makeDirs(ctx context.Context, t target, dir string) *Error {
	var missing []string
	for cur := dir; ; cur = filepath.Dir(cur) {
		fi, err := os.Lstat(cur)
		if err == nil {
			if fi.Mode()&fs.ModeSymlink != 0 {
				return t.fail(ErrChanged)
			}
			if !fi.IsDir() {
				return t.fail(errnoErr("mkdir", cur, syscall.ENOTDIR))
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return t.fail(err)
		}
		missing = append(missing, cur)
		if filepath.Dir(cur) == cur {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := aborted(ctx, t); err != nil {
			return err
		}
		if !f.allowed(d, true) {
			return &Error{Op: t.op, Path: t.given, Resolved: d, Code: "EACCES", Denied: true, Err: outsideErr(d)}
		}
		err := os.Mkdir(d, 0o777)
		if errors.Is(err, fs.ErrExist) {
			// Made by someone else in between: fine if it is a real directory.
			if fi, lerr := os.Lstat(d); lerr == nil && fi.IsDir() {
				continue
			}
			err = ErrChanged
		}
		if err != nil {
			// The caller records the failure on its own target.
			return t.fail(err)
		}
		f.record(OpMkdir, d, &tool.FileState{Exists: false}, true, nil)
	}
	return nil
}

// Mkdir makes a directory; recursive makes missing parents too. A recursive mkdir of a
// directory that already exists changes nothing and records nothing.
func (f *FS) Mkdir(ctx context.Context, p string, recursive bool) error {
	t, denied := f.check("mkdir", p, true, true)
	if denied != nil {
		return f.refused(OpMkdir, t, denied)
	}
	if err := aborted(ctx, t); err != nil {
		return f.refused(OpMkdir, t, err)
	}
	fi, err := os.Lstat(t.real)
	switch {
	case err == nil && recursive && fi.IsDir():
		return nil
	case err == nil:
		return f.refused(OpMkdir, t, t.fail(errnoErr("mkdir", t.real, syscall.EEXIST)))
	case !errors.Is(err, fs.ErrNotExist):
		return f.refused(OpMkdir, t, t.fail(err))
	}
	if recursive {
		if err := f.makeDirs(ctx, t, t.real); err != nil {
			// Directories made before the failure are on the ledger already.
			return f.refused(OpMkdir, t, err)
		}
		return nil
	}
	if err := os.Mkdir(t.real, 0o777); err != nil {
		return f.refused(OpMkdir, t, t.fail(err))
	}
	f.record(OpMkdir, t.real, &tool.FileState{Exists: false}, true, nil)
	return nil
}

// Remove deletes a file, a symlink (not what it points to) or, with recursive, a directory
// tree. A directory without recursive is EISDIR, as Node's fs.rm answers.
func (f *FS) Remove(ctx context.Context, p string, recursive bool) error {
	t, denied := f.check("rm", p, true, false)
	if denied != nil {
		return f.refused(OpRemove, t, denied)
	}
	if t.real == string(filepath.Separator) {
		return f.refused(OpRemove, t, &Error{Op: "rm", Path: p, Resolved: t.real, Code: "EPERM", Denied: true, Err: errors.New("refusing to remove the root directory")})
	}
	if err := aborted(ctx, t); err != nil {
		return f.refused(OpRemove, t, err)
	}
	fi, err := os.Lstat(t.real)
	if err != nil {
		return f.refused(OpRemove, t, t.fail(err))
	}
	if fi.IsDir() && !recursive {
		return f.refused(OpRemove, t, t.fail(errnoErr("rm", t.real, syscall.EISDIR)))
	}
	before, err := f.snapshot(ctx, t.real)
	if err != nil {
		return f.refused(OpRemove, t, t.fail(err))
	}
	if fi.IsDir() {
		if err := os.RemoveAll(t.real); err != nil {
			// Part of the tree may be gone: the disk changed.
			e := t.fail(err)
			f.record(OpRemove, t.real, before, true, e)
			return e
		}
	} else if err := syscall.Unlink(t.real); err != nil {
		e := t.fail(&fs.PathError{Op: "unlink", Path: t.real, Err: err})
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
	ft, fromDenied := f.check("rename", from, true, false)
	tt, toDenied := f.check("rename", to, true, false)
	recordBoth := func(fromBefore, toBefore *tool.FileState, disk bool, err error) {
		f.record(OpRename, pathOf(ft), fromBefore, disk, err)
		f.record(OpRename, pathOf(tt), toBefore, disk, err)
	}
	if denied := cmpErr(fromDenied, toDenied); denied != nil {
		recordBoth(nil, nil, false, denied)
		return denied
	}
	for _, t := range []target{ft, tt} {
		if t.real == string(filepath.Separator) {
			e := &Error{Op: "rename", Path: t.given, Resolved: t.real, Code: "EPERM", Denied: true, Err: errors.New("refusing to rename the root directory")}
			recordBoth(nil, nil, false, e)
			return e
		}
	}
	if err := aborted(ctx, ft); err != nil {
		recordBoth(nil, nil, false, err)
		return err
	}
	fromInfo, err := os.Lstat(ft.real)
	if err != nil {
		e := ft.fail(err)
		recordBoth(nil, nil, false, e)
		return e
	}
	// Answer the destination's refusals before taking a deep snapshot of either side.
	if toInfo, err := os.Lstat(tt.real); err == nil && toInfo.IsDir() && ft.real != tt.real {
		if !fromInfo.IsDir() {
			e := tt.fail(errnoErr("rename", tt.real, syscall.EISDIR))
			recordBoth(nil, nil, false, e)
			return e
		}
		if nonEmpty, err := dirHasEntries(tt.real); err != nil || nonEmpty {
			if err == nil {
				err = errnoErr("rename", tt.real, syscall.ENOTEMPTY)
			}
			e := tt.fail(err)
			recordBoth(nil, nil, false, e)
			return e
		}
	}
	fromBefore, err := f.snapshot(ctx, ft.real)
	if err != nil {
		e := ft.fail(err)
		recordBoth(nil, nil, false, e)
		return e
	}
	toBefore := fromBefore
	if tt.real != ft.real {
		toBefore, err = f.snapshot(ctx, tt.real)
		if err != nil {
			e := tt.fail(err)
			recordBoth(nil, nil, false, e)
			return e
		}
	}
	// syscall.Rename, not os.Rename: os.Rename refuses an existing empty directory as the
	// destination, which rename(2) and Node accept.
	if err := syscall.Rename(ft.real, tt.real); err != nil {
		e := ft.fail(&os.LinkError{Op: "rename", Old: ft.real, New: tt.real, Err: err})
		recordBoth(fromBefore, toBefore, false, e)
		return e
	}
	recordBoth(fromBefore, toBefore, true, nil)
	return nil
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

func dirHasEntries(dir string) (bool, error) {
	d, err := openNoSymlinks(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return false, err
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	return len(names) > 0, err
}

// ReadDir lists a directory, sorted by name. Entries are described as Node's Dirent does: a
// symlink is neither a file nor a directory.
func (f *FS) ReadDir(ctx context.Context, p string) ([]tool.DirEntry, error) {
	t, denied := f.check("readDir", p, false, true)
	if denied != nil {
		return nil, denied
	}
	if err := aborted(ctx, t); err != nil {
		return nil, err
	}
	d, err := openNoSymlinks(t.real, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, t.fail(err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, t.fail(err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make([]tool.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = tool.DirEntry{Name: e.Name(), IsDirectory: e.Type().IsDir(), IsFile: e.Type().IsRegular()}
	}
	return out, nil
}

// Exists reports whether p exists: false (no error) when it is missing, an error when the
// path is refused or cannot be examined.
func (f *FS) Exists(ctx context.Context, p string) (bool, error) {
	t, denied := f.check("exists", p, false, true)
	if denied != nil {
		return false, denied
	}
	if err := aborted(ctx, t); err != nil {
		return false, err
	}
	_, err := os.Lstat(t.real)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return false, nil
	}
	return false, t.fail(err)
}

// Stat describes p, following symlinks (inside the scope only: the real location is what is
// checked).
func (f *FS) Stat(ctx context.Context, p string) (tool.FileInfo, error) {
	t, denied := f.check("stat", p, false, true)
	if denied != nil {
		return tool.FileInfo{}, denied
	}
	if err := aborted(ctx, t); err != nil {
		return tool.FileInfo{}, err
	}
	fi, err := os.Lstat(t.real)
	if err != nil {
		return tool.FileInfo{}, t.fail(err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return tool.FileInfo{}, t.fail(ErrChanged)
	}
	return tool.FileInfo{
		Size:        fi.Size(),
		IsDirectory: fi.IsDir(),
		IsFile:      fi.Mode().IsRegular(),
		ModifiedAt:  fi.ModTime(),
		CreatedAt:   birthTime(t.real, fi),
	}, nil
}
