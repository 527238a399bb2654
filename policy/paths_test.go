package policy

import (
	"os"
	"path/filepath"
	"testing"
)

func TestResolve(t *testing.T) {
	const ws, home = "/work/proj", "/home/u"
	tests := []struct{ in, want string }{
		{"~", "/home/u"},
		{"~/notes.txt", "/home/u/notes.txt"},
		{"~/../etc/passwd", "/home/etc/passwd"},
		{"~user/x", "/work/proj/~user/x"},
		{"/etc/passwd", "/etc/passwd"},
		{"/a/./b//c/", "/a/b/c"},
		{"src/main.go", "/work/proj/src/main.go"},
		{"./src/../README.md", "/work/proj/README.md"},
		{"..", "/work"},
		{"../proj-x/secret", "/work/proj-x/secret"},
		{"a/../../../../etc", "/etc"},
		{"", "/work/proj"},
		{".", "/work/proj"},
	}
	for _, tt := range tests {
		if got := Resolve(tt.in, ws, home); got != tt.want {
			t.Errorf("Resolve(%q) = %q, want %q", tt.in, got, tt.want)
		}
		s := Scope{Workspace: ws, Home: home}
		if got := s.Resolve(tt.in); got != tt.want {
			t.Errorf("Scope.Resolve(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		p, root string
		want    bool
	}{
		{"/a/proj", "/a/proj", true},
		{"/a/proj/x", "/a/proj", true},
		{"/a/proj/x/y", "/a/proj", true},
		{"/a/proj-x", "/a/proj", false},
		{"/a/proj-x/y", "/a/proj", false},
		{"/a/projx", "/a/proj", false},
		{"/a", "/a/proj", false},
		{"/b/proj", "/a/proj", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"/", "/a", false},
	}
	for _, tt := range tests {
		if got := Within(tt.p, tt.root); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.p, tt.root, got, tt.want)
		}
	}
}

// tree builds a workspace with symlinks planted in it and returns its root.
//
//	base/ws/sub/file
//	base/ws/in-link      -> base/ws/sub
//	base/ws/out-link     -> base/out
//	base/ws/out-file     -> base/out/secret
//	base/ws/rel-out      -> ../out
//	base/ws/dangling-out -> base/out/missing
//	base/ws/dangling-in  -> base/ws/new
//	base/ws/dangling-dir -> base/out/nodir      (a parent directory that does not exist)
//	base/ws/chain        -> in-link
//	base/ws/loop1 <-> base/ws/loop2
//	base/ws-x/, base/allowed/back -> base/ws/sub, base/out/secret
func tree(t testing.TB, base string) string {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"ws/sub", "ws-x", "allowed", "out", "tmp", "home"} {
		must(os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(base, "ws/sub/file"), []byte("in"), 0o644))
	must(os.WriteFile(filepath.Join(base, "out/secret"), []byte("out"), 0o600))
	links := map[string]string{
		"ws/in-link":      filepath.Join(base, "ws/sub"),
		"ws/out-link":     filepath.Join(base, "out"),
		"ws/out-file":     filepath.Join(base, "out/secret"),
		"ws/rel-out":      "../out",
		"ws/dangling-out": filepath.Join(base, "out/missing"),
		"ws/dangling-in":  filepath.Join(base, "ws/new"),
		"ws/dangling-dir": filepath.Join(base, "out/nodir"),
		"ws/chain":        "in-link",
		"ws/loop1":        "loop2",
		"ws/loop2":        "loop1",
		"allowed/back":    filepath.Join(base, "ws/sub"),
	}
	for name, target := range links {
		must(os.Symlink(target, filepath.Join(base, name)))
	}
	return base
}

