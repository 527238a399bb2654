//go:build linux

package builtin_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jean2/jean2/builtin"
)

// Before the view (sandbox/view_linux.go) a shell command changed, with no ask, what
// Landlock let it see but not write: the modes of $JEAN2_HOME, the token, .env and the
// user's ssh key, their times, and the x bits of the jean2 binary. Each change is tried
// here and the host checks that nothing changed.
func TestShellViewAttackMetadata(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the view needs a root host (a mount namespace) here")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	key := filepath.Join(home, ".ssh", "id_rsa")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	launcher := filepath.Join(t.TempDir(), "jean2")
	copyExecutable(t, os.Args[0], launcher)
	f := newShellFixture(t, func(o *builtin.ShellOptions) { o.Sandbox.Launcher = launcher })
	if !f.h.Sandbox().MountSeal {
		t.Skipf("the launcher cannot build a view here: %s", f.h.Sandbox().MountSealError)
	}
	token := filepath.Join(f.layout.Home, "token")
	if err := os.WriteFile(token, []byte("the-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{f.layout.Home, token, f.layout.DotEnv, filepath.Dir(key), key, f.layout.Tools, launcher} {
		before := metadataOf(t, target)
		_, res := f.sh(fmt.Sprintf(`t=%q
chmod 777 "$t"; chmod 644 "$t"; chown 12345:12345 "$t"; touch -d @0 "$t"; truncate -s 0 "$t"; mv "$t" "$t.moved"
/usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.jean2", b"x")' "$t"
true`, target))
		if after := metadataOf(t, target); after != before {
			t.Fatalf("a command changed %s: %+v → %+v\n%s", target, before, after, res.Stderr)
		}
		if _, err := os.Lstat(target + ".moved"); err == nil {
			t.Fatalf("a command renamed %s", target)
		}
	}
	// In the workspace a command changes modes as it likes, but makes no set-ID program:
	// as root, a copy of id made set-user-ID there would be root's to any local user.
	out, res := f.sh(`cp /usr/bin/id ./id && chmod 755 ./id && echo chmod-ok; chmod 4755 ./id || echo setuid-refused; chmod g+s ./id || echo setgid-refused; stat -c %a ./id`)
	if !out.Result.Success || !strings.Contains(res.Stdout, "chmod-ok") || !strings.Contains(res.Stdout, "setuid-refused") ||
		!strings.Contains(res.Stdout, "setgid-refused") || !strings.HasSuffix(res.Stdout, "755\n") {
		t.Fatalf("modes in the workspace: %+v", res)
	}
}

// metadataOf is what a command could change of a file without writing its contents.
type fileMetadata struct {
	mode          uint32
	uid, gid      uint32
	mtime, size   int64
	extAttributes int
}

func metadataOf(t *testing.T, path string) fileMetadata {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	n, _ := syscall.Listxattr(path, nil)
	return fileMetadata{mode: st.Mode, uid: st.Uid, gid: st.Gid, mtime: st.Mtim.Nano(), size: st.Size, extAttributes: n}
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
