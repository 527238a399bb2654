//go:build linux

package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/asuser"
	"github.com/jean2/jean2/tool"
)

// Before the view (sandbox/view_linux.go) a shell command changed, with no ask, what
// Landlock let it see but not write: the modes of $JEAN2_HOME, the token, .env and the
// user's ssh key, their times, and the x bits of the jean2 binary. Each change is tried
// here and the host checks that nothing changed.
func TestShellViewAttackMetadata(t *testing.T) {
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
	if err := asuser.CopyExecutable(os.Args[0], launcher); err != nil {
		t.Fatal(err)
	}
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
		out, res := f.sh(fmt.Sprintf(`t=%q
chmod 777 "$t"; chmod 644 "$t"; chown 12345:12345 "$t"; touch -d @0 "$t"; truncate -s 0 "$t"; mv "$t" "$t.moved"
/usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.jean2", b"x")' "$t"
echo ran`, target))
		if !out.Result.Success || !strings.Contains(res.Stdout, "ran") {
			t.Fatalf("the command did not run: %s %+v", out.Result.Error, res)
		}
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
		t.Fatalf("modes in the workspace: %s %+v", out.Result.Error, res)
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

// A sensitive file a person refused to a tool in a session is hidden from that session's
// shell commands too (one policy for ctx.fs and commands); another session still reads it.
func TestShellHidesARefusedSensitiveFile(t *testing.T) {
	f := newShellFixtureWith(t, nil, builtin.ReadFile())
	if !f.h.Sandbox().MountSeal {
		t.Skipf("the launcher cannot build a view here: %s", f.h.Sandbox().MountSealError)
	}
	secret := "DB_PASSWORD=hunter2"
	if err := os.WriteFile(filepath.Join(f.ws, ".env"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refuse := func(c *host.Call) {
		c.Asker = tool.AskerFunc(func(context.Context, tool.Ask) (json.RawMessage, error) { return json.RawMessage("false"), nil })
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := f.h.Invoke(ctx, host.Call{Tool: "read-file", Args: json.RawMessage(`{"path":".env"}`), SessionID: "s1",
		Workspace: host.Workspace{ID: "w1", Path: f.ws}, Asker: tool.AskerFunc(func(context.Context, tool.Ask) (json.RawMessage, error) {
			return json.RawMessage("false"), nil
		})})
	if read.Result.Success || strings.Contains(read.ModelText, "hunter2") {
		t.Fatalf("read-file of a refused .env: %+v", read.Result)
	}
	_, res := f.sh(`cat .env; echo "size=$(stat -c %s .env)"`, refuse)
	if strings.Contains(res.Stdout, "hunter2") || !strings.Contains(res.Stdout, "size=0") {
		t.Fatalf("the session's command read the refused .env: %+v", res)
	}
	_, res = f.sh(`cat .env`, refuse, func(c *host.Call) { c.SessionID = "s2" })
	if !strings.Contains(res.Stdout, "hunter2") {
		t.Fatalf("another session's command: %+v", res)
	}
	if data, _ := os.ReadFile(filepath.Join(f.ws, ".env")); string(data) != secret+"\n" {
		t.Fatalf(".env changed: %q", data)
	}
}

// The same from an ordinary user's jean2, whose launchers build the view in a user namespace
// of their own: this test binary runs TestShellViewAttackMetadata again as nobody.
func TestShellViewAttackAsOrdinaryUser(t *testing.T) {
	out, err := asuser.Rerun(t, "^TestShellViewAttackMetadata$")
	if strings.Contains(out, "cannot build a view here") || strings.Contains(out, "needs Landlock") {
		t.Skipf("no view for an ordinary user here:\n%s", out)
	}
	if err != nil || !strings.Contains(out, "--- PASS: TestShellViewAttackMetadata") {
		t.Fatalf("as nobody (%v):\n%s", err, out)
	}
}

// Programs that write to /tmp by name (not $TMPDIR) work: in the view /tmp is the session's
// temporary folder, read-write, so the file lands there, and another session's /tmp is its
// own folder, which does not show it. Before, /tmp was read-only in the view: `echo x >
// /tmp/f` failed with "Read-only file system". The fixture lies outside /tmp (where a
// workspace or jean2's home in /tmp would be hidden by it, /tmp is left as it is).
func TestShellTmpIsTheSessionFolder(t *testing.T) {
	if why := viewPlaceInTmp(); why != "" {
		t.Skipf("%s lies in /tmp, so the view keeps the machine's /tmp (sandbox.Plan.tmpFree)", why)
	}
	base, err := os.MkdirTemp("/var/tmp", "jean2-tmpview-")
	if err != nil {
		t.Skipf("no /var/tmp to hold the fixture outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	t.Setenv("TMPDIR", base)
	f := newShellFixture(t, nil)
	name := fmt.Sprintf("jean2-tmpview-%d", time.Now().UnixNano())
	out, res := f.sh(`echo x > /tmp/` + name + ` && cat /tmp/` + name + ` && echo "tmpdir=$TMPDIR"`)
	if !out.Result.Success || res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "x\n") {
		t.Fatalf("write /tmp/%s in session s1: %+v %s", name, res, out.Result.Error)
	}
	tmpdir := strings.TrimSpace(strings.TrimPrefix(res.Stdout[strings.Index(res.Stdout, "tmpdir="):], "tmpdir="))
	if data, err := os.ReadFile(filepath.Join(tmpdir, name)); err != nil || string(data) != "x\n" {
		t.Fatalf("the file is not in the session's folder %s: %q %v", tmpdir, data, err)
	}
	if _, err := os.Stat(filepath.Join("/tmp", name)); !os.IsNotExist(err) {
		t.Fatalf("the machine's /tmp got the file: %v", err)
	}
	_, res = f.sh(`ls -A /tmp; cat /tmp/`+name+` && echo seen`, func(c *host.Call) { c.SessionID = "s2" })
	if strings.Contains(res.Stdout, name) || strings.Contains(res.Stdout, "seen") {
		t.Fatalf("session s2 sees s1's /tmp file: %+v", res)
	}
}

// viewPlaceInTmp names a place the shell's view shows that lies in /tmp on this machine (the
// Go build and module caches the shell's toolchain binds), or "".
func viewPlaceInTmp() string {
	places := map[string]string{}
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, _ := exec.Command("go", "env", v).Output()
		places[v] = strings.TrimSpace(string(out))
	}
	for what, p := range places {
		if p == "/tmp" || strings.HasPrefix(p, "/tmp/") {
			return what + " (" + p + ")"
		}
	}
	return ""
}
