package toolfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// world is a workspace with things planted around it.
//
//	base/ws            the workspace
//	base/ws-x          a sibling whose name starts like the workspace's
//	base/allowed       an extra allowed path
//	base/tmp           the session's temporary folder
//	base/out/secret    something outside
//	base/home          what "~" means
type world struct {
	base, ws, out, tmp, allowed string
	ledger                      *tool.Ledger
}

func newWorld(t *testing.T) *world {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{
		base:    base,
		ws:      filepath.Join(base, "ws"),
		out:     filepath.Join(base, "out"),
		tmp:     filepath.Join(base, "tmp"),
		allowed: filepath.Join(base, "allowed"),
		ledger:  tool.NewLedger(),
	}
	for _, d := range []string{w.ws, w.out, w.tmp, w.allowed, filepath.Join(base, "ws-x"), filepath.Join(base, "home")} {
		mustDo(t, os.MkdirAll(d, 0o755))
	}
	mustDo(t, os.WriteFile(filepath.Join(w.out, "secret"), []byte("outside secret"), 0o600))
	return w
}

func (w *world) fs(opts ...func(*Options)) *FS {
	o := Options{
		Scope: policy.Scope{
			Workspace: w.ws,
			Allowed:   []string{w.allowed},
			Home:      filepath.Join(w.base, "home"),
			TempDir:   w.tmp,
		},
		Tool:   "test-tool",
		CallID: "call-1",
		Ledger: w.ledger,
	}
	for _, f := range opts {
		f(&o)
	}
	return New(o)
}

func (w *world) in(rel string) string { return filepath.Join(w.ws, rel) }

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeTestFile(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	mustDo(t, os.MkdirAll(filepath.Dir(path), 0o755))
	mustDo(t, os.WriteFile(path, []byte(content), mode))
	mustDo(t, os.Chmod(path, mode))
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantCode(t *testing.T, err error, code string) *Error {
	t.Helper()
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("want *toolfs.Error with code %s, got %v", code, err)
	}
	if fe.Code != code {
		t.Fatalf("code = %s, want %s (%v)", fe.Code, code, err)
	}
	return fe
}

func wantDenied(t *testing.T, err error, code string) *Error {
	t.Helper()
	fe := wantCode(t, err, code)
	if !fe.Denied {
		t.Fatalf("want a policy refusal, got %v", err)
	}
	return fe
}

func notExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s must not exist (err=%v)", path, err)
	}
}

var ctx = context.Background()

