//go:build linux && (amd64 || arm64)

package rawio

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Where every mount on the way is local and no link lies on it, the stat is raw; a link on
// the way, a relative or unclean path, or a mount of a network file system sends it
// through os.Stat.
func TestStaterRawOnlyWhereSafe(t *testing.T) {
	st := NewStater()
	if st.local == nil {
		t.Skip("no /proc/self/mountinfo here")
	}
	defer st.Close()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !st.local.local(dir) {
		t.Skipf("the test's temporary folder %s is not on a local file system here", dir)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		raw  bool
	}{
		{dir, true},
		{filepath.Join(dir, "missing"), true}, // ENOENT is answered raw: approvals.json's usual case
		{link, false},                         // os.Stat follows the link
		{filepath.Join(link, "missing"), false},
		{"relative", false},
		{dir + "/./x", false},
		{dir + "/../x", false},
		{dir + "//x", false},
	} {
		if _, raw, _ := st.local.stat(c.path, true); raw != c.raw {
			t.Errorf("stat(%s): raw %v, want %v", c.path, raw, c.raw)
		}
	}
	l := &localMounts{mounts: []Mount{
		{Point: "/", Type: "ext4"}, {Point: "/home", Type: "xfs"},
		{Point: "/mnt/nfs", Type: "nfs4"}, {Point: "/srv/fuse", Type: "fuse.sshfs"},
	}}
	for path, local := range map[string]bool{
		"/home/u/code": true, "/mnt/nfs": false, "/mnt/nfs/u/code": false, "/mnt/nfsx/code": true,
		"/srv/fuse/x": false, "/srv": true, "/": true,
	} {
		if got := l.judge(path); got != local {
			t.Errorf("judge(%s) = %v, want %v", path, got, local)
		}
	}
	if (&localMounts{}).judge("/home") {
		t.Error("judged local with no mount table")
	}
}

// A change of the mount table is seen (and the judgements made again) at the next stat.
func TestStaterSeesTheMountTableChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	st := NewStater()
	if st.local == nil {
		t.Skip("no /proc/self/mountinfo here")
	}
	defer st.Close()
	dir := t.TempDir()
	st.local.mu.Lock()
	before := st.local.changed()
	st.local.mu.Unlock()
	if before {
		// Another test's mount may have come between; what was seen is now read.
		st.local.mu.Lock()
		st.local.reload()
		st.local.mu.Unlock()
	}
	if err := syscall.Mount("jean2-rawio-test", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	st.local.mu.Lock()
	defer st.local.mu.Unlock()
	if !st.local.changed() {
		t.Fatal("a tmpfs was mounted and the mount table is not seen changed")
	}
	if !st.local.reload() {
		t.Fatal("reload failed")
	}
	found := false
	for _, m := range st.local.mounts {
		found = found || (m.Point == dir && m.Type == "tmpfs" && m.Source == "jean2-rawio-test")
	}
	if !found {
		t.Errorf("the new mount %s is not in the table read again", dir)
	}
}

func TestParseMountinfo(t *testing.T) {
	got := ParseMountinfo([]byte("36 35 98:0 /mnt1 /mnt/a\\040b rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n" +
		"37 35 0:40 / /tmp/x rw shared:2 - tmpfs jean2\\040host rw\nbroken line\n"))
	want := []Mount{{"/mnt/a b", "ext3", "/dev/root"}, {"/tmp/x", "tmpfs", "jean2 host"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ParseMountinfo = %+v, want %+v", got, want)
	}
}
