package asuser

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the uid and gid the tests run as.
const Nobody = 65534

// Rerun runs the tests of this test binary that pattern names as Nobody, with env (PATH,
// HOME and TMPDIR are set), and returns what they printed. The binary is copied out of the
// test's folders, whose parents only root may enter. It skips t when not root.
func Rerun(t testing.TB, pattern string, env ...string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("run as root: it runs tests again as an ordinary user")
	}
	dir, err := os.MkdirTemp("", "jean2-as-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test")
	if err := CopyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", pattern, "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + dir, "TMPDIR=/tmp"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// CopyExecutable copies the program at from to a new file to (mode 0755): a test binary
// that must run from a place another user may enter, or stand in as "the jean2 binary".
func CopyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