func TestOpsInsideWorkspace(t *testing.T) {
	w := newWorld(t)
	f := w.fs()

	mustDo(t, f.WriteFile(ctx, "src/deep/a.txt", []byte("hello")))
	if got := readTestFile(t, w.in("src/deep/a.txt")); got != "hello" {
		t.Fatalf("content = %q", got)
	}
	data, err := f.ReadFile(ctx, "src/deep/a.txt")
	mustDo(t, err)
	if string(data) != "hello" {
		t.Fatalf("ReadFile = %q", data)
	}
	mustDo(t, f.AppendFile(ctx, "src/deep/a.txt", []byte(" world")))
	mustDo(t, f.AppendFile(ctx, "new-log.txt", []byte("line\n")))
	if got := readTestFile(t, w.in("src/deep/a.txt")); got != "hello world" {
		t.Fatalf("after append = %q", got)
	}

	for _, name := range []string{"b.txt", "a.txt", "C.txt", "_z"} {
		mustDo(t, f.WriteFile(ctx, "list/"+name, nil))
	}
	mustDo(t, f.Mkdir(ctx, "list/dir", false))
	mustDo(t, os.Symlink("a.txt", w.in("list/link")))
	entries, err := f.ReadDir(ctx, "list")
	mustDo(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s:%v:%v", e.Name, e.IsDirectory, e.IsFile))
	}
	want := "C.txt:false:true _z:false:true a.txt:false:true b.txt:false:true dir:true:false link:false:false"
	if strings.Join(got, " ") != want {
		t.Fatalf("ReadDir = %v, want %v", got, want)
	}

	ok, err := f.Exists(ctx, "list/a.txt")
	if err != nil || !ok {
		t.Fatalf("Exists(list/a.txt) = %v, %v", ok, err)
	}
	ok, err = f.Exists(ctx, "list/nope")
	if err != nil || ok {
		t.Fatalf("Exists(missing) = %v, %v; want false, nil", ok, err)
	}
	ok, err = f.Exists(ctx, "list/a.txt/below")
	if err != nil || ok {
		t.Fatalf("Exists(below a file) = %v, %v; want false, nil", ok, err)
	}

	before := time.Now().Add(-time.Minute)
	st, err := f.Stat(ctx, "src/deep/a.txt")
	mustDo(t, err)
	if st.Size != 11 || !st.IsFile || st.IsDirectory || st.ModifiedAt.Before(before) || st.CreatedAt.IsZero() {
		t.Fatalf("Stat = %+v", st)
	}
	st, err = f.Stat(ctx, "list/link") // follows a link inside the scope
	mustDo(t, err)
	if !st.IsFile || st.Size != 0 {
		t.Fatalf("Stat(link) = %+v", st)
	}
	st, err = f.Stat(ctx, "list")
	mustDo(t, err)
	if !st.IsDirectory || st.IsFile {
		t.Fatalf("Stat(dir) = %+v", st)
	}

	mustDo(t, f.Mkdir(ctx, "m/n/o", true))
	mustDo(t, f.Mkdir(ctx, "m/n/o", true)) // exists: fine
	if fi, err := os.Stat(w.in("m/n/o")); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir -p: %v", err)
	}
	mustDo(t, f.Rename(ctx, "src/deep/a.txt", "m/n/o/moved.txt"))
	notExist(t, w.in("src/deep/a.txt"))
	if got := readTestFile(t, w.in("m/n/o/moved.txt")); got != "hello world" {
		t.Fatalf("renamed content = %q", got)
	}
	mustDo(t, f.Rename(ctx, "m", "m2"))
	mustDo(t, f.Remove(ctx, "m2/n/o/moved.txt", false))
	notExist(t, w.in("m2/n/o/moved.txt"))
	mustDo(t, f.Remove(ctx, "m2", true))
	notExist(t, w.in("m2"))

	// The link is removed, not what it points to.
	mustDo(t, f.Remove(ctx, "list/link", false))
	notExist(t, w.in("list/link"))
	if _, err := os.Stat(w.in("list/a.txt")); err != nil {
		t.Fatal("rm of a link removed its target")
	}
	// Absolute paths and "~" resolve as ctx.resolvePath does.
	mustDo(t, f.WriteFile(ctx, w.in("abs.txt"), []byte("abs")))
	if _, err := f.ReadFile(ctx, "abs.txt"); err != nil {
		t.Fatal(err)
	}
}

func TestErrorCodes(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	writeTestFile(t, w.in("file"), "x", 0o644)
	writeTestFile(t, w.in("full/inner"), "x", 0o644)
	mustDo(t, os.MkdirAll(w.in("dir"), 0o755))
	mustDo(t, os.MkdirAll(w.in("empty"), 0o755))

	_, err := f.ReadFile(ctx, "missing")
	fe := wantCode(t, err, "ENOENT")
	if fe.Path != "missing" || fe.Resolved != w.in("missing") || fe.Denied {
		t.Fatalf("error fields = %+v", fe)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("ENOENT must unwrap to fs.ErrNotExist")
	}
	if msg := err.Error(); msg != "ENOENT: no such file or directory, open 'missing' ("+w.in("missing")+")" {
		t.Fatalf("message = %q", msg)
	}
	_, err = f.ReadFile(ctx, "dir")
	wantCode(t, err, "EISDIR")
	wantCode(t, f.WriteFile(ctx, "dir", []byte("x")), "EISDIR")
	wantCode(t, f.AppendFile(ctx, "dir", []byte("x")), "EISDIR")
	wantCode(t, f.AppendFile(ctx, "nodir/x", []byte("x")), "ENOENT")
	_, err = f.ReadDir(ctx, "file")
	wantCode(t, err, "ENOTDIR")
	_, err = f.ReadDir(ctx, "missing")
	wantCode(t, err, "ENOENT")
	_, err = f.Stat(ctx, "missing")
	wantCode(t, err, "ENOENT")
	wantCode(t, f.Mkdir(ctx, "dir", false), "EEXIST")
	wantCode(t, f.Mkdir(ctx, "file", true), "EEXIST")
	wantCode(t, f.Mkdir(ctx, "a/b", false), "ENOENT")
	wantCode(t, f.Mkdir(ctx, "file/sub", true), "ENOTDIR")
	wantCode(t, f.WriteFile(ctx, "file/sub/x", []byte("x")), "ENOTDIR")
	wantCode(t, f.Remove(ctx, "missing", false), "ENOENT")
	wantCode(t, f.Remove(ctx, "missing", true), "ENOENT")
	wantCode(t, f.Remove(ctx, "empty", false), "EISDIR")
	wantCode(t, f.Rename(ctx, "missing", "x"), "ENOENT")
	wantCode(t, f.Rename(ctx, "dir", "full"), "ENOTEMPTY")
	wantCode(t, f.Rename(ctx, "file", "dir"), "EISDIR")
	wantCode(t, f.Rename(ctx, "dir", "file"), "ENOTDIR")
	wantCode(t, f.Rename(ctx, "dir", "dir/inside"), "EINVAL")
	wantCode(t, f.Rename(ctx, "file", "nodir/x"), "ENOENT")
	wantCode(t, f.WriteFile(ctx, "", []byte("x")), "EINVAL")
	_, err = f.ReadFile(ctx, "a\x00b")
	wantCode(t, err, "EINVAL")

	// A directory replaces an empty directory, as rename(2) and Node do.
	mustDo(t, f.Rename(ctx, "dir", "empty"))
	notExist(t, w.in("dir"))
	// A file replaces a file.
	writeTestFile(t, w.in("other"), "other", 0o644)
	mustDo(t, f.Rename(ctx, "other", "file"))
	if got := readTestFile(t, w.in("file")); got != "other" {
		t.Fatalf("file = %q", got)
	}
	if fi, _ := os.Stat(w.in("a")); fi != nil {
		t.Fatal("a failed mkdir left a directory behind")
	}
}