func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestReal(t *testing.T) {
	base := tree(t, realTemp(t))
	j := func(p string) string { return filepath.Join(base, p) }
	tests := []struct{ in, want string }{
		{j("ws/sub/file"), j("ws/sub/file")},
		{j("ws/in-link/file"), j("ws/sub/file")},
		{j("ws/chain/file"), j("ws/sub/file")},
		{j("ws/out-link/secret"), j("out/secret")},
		{j("ws/out-file"), j("out/secret")},
		{j("ws/rel-out/secret"), j("out/secret")},
		// Dangling links are judged by where they lead, not where they sit.
		{j("ws/dangling-out"), j("out/missing")},
		{j("ws/dangling-in"), j("ws/new")},
		{j("ws/dangling-dir/f"), j("out/nodir/f")},
		{j("ws/missing/deeper/f"), j("ws/missing/deeper/f")},
		{j("ws/sub/file/below"), j("ws/sub/file/below")},
		{j("ws/loop1"), j("ws/loop1")},
		{j("ws/./sub/../sub/file"), j("ws/sub/file")},
		{"/", "/"},
	}
	res := NewResolver()
	for _, tt := range tests {
		if got := Real(tt.in); got != tt.want {
			t.Errorf("Real(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// A Resolver answers as Real does, the second time from what it remembers.
		for range 2 {
			if got := res.Real(tt.in); got != tt.want {
				t.Errorf("Resolver.Real(%q) = %q, want %q", tt.in, got, tt.want)
			}
		}
		if got := (*Resolver)(nil).Real(tt.in); got != tt.want {
			t.Errorf("nil Resolver.Real(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A Resolver looks at each element once: a link made after it looked is not seen by it (a
// plan is made from one view of the file system; the launcher checks the paths again), and
// a new Resolver sees it.
func TestResolverRemembers(t *testing.T) {
	base := realTemp(t)
	dir := filepath.Join(base, "dir")
	if err := os.MkdirAll(filepath.Join(base, "elsewhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res := NewResolver()
	if got := res.Real(filepath.Join(dir, "f")); got != filepath.Join(dir, "f") {
		t.Fatalf("before: %q", got)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "elsewhere"), dir); err != nil {
		t.Fatal(err)
	}
	if got := res.Real(filepath.Join(dir, "g")); got != filepath.Join(dir, "g") {
		t.Errorf("the same Resolver after the swap: %q, want what it saw first", got)
	}
	if got := NewResolver().Real(filepath.Join(dir, "g")); got != filepath.Join(base, "elsewhere", "g") {
		t.Errorf("a new Resolver after the swap: %q", got)
	}
}

func TestScopeInside(t *testing.T) {
	base := tree(t, realTemp(t))
	s := Scope{
		Workspace: filepath.Join(base, "ws"),
		Allowed:   []string{filepath.Join(base, "allowed")},
		Home:      filepath.Join(base, "home"),
		TempDir:   filepath.Join(base, "tmp"),
	}
	tests := []struct {
		p    string
		want bool
	}{
		{"sub/file", true},
		{"new-file", true},
		{"missing/dir/f", true},
		{".", true},
		{filepath.Join(base, "ws"), true},
		{filepath.Join(base, "ws-x/f"), false}, // /a/proj-x is not inside /a/proj
		{"../ws-x/f", false},
		{"../out/secret", false},
		{"sub/../../out/secret", false},
		{"in-link/file", true},
		{"chain/file", true},
		{"out-link/secret", false},
		{"out-file", false},
		{"rel-out/secret", false},
		{"dangling-out", false},
		{"dangling-dir/f", false},
		{"dangling-in", true},
		{filepath.Join(base, "allowed/x"), true},
		{filepath.Join(base, "allowed/back/file"), true},
		{filepath.Join(base, "tmp/x"), false}, // the temp folder is not the workspace
		{"~/x", false},
		{"/", false},
	}
	for _, tt := range tests {
		if got := s.Inside(tt.p); got != tt.want {
			t.Errorf("Inside(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if InsideAny(filepath.Join(base, "ws/x"), []string{"", filepath.Join(base, "ws")}) != true {
		t.Error("InsideAny ignores empty roots and finds the workspace")
	}
	if InsideAny(filepath.Join(base, "ws/x"), nil) {
		t.Error("InsideAny with no roots must be false")
	}
}

func TestIsBlocked(t *testing.T) {
	base := realTemp(t)
	etcLink := filepath.Join(base, "etc-link")
	if err := os.Symlink("/etc", etcLink); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p    string
		want bool
	}{
		{"/etc", true},
		{"/etc/passwd", true},
		{"/etc/../etc/shadow", true},
		{"/etcetera", false},
		{"/usr/local/bin/node", true},
		{"/bin", true},
		{"/sbin/init", true},
		{"/boot", true},
		{"/dev/null", true},
		{"/proc/self/environ", true},
		{"/sys/kernel", true},
		{"/root", true},
		{"/root/.ssh/id_rsa", true},
		{"/rootfs/x", false},
		{"/home/u/x", false},
		{"/tmp/x", false},
		{"/", false},
		{etcLink + "/passwd", true}, // where it really leads counts
		{filepath.Join(base, "plain"), false},
	}
	for _, tt := range tests {
		if got := IsBlocked(tt.p); got != tt.want {
			t.Errorf("IsBlocked(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if len(BlockedRoots()) != 9 {
		t.Errorf("BlockedRoots = %v", BlockedRoots())
	}
}

// TestScopeBlockedRootRule checks the /root rule: a scope root below /root unblocks what lies
// inside that root and nothing else. It needs a directory it may create under /root.
func TestScopeBlockedRootRule(t *testing.T) {
	ws, err := os.MkdirTemp("/root", "jean2-policy-test-")
	if err != nil {
		t.Skipf("cannot create a workspace under /root (not running as root?): %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "etc-link")); err != nil {
		t.Fatal(err)
	}
	other := realTemp(t)
	s := Scope{Workspace: ws, Home: "/root", TempDir: other}
	tests := []struct {
		p    string
		want bool
	}{
		{"file.txt", false},
		{ws, false},
		{"sub/dir/f", false},
		{"etc-link", true},      // leads to /etc
		{"../other", true},      // /root/other is outside the workspace
		{"/root", true},         // root's home itself stays blocked
		{"/root/.bashrc", true}, // so do its other files
		{"~/.ssh/id_rsa", true}, // home is /root
		{"/etc/passwd", true},   // other blocked roots are unaffected
		{filepath.Join(other, "x"), false},
	}
	for _, tt := range tests {
		if got := s.Blocked(tt.p); got != tt.want {
			t.Errorf("Blocked(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
	// /root itself as the workspace unblocks nothing.
	rootScope := Scope{Workspace: "/root", Home: "/root"}
	if !rootScope.Blocked("x") {
		t.Error("a workspace of /root itself must not unblock /root/x")
	}
	// A scope root elsewhere unblocks nothing below /root.
	if !(Scope{Workspace: other}).Blocked(filepath.Join(ws, "file.txt")) {
		t.Errorf("%s must be blocked for a scope whose roots are not below /root", ws)
	}
}

func TestIsSensitive(t *testing.T) {
	tests := []struct {
		p    string
		want bool
	}{
		{"/p/.env", true},
		{"/p/.env.local", true},
		{"/p/config/.ENV", true},
		{"/p/cert.pem", true},
		{"/p/server.key", true},
		{"/home/u/.ssh/config", true},
		{"/home/u/.ssh", false}, // ".ssh/" needs the slash: the folder name alone is not a secret
		{"/home/u/id_rsa.pub", true},
		{"/home/u/id_ed25519", true},
		{"/home/u/.gitconfig", true},
		{"/home/u/.npmrc", true},
		{"/p/aws/credentials", true},
		{"/p/Secrets.yaml", true},
		{"/p/password.txt", true},
		{"/srv/.htpasswd", true},
		{"/p/src/main.go", false},
		{"/p/environment.ts", false},
		{"/p/keyboard.ts", false},
	}
	for _, tt := range tests {
		if got := IsSensitive(tt.p); got != tt.want {
			t.Errorf("IsSensitive(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if len(SensitivePatterns()) != 12 {
		t.Errorf("SensitivePatterns = %v", SensitivePatterns())
	}
}
