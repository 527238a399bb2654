//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jean2/jean2/internal/asuser"
)

// The view's rules, from a shell started through the launcher: nothing outside the writable
// places changes (mode, owner, times, size, name, xattrs), hidden places are not there, a
// place shown again inside a hidden one is, and in the writable place modes change but no
// set-ID bit is taken. As root, and (TestLauncherViewAsOrdinaryUser) as an ordinary user.
func TestLauncherViewRules(t *testing.T) {
	if err := MountSealAvailable(os.Args[0], os.Geteuid() != 0); err != nil {
		t.Skipf("the launcher cannot build a view here: %v", err)
	}
	root := t.TempDir()
	ws, home, outside := filepath.Join(root, "ws"), filepath.Join(root, "home"), filepath.Join(root, "outside.txt")
	writeFile(t, filepath.Join(ws, "mine.sh"), "echo mine")
	writeFile(t, filepath.Join(home, "token"), "the-token")
	writeFile(t, filepath.Join(home, "tmp", "s1", "scratch"), "scratch")
	writeFile(t, outside, "outside")
	for _, p := range []string{filepath.Join(home, "token"), outside} {
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	real := func(p string) string { r, _ := filepath.EvalSymlinks(p); return r }
	view := &View{Writable: []string{real(ws), real(filepath.Join(home, "tmp", "s1"))}, Hidden: []string{real(home)}}
	before := map[string]fileMeta{}
	for _, p := range []string{home, filepath.Join(home, "token"), outside, root} {
		before[p] = metaOf(t, p)
	}
	script := `cd "$WS"
for t in "$OUTSIDE" "$ROOT"; do
  chmod 777 "$t"; chown 12345 "$t"; touch -d @0 "$t"; truncate -s 0 "$t"; mv "$t" "$t.moved"
done 2>/dev/null
cat "$HOME_DIR/token" 2>/dev/null && echo token-read
ls -A "$HOME_DIR"
cat "$HOME_DIR/tmp/s1/scratch" && echo new > "$HOME_DIR/tmp/s1/new" && echo scratch-written
chmod 700 mine.sh && echo chmod-ok
chmod 4755 mine.sh 2>/dev/null || echo setuid-refused
stat -c %a mine.sh
echo x > /made-at-root 2>/dev/null || echo root-read-only`
	want := []string{"tmp\n", "scratchscratch-written\n", "chmod-ok\n", "setuid-refused\n", "700\n", "root-read-only\n"}
	got := runView(t, view, script, map[string]string{"WS": real(ws), "OUTSIDE": outside, "ROOT": root, "HOME_DIR": real(home)})
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("the view's output lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "token-read") || strings.Contains(got, "the-token") {
		t.Fatalf("a hidden file was read:\n%s", got)
	}
	for p, m := range before {
		if after := metaOf(t, p); after != m {
			t.Errorf("%s changed: %+v → %+v", p, m, after)
		}
	}
	if data, err := os.ReadFile(filepath.Join(home, "tmp", "s1", "new")); err != nil || string(data) != "new\n" {
		t.Errorf("the place shown inside the hidden one was not written: %q %v", data, err)
	}
}

// runView runs script under a view through the launcher with env and returns its output.
func runView(t *testing.T, view *View, script string, env map[string]string) string {
	t.Helper()
	sh, _ := exec.LookPath("sh")
	path, argv, err := Command(os.Args[0], Spec{View: view}, sh, []string{"-c", script})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, argv...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	st := Status{PidNS: PidNSAvailable() == nil}
	if os.Geteuid() != 0 {
		st.UserNS, st.PidNS = true, true
	}
	st.StartConfined(cmd, Spec{View: view})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return string(out)
}

type fileMeta struct {
	mode        uint32
	uid, gid    uint32
	mtime, size int64
}

func metaOf(t *testing.T, p string) fileMeta {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	return fileMeta{st.Mode, st.Uid, st.Gid, st.Mtim.Nano(), st.Size}
}

// The same rules hold for an ordinary user's host, whose launcher builds the view in a user
// namespace of its own: the test binary runs TestLauncherViewRules again as nobody.
func TestLauncherViewAsOrdinaryUser(t *testing.T) {
	out, err := asuser.Rerun(t, "^TestLauncherViewRules$")
	if strings.Contains(out, "--- SKIP") && strings.Contains(out, "user namespace") {
		t.Skipf("no user namespace for an ordinary user here:\n%s", out)
	}
	if err != nil || !strings.Contains(out, "--- PASS: TestLauncherViewRules") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}