func TestBlockedRefusedEvenWhenGranted(t *testing.T) {
	w := newWorld(t)
	grantAll := GrantsFunc(func(string, bool) bool { return true })
	f := w.fs(func(o *Options) { o.Grants = grantAll })
	const probe = "/etc/jean2-toolfs-test-must-not-exist"
	t.Cleanup(func() { os.Remove(probe) })

	_, err := f.ReadFile(ctx, "/etc/hostname")
	fe := wantDenied(t, err, "EPERM")
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "blocked system path") {
		t.Fatalf("error = %v", err)
	}
	if fe.Path != "/etc/hostname" {
		t.Fatalf("Path = %q", fe.Path)
	}
	wantDenied(t, f.WriteFile(ctx, probe, []byte("x")), "EPERM")
	notExist(t, probe)
	_, err = f.Exists(ctx, "/usr/bin")
	wantDenied(t, err, "EPERM")
	_, err = f.ReadDir(ctx, "/proc/self")
	wantDenied(t, err, "EPERM")
	_, err = f.Stat(ctx, "/root/.bashrc")
	wantDenied(t, err, "EPERM")
	wantDenied(t, f.Mkdir(ctx, "/etc/jean2-dir", true), "EPERM")
	wantDenied(t, f.Rename(ctx, "/etc/hostname", "stolen"), "EPERM")
	notExist(t, w.in("stolen"))

	// A link planted in the workspace that leads into a blocked directory.
	mustDo(t, os.Symlink("/etc", w.in("etc")))
	mustDo(t, os.Symlink("/etc/hostname", w.in("hostname")))
	_, err = f.ReadFile(ctx, "etc/hostname")
	wantDenied(t, err, "EPERM")
	_, err = f.ReadFile(ctx, "hostname")
	wantDenied(t, err, "EPERM")
	wantDenied(t, f.WriteFile(ctx, "etc/jean2-toolfs-test-must-not-exist", []byte("x")), "EPERM")
	notExist(t, probe)
	// rm of a link that sits in /etc (reached through a link in the workspace) is refused.
	wantDenied(t, f.Remove(ctx, "etc/hostname", false), "EPERM")
	if _, err := os.Lstat("/etc/hostname"); err != nil {
		t.Fatalf("/etc/hostname: %v", err)
	}
	// /proc/self/cwd is a link inside a blocked directory that leads back out (to the test's
	// working directory): the place rm would touch is the link in /proc, so it is refused
	// even though the path, followed, leads somewhere harmless.
	mustDo(t, os.Symlink("/proc", w.in("proc")))
	wantDenied(t, f.Remove(ctx, "proc/self/cwd", false), "EPERM")
	wantDenied(t, f.Rename(ctx, "proc/self/cwd", "cwd"), "EPERM")
	// Refusals are on the ledger, never on disk.
	for _, c := range w.ledger.Changes() {
		if c.OK || c.Disk || c.Before != nil || c.Error == "" {
			t.Fatalf("refused change recorded as %+v", c)
		}
	}
}

func TestOutsideRefusedThenGranted(t *testing.T) {
	w := newWorld(t)
	secret := filepath.Join(w.out, "secret")
	_, err := w.fs().ReadFile(ctx, "../out/secret")
	fe := wantDenied(t, err, "EACCES")
	if fe.Path != "../out/secret" || fe.Resolved != secret || !errors.Is(err, ErrOutsideScope) {
		t.Fatalf("error = %+v", fe)
	}
	msg := err.Error()
	for _, part := range []string{"'../out/secret'", secret, "ask permission", "allowed paths"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}

	type ask struct {
		path  string
		write bool
	}
	var mu sync.Mutex
	var asked []ask
	readOnly := GrantsFunc(func(p string, write bool) bool {
		mu.Lock()
		asked = append(asked, ask{p, write})
		mu.Unlock()
		return p == secret && !write
	})
	f := w.fs(func(o *Options) { o.Grants = readOnly })
	data, err := f.ReadFile(ctx, "../out/secret")
	mustDo(t, err)
	if string(data) != "outside secret" {
		t.Fatalf("read %q", data)
	}
	wantDenied(t, f.WriteFile(ctx, "../out/secret", []byte("x")), "EACCES")
	if got := readTestFile(t, secret); got != "outside secret" {
		t.Fatalf("secret changed to %q", got)
	}
	if asked[0] != (ask{secret, false}) || asked[len(asked)-1] != (ask{secret, true}) {
		t.Fatalf("Grants asked %v", asked)
	}

	newFile := filepath.Join(w.out, "newdir/f")
	rw := GrantsFunc(func(p string, write bool) bool { return p == secret || p == newFile })
	f = w.fs(func(o *Options) { o.Grants = rw })
	mustDo(t, f.WriteFile(ctx, secret, []byte("granted")))
	if got := readTestFile(t, secret); got != "granted" {
		t.Fatalf("secret = %q", got)
	}
	// A grant for a file does not let the tool create directories next to it.
	err = f.WriteFile(ctx, newFile, []byte("x"))
	if fe := wantDenied(t, err, "EACCES"); fe.Resolved != filepath.Join(w.out, "newdir") {
		t.Fatalf("the refusal names %q, want the directory it would have made", fe.Resolved)
	}
	notExist(t, filepath.Join(w.out, "newdir"))
	// A grant on the real path only: a link to it elsewhere outside is judged by its target.
	mustDo(t, os.Symlink(secret, filepath.Join(w.base, "link-to-secret")))
	if _, err := f.ReadFile(ctx, filepath.Join(w.base, "link-to-secret")); err != nil {
		t.Fatalf("a link leading to the granted path: %v", err)
	}
}

func TestSiblingPrefixAndDotDot(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	sibling := filepath.Join(w.base, "ws-x", "f")
	for _, p := range []string{sibling, "../ws-x/f", "sub/../../ws-x/f", "../out/secret", "~/../out/secret", "..", w.base} {
		_, err := f.ReadFile(ctx, p)
		wantDenied(t, err, "EACCES")
		wantDenied(t, f.WriteFile(ctx, p, []byte("x")), "EACCES")
	}
	notExist(t, sibling)
	_, err := f.ReadDir(ctx, "..")
	wantDenied(t, err, "EACCES")
	wantDenied(t, f.Remove(ctx, "../out", true), "EACCES")
	wantDenied(t, f.Rename(ctx, "../out/secret", "stolen"), "EACCES")
	notExist(t, w.in("stolen"))
	if got := readTestFile(t, filepath.Join(w.out, "secret")); got != "outside secret" {
		t.Fatal("outside file changed")
	}
}

func TestSymlinkPlantedInWorkspace(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	secret := filepath.Join(w.out, "secret")
	mustDo(t, os.Symlink(secret, w.in("file-link")))                           // file
	mustDo(t, os.Symlink(w.out, w.in("dir-link")))                             // directory
	mustDo(t, os.Symlink("../out", w.in("rel-link")))                          // relative directory
	mustDo(t, os.Symlink(filepath.Join(w.out, "missing"), w.in("dangling")))   // dangling file
	mustDo(t, os.Symlink(filepath.Join(w.out, "nodir"), w.in("dangling-dir"))) // dangling parent
	mustDo(t, os.Symlink("dir-link", w.in("chain")))                           // link to a link

	for _, p := range []string{"file-link", "dir-link/secret", "rel-link/secret", "chain/secret"} {
		_, err := f.ReadFile(ctx, p)
		wantDenied(t, err, "EACCES")
		wantDenied(t, f.WriteFile(ctx, p, []byte("pwned")), "EACCES")
		wantDenied(t, f.AppendFile(ctx, p, []byte("pwned")), "EACCES")
		_, err = f.Stat(ctx, p)
		wantDenied(t, err, "EACCES")
		_, err = f.Exists(ctx, p)
		wantDenied(t, err, "EACCES")
	}
	if got := readTestFile(t, secret); got != "outside secret" {
		t.Fatalf("secret changed through a link: %q", got)
	}
	for _, p := range []string{"dir-link", "rel-link", "chain"} {
		_, err := f.ReadDir(ctx, p)
		wantDenied(t, err, "EACCES")
		wantDenied(t, f.Mkdir(ctx, p+"/newdir", true), "EACCES")
		wantDenied(t, f.WriteFile(ctx, p+"/new.txt", []byte("x")), "EACCES")
		wantDenied(t, f.Rename(ctx, "file-link", p+"/moved"), "EACCES")
		wantDenied(t, f.Remove(ctx, p+"/secret", false), "EACCES")
	}
	notExist(t, filepath.Join(w.out, "newdir"))
	notExist(t, filepath.Join(w.out, "new.txt"))
	notExist(t, filepath.Join(w.out, "moved"))

	// Writing through a dangling link would create its target outside.
	wantDenied(t, f.WriteFile(ctx, "dangling", []byte("x")), "EACCES")
	wantDenied(t, f.AppendFile(ctx, "dangling", []byte("x")), "EACCES")
	wantDenied(t, f.Mkdir(ctx, "dangling", false), "EACCES")
	notExist(t, filepath.Join(w.out, "missing"))
	// And a dangling parent directory link.
	wantDenied(t, f.WriteFile(ctx, "dangling-dir/f", []byte("x")), "EACCES")
	wantDenied(t, f.Mkdir(ctx, "dangling-dir/a/b", true), "EACCES")
	notExist(t, filepath.Join(w.out, "nodir"))

	// The links themselves live in the workspace: removing or renaming one is allowed and
	// touches only the link.
	mustDo(t, f.Rename(ctx, "file-link", "renamed-link"))
	mustDo(t, f.Remove(ctx, "renamed-link", false))
	mustDo(t, f.Remove(ctx, "dir-link", true))
	if got := readTestFile(t, secret); got != "outside secret" {
		t.Fatal("removing a link touched its target")
	}

	// A link that stays inside the workspace is followed.
	writeTestFile(t, w.in("real/target.txt"), "inside", 0o644)
	mustDo(t, os.Symlink("real", w.in("in-link")))
	mustDo(t, f.WriteFile(ctx, "in-link/target.txt", []byte("through")))
	if got := readTestFile(t, w.in("real/target.txt")); got != "through" {
		t.Fatalf("target = %q", got)
	}
	changes := w.ledger.Changes()
	if last := changes[len(changes)-1]; last.Path != w.in("real/target.txt") {
		t.Fatalf("ledger path = %q, want the real path", last.Path)
	}
}

func TestOpenGuardsAgainstSwappedLinks(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	mustDo(t, os.Symlink(filepath.Join(w.out, "secret"), w.in("final")))
	for _, flags := range []int{os.O_RDONLY, os.O_WRONLY | os.O_TRUNC} {
		if _, err := f.openReal(w.in("final"), flags, 0); !errors.Is(err, syscall.ELOOP) {
			t.Fatalf("open (%#x) of a final link: %v, want ELOOP", flags, err)
		}
	}
	mustDo(t, os.Symlink(w.out, w.in("parent")))
	if _, err := f.openReal(w.in("parent/secret"), os.O_RDONLY, 0); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("open through a linked parent: %v, want ELOOP", err)
	}
	// The fallback walk, for systems without openat2, refuses the same links.
	if _, err := openWalk(unix.AT_FDCWD, w.in("parent/secret"), os.O_RDONLY, 0); err == nil {
		t.Fatal("the walk opened a path through a linked parent")
	}
	if _, err := openWalk(unix.AT_FDCWD, w.in("final"), os.O_RDONLY, 0); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("the walk opened a final link: %v, want ELOOP", err)
	}
}

func TestTempDirAndAllowedPaths(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	for _, p := range []string{filepath.Join(w.tmp, "overflow/result.json"), filepath.Join(w.allowed, "notes.md")} {
		mustDo(t, f.WriteFile(ctx, p, []byte("ok")))
		data, err := f.ReadFile(ctx, p)
		mustDo(t, err)
		if string(data) != "ok" {
			t.Fatalf("%s = %q", p, data)
		}
		mustDo(t, f.Remove(ctx, p, false))
	}
	// "~" is not a root of its own.
	wantDenied(t, f.WriteFile(ctx, "~/x", []byte("x")), "EACCES")
}

func TestReadSizeCap(t *testing.T) {
	w := newWorld(t)
	f := w.fs(func(o *Options) { o.MaxReadBytes = 10 })
	writeTestFile(t, w.in("ten"), "0123456789", 0o644)
	writeTestFile(t, w.in("eleven"), "0123456789A", 0o644)
	if data, err := f.ReadFile(ctx, "ten"); err != nil || len(data) != 10 {
		t.Fatalf("ReadFile(ten) = %d bytes, %v", len(data), err)
	}
	_, err := f.ReadFile(ctx, "eleven")
	wantCode(t, err, CodeTooLarge)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "11 bytes") || !strings.Contains(err.Error(), "10 bytes") {
		t.Fatalf("error = %v", err)
	}
	if New(Options{}).opts.MaxReadBytes != DefaultMaxReadBytes || New(Options{}).opts.MaxSnapshotBytes != DefaultMaxSnapshotBytes {
		t.Fatal("defaults not applied")
	}
}

func TestSpecialFilesDoNotHang(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	if err := syscall.Mkfifo(w.in("pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := f.ReadFile(ctx, "pipe")
		wantCode(t, err, "EINVAL")
		wantCode(t, f.WriteFile(ctx, "pipe", []byte("x")), "EINVAL")
		// A tree holding a pipe cannot be snapshotted whole: rm -r goes ahead, marked incomplete.
		mustDo(t, os.MkdirAll(w.in("d"), 0o755))
		mustDo(t, syscall.Mkfifo(w.in("d/p"), 0o644))
		mustDo(t, f.Remove(ctx, "d", true))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an operation on a named pipe hung")
	}
	changes := w.ledger.Changes()
	last := changes[len(changes)-1]
	if last.Before == nil || !strings.Contains(last.Before.Incomplete, "named pipe") {
		t.Fatalf("rm -r of a tree with a pipe: before = %+v", last.Before)
	}
}

func TestCanceledContext(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	c, cancel := context.WithCancel(ctx)
	cancel()
	wantCode(t, f.WriteFile(c, "x", []byte("x")), CodeAborted)
	notExist(t, w.in("x"))
	_, err := f.ReadFile(c, "x")
	wantCode(t, err, CodeAborted)
	writeTestFile(t, w.in("keep"), "k", 0o644)
	wantCode(t, f.Remove(c, "keep", false), CodeAborted)
	if _, err := os.Stat(w.in("keep")); err != nil {
		t.Fatal("a canceled rm removed the file")
	}
}

func TestConcurrentUse(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("c/%d/f.txt", i)
			if err := f.WriteFile(ctx, p, []byte("x")); err != nil {
				t.Error(err)
			}
			if _, err := f.ReadFile(ctx, p); err != nil {
				t.Error(err)
			}
			if err := f.AppendFile(ctx, p, []byte("y")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// The shared parent "c" was created by whichever call came first; it is recorded once.
	created := 0
	for _, c := range w.ledger.Changes() {
		if c.Path == w.in("c") {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("parent recorded %d times", created)
	}
}

func TestNoWorkspace(t *testing.T) {
	f := New(Options{})
	_, err := f.ReadFile(ctx, "relative.txt")
	wantDenied(t, err, "EINVAL")
}

// TestReadDirMany lists a folder whose entries take many getdents buffers.
func TestReadDirMany(t *testing.T) {
	w := newWorld(t)
	f := w.fs()
	const n = 3000
	for i := range n {
		writeTestFile(t, w.in(fmt.Sprintf("many/file-with-a-longish-name-%04d.txt", i)), "", 0o644)
	}
	entries, err := f.ReadDir(ctx, "many")
	mustDo(t, err)
	if len(entries) != n || entries[0].Name != "file-with-a-longish-name-0000.txt" || entries[n-1].Name != fmt.Sprintf("file-with-a-longish-name-%04d.txt", n-1) || !entries[n-1].IsFile {
		t.Fatalf("ReadDir listed %d entries (%v … %v)", len(entries), entries[0], entries[len(entries)-1])
	}
	mustDo(t, f.Remove(ctx, "many", true))
	notExist(t, w.in("many"))
}
