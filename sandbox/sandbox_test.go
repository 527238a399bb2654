package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
)

// TestMain lets the test binary act as the launcher (as the jean2 binary does).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ExecArg {
		os.Exit(Main(os.Args[2:], os.Stderr))
	}
	helperMain() // nons_test.go: the test binary as a probe the launcher starts
	os.Exit(m.Run())
}

func needLandlock(t testing.TB) {
	t.Helper()
	if abi, err := LandlockABI(); abi < 1 {
		t.Skipf("Landlock is not available here: %v", err)
	}
}

// launch runs program under spec through the test binary and returns its output.
func launch(t *testing.T, spec Spec, program string, args ...string) (string, string, int) {
	t.Helper()
	path, argv, err := Command(os.Args[0], spec, program, args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, argv...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
	// As the host starts it: the init of a pid namespace where there can be one, so these
	// tests see the program the init starts hold every restriction.
	// An ordinary user's host starts it in a user namespace of its own (UserNS).
	st := Status{PidNS: PidNSAvailable() == nil}
	if os.Geteuid() != 0 && MountSealAvailable(os.Args[0], true) == nil {
		st.UserNS, st.PidNS = true, true
	}
	st.StartConfined(cmd, spec)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLandlockHoldsTheProgramToItsRules(t *testing.T) {
	needLandlock(t)
	dir := t.TempDir()
	own := filepath.Join(dir, "ws", "own.txt")
	secret := filepath.Join(dir, "home", ".env")
	writeFile(t, own, "own")
	writeFile(t, secret, "SECRET=1")
	cat, _ := exec.LookPath("cat")
	plan := Plan{Program: cat, ReadWrite: []string{filepath.Join(dir, "ws")}}
	spec := Spec{Landlock: true, Rules: plan.Rules()}

	out, stderr, code := launch(t, spec, cat, own)
	if code != 0 || out != "own" {
		t.Fatalf("cat of its own file: exit %d %q %s", code, out, stderr)
	}
	out, stderr, code = launch(t, spec, cat, secret)
	if code == 0 || strings.Contains(out, "SECRET") || !strings.Contains(stderr, "Permission denied") {
		t.Fatalf("cat of a file outside its rules: exit %d %q %s", code, out, stderr)
	}
	// A symlink inside the granted folder leads nowhere outside it.
	link := filepath.Join(dir, "ws", "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code = launch(t, spec, cat, link); code == 0 || strings.Contains(out, "SECRET") {
		t.Fatalf("cat through a planted link: exit %d %q %s", code, out, stderr)
	}
}

func TestLandlockStartsProcessesOnlyWhenAllowed(t *testing.T) {
	needLandlock(t)
	dir := t.TempDir()
	own := filepath.Join(dir, "ws", "own.txt")
	writeFile(t, own, "own")
	sh, _ := exec.LookPath("sh")
	for _, child := range []bool{false, true} {
		plan := Plan{Program: sh, ReadWrite: []string{filepath.Join(dir, "ws")}, ChildProcess: child}
		out, stderr, code := launch(t, Spec{Landlock: true, Rules: plan.Rules()}, sh, "-c", "cat "+own)
		if child && (code != 0 || out != "own") {
			t.Fatalf("with childProcess the shell could not run cat: exit %d %q %s", code, out, stderr)
		}
		if !child && (code == 0 || !strings.Contains(stderr, "Permission denied")) {
			t.Fatalf("without childProcess the shell ran cat: exit %d %q %s", code, out, stderr)
		}
	}
}

func TestLauncherMemoryLimit(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	script := `const a = []; try { for (let i = 0; i < 64; i++) a.push(Buffer.alloc(16 << 20, 1)); console.log('allocated', a.length * 16) } catch (e) { console.log('refused after', a.length * 16, 'MiB:', e.message) }`
	out, stderr, code := launch(t, Spec{DataMB: 256}, node, "-e", script)
	// Node either refuses the allocation (a RangeError the script catches) or dies of it,
	// depending on which allocation meets the cap first.
	refused := code == 0 && strings.Contains(out, "refused after")
	died := code != 0 && strings.Contains(stderr, "out of memory")
	if !refused && !died {
		t.Fatalf("256 MiB cap: exit %d %q %s", code, out, stderr)
	}
	out, _, _ = launch(t, Spec{}, node, "-e", script)
	if !strings.Contains(out, "allocated 1024") {
		t.Fatalf("without a cap: %q", out)
	}
}

func TestPidsCgroupBoundsForks(t *testing.T) {
	pids, err := NewPids()
	if err != nil {
		t.Skipf("no pids cgroup here: %v", err)
	}
	defer func() {
		if err := pids.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(pids.Dir()); !os.IsNotExist(err) {
			t.Errorf("the host's cgroup folder is still there: %v", err)
		}
	}()
	sh, _ := exec.LookPath("sh")
	mark := filepath.Join(t.TempDir(), "started")
	path, argv, err := Command(os.Args[0], Spec{PidsCgroup: pids.Dir(), PidsMax: 12}, sh, []string{"-c", `for i in $(seq 1 40); do sleep 30 & done 2>/dev/null; echo done > ` + mark + `; sleep 30`})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, argv...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	group := filepath.Join(pids.Dir(), "w-"+strconv.Itoa(cmd.Process.Pid))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(mark); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	data, err := os.ReadFile(filepath.Join(group, "cgroup.procs"))
	if err != nil {
		t.Fatalf("the worker's group: %v", err)
	}
	procs := strings.Fields(string(data))
	if len(procs) < 5 || len(procs) > 12 {
		t.Fatalf("%d processes in a group capped at 12", len(procs))
	}
	// The worker exits; Release ends what it left behind and removes the group.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	pids.Release(cmd.Process.Pid)
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Fatalf("the worker's group is still there: %v", err)
	}
	for _, p := range procs {
		if _, err := os.Stat("/proc/" + p); err == nil {
			if st, _ := os.ReadFile("/proc/" + p + "/stat"); !strings.Contains(string(st), ") Z ") {
				t.Errorf("process %s survived its worker", p)
			}
		}
	}
}

func TestPlanCarvesProtectedPaths(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	for _, p := range []string{"home/.jean2/.env", "home/.jean2/tools/x/tool.js", "home/proj/a.txt", "home/notes.txt", "home/.ssh/id_rsa", "elsewhere/b.txt"} {
		writeFile(t, filepath.Join(root, p), "x")
	}
	if err := os.Symlink(filepath.Join(home, ".jean2"), filepath.Join(home, "sneaky")); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(home, ".jean2", "tmp", "sessions", "s1")
	plan := Plan{
		ReadWrite:     []string{home, tmp},
		ReadOnly:      []string{filepath.Join(home, ".jean2", "tools", "x")},
		DeclaredRead:  []string{filepath.Join(home, ".jean2", ".env"), filepath.Join(root, "elsewhere")},
		DeclaredWrite: []string{filepath.Join(home, ".jean2")},
		Protected:     append([]string{filepath.Join(home, ".jean2")}, CredentialPaths(home)...),
	}
	rules := plan.Rules()
	got := map[string]Access{}
	for _, r := range rules {
		if strings.HasPrefix(r.Path, root) {
			got[strings.TrimPrefix(r.Path, root)] = r.Access
		}
	}
	want := map[string]Access{
		"/home":                        List,
		"/home/proj":                   Read | Write,
		"/home/notes.txt":              Read | Write,
		"/home/.jean2/tmp/sessions/s1": Read | Write,
		"/home/.jean2/tools/x":         Read,
		"/elsewhere":                   Read,
	}
	for p, a := range want {
		if got[p] != a {
			t.Errorf("%s: got %v, want %v (all: %v)", p, got[p], a, got)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected rule on %s (%v)", p, got[p])
		}
	}
}

func TestPlanRuntimeAndExecute(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	rules := Plan{Program: node}.Rules()
	execs := Paths(rules, Exec)
	if len(execs) == 0 || !slices.Contains(execs, mustReal(node)) {
		t.Fatalf("the runtime is not executable: %v", execs)
	}
	if interp := elfInterpreter(node); interp == "" || !slices.Contains(execs, mustReal(interp)) {
		t.Fatalf("its dynamic loader %q is not executable: %v", interp, execs)
	}
	for _, p := range execs {
		if p == "/usr" || p == "/bin" {
			t.Fatalf("%s is executable without childProcess", p)
		}
	}
	with := Paths(Plan{Program: node, ChildProcess: true}.Rules(), Exec)
	if !slices.Contains(with, "/usr") {
		t.Fatalf("childProcess does not make the system's programs executable: %v", with)
	}
	if got := elfInterpreter("/etc/hostname"); got != "" {
		t.Fatalf("interpreter of a text file: %q", got)
	}
}

func mustReal(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return p
	}
	return r
}

func TestRuntimeRoot(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "node-v20", "bin", "node")
	writeFile(t, bin, "")
	if got := RuntimeRoot(bin, "/nonexistent-home"); got != filepath.Join(mustReal(dir), "node-v20") {
		t.Fatalf("root of %s: %s", bin, got)
	}
	// A runtime in the home's own bin folder does not open the home.
	home := filepath.Join(dir, "u")
	hb := filepath.Join(home, "bin", "bun")
	writeFile(t, hb, "")
	if got := RuntimeRoot(hb, home); got != filepath.Join(mustReal(home), "bin") {
		t.Fatalf("root of %s: %s", hb, got)
	}
	if got := RuntimeRoot(filepath.Join(home, "bun"), home); got != "" {
		t.Fatalf("a runtime in the home itself: %q", got)
	}
}

func TestSpecAndArguments(t *testing.T) {
	spec := Spec{Landlock: true, Rules: []Rule{{Path: "/usr", Access: Read | Exec, Optional: true}}, DataMB: 64, PidsCgroup: "/sys/fs/cgroup/pids/x", PidsMax: 8}
	path, argv, err := Command("/jean2", spec, "/usr/bin/node", []string{"--x", "script.mjs"})
	if err != nil || path != "/jean2" || argv[0] != ExecArg || argv[3] != "--" || argv[4] != "/usr/bin/node" || argv[6] != "script.mjs" {
		t.Fatalf("command %s %v %v", path, argv, err)
	}
	got, prog, rest, err := parseArgs(argv[1:])
	if err != nil || prog != "/usr/bin/node" || len(rest) != 2 || got.DataMB != 64 || got.Rules[0].Access != Read|Exec || !got.Rules[0].Optional {
		t.Fatalf("parse: %+v %s %v %v", got, prog, rest, err)
	}
	bad := []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"--spec"}, "needs a value"},
		{[]string{"--spec", "{}"}, "usage"},
		{[]string{"--spec", "{}", "--"}, "no program"},
		{[]string{"--spec", "{nope", "--", "/bin/true"}, "not valid JSON"},
		{[]string{"--spec", `{"rules":[{"path":"relative","access":1}]}`, "--", "/bin/true"}, "absolute and clean"},
		{[]string{"--spec", `{"rules":[{"path":"/a/../b","access":1}]}`, "--", "/bin/true"}, "absolute and clean"},
		{[]string{"--spec", `{"rules":[{"path":"/a","access":0}]}`, "--", "/bin/true"}, "not valid"},
		{[]string{"--spec", `{"dataMB":-1}`, "--", "/bin/true"}, "negative"},
		{[]string{"--spec", `{"surprise":1}`, "--", "/bin/true"}, "unknown field"},
		{[]string{"--spec", `{"pidsCgroup":"/x"}`, "--", "/bin/true"}, "pidsMax"},
		{[]string{"--oops"}, "unexpected argument"},
	}
	for _, b := range bad {
		if _, _, _, err := parseArgs(b.args); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: got %v, want %q", b.args, err, b.want)
		}
	}
	if _, _, err := Command("/jean2", spec, "node", nil); err == nil {
		t.Fatal("a relative program was accepted")
	}
	// The launcher itself says what went wrong and exits 126.
	var stderr bytes.Buffer
	if code := Main([]string{"--spec", "{nope", "--", "/bin/true"}, &stderr); code != ExitLaunchFailed || !strings.Contains(stderr.String(), "jean2 sandbox: sandbox spec is not valid JSON") {
		t.Fatalf("exit %d %s", code, stderr.String())
	}
}

func TestLaunchFailureIsExplained(t *testing.T) {
	needLandlock(t)
	_, stderr, code := launch(t, Spec{Landlock: true, Rules: []Rule{{Path: "/nonexistent/required", Access: Read}}}, "/bin/true")
	if code != ExitLaunchFailed || !strings.Contains(stderr, "/nonexistent/required") {
		t.Fatalf("a missing required path: exit %d %s", code, stderr)
	}
	_, stderr, code = launch(t, Spec{}, "/nonexistent/program")
	if code != ExitLaunchFailed || !strings.Contains(stderr, "execute /nonexistent/program") {
		t.Fatalf("a missing program: exit %d %s", code, stderr)
	}
}

func TestNodePermissionArgs(t *testing.T) {
	rules := []Rule{{Path: "/ws", Access: Read | Write}, {Path: "/tool", Access: Read}, {Path: "/home", Access: List}, {Path: "/odd*", Access: Read}, {Path: "/usr/bin/node", Access: Read | Exec}}
	got := strings.Join(NodePermissionArgs("20.20.2", rules, false), " ")
	want := "--experimental-permission --allow-fs-read=/ws --allow-fs-write=/ws --allow-fs-read=/tool --allow-fs-read=/usr/bin/node --allow-worker"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := NodePermissionArgs("24.1.0", nil, true); got[0] != "--permission" || !slices.Contains(got, "--allow-child-process") {
		t.Fatalf("node 24 with child processes: %v", got)
	}
	if NodePermissionArgs("22.13.0", nil, false)[0] != "--permission" || NodePermissionArgs("22.12.0", nil, false)[0] != "--experimental-permission" {
		t.Fatal("the switch's name by version")
	}
}

func TestChoose(t *testing.T) {
	cases := []struct {
		mode     Mode
		abi      int
		launcher string
		kind     string
		want     Mechanism
		err      bool
	}{
		{ModeAuto, 7, "/jean2", "bun", Landlock, false},
		{ModeAuto, 0, "/jean2", "node", NodePermissions, false},
		{ModeAuto, 7, "", "node", NodePermissions, false},
		{ModeAuto, 0, "/jean2", "bun", Unconfined, false},
		{ModeAuto, 0, "/jean2", "go", Unconfined, false},
		{ModeLandlock, 0, "/jean2", "node", "", true},
		{ModeLandlock, 3, "", "node", "", true},
		{ModeLandlock, 3, "/jean2", "go", Landlock, false},
		{ModeNode, 7, "/jean2", "node", NodePermissions, false},
		{ModeNode, 7, "/jean2", "bun", Unconfined, false},
		{ModeOff, 7, "/jean2", "node", Unconfined, false},
	}
	for _, c := range cases {
		st := Status{Mode: c.mode, LandlockABI: c.abi, Launcher: c.launcher}
		got, err := st.Choose(c.kind)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%+v %s: got %q %v", st, c.kind, got, err)
		}
		if st.Summary() == "" {
			t.Errorf("%+v: no summary", st)
		}
	}
	if _, err := ParseMode("strict"); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
	if m, err := ParseMode(" Landlock "); m != ModeLandlock || err != nil {
		t.Fatalf("%q %v", m, err)
	}
}

func TestApprovals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", "approvals.json")
	a := OpenApprovals(path)
	perms := tool.Permissions{Read: []string{"/b", "/a"}, ChildProcess: true}
	if ok, err := a.Approved("t", "v1", perms); ok || err != nil {
		t.Fatalf("approved before approval: %v %v", ok, err)
	}
	if err := a.Approve("t", "v1", perms); err != nil {
		t.Fatal(err)
	}
	// Another process (another Approvals on the same file) sees it at once.
	b := OpenApprovals(path)
	reordered := tool.Permissions{Read: []string{"/a", "/b"}, ChildProcess: true}
	if ok, _ := b.Approved("t", "v1", reordered); !ok {
		t.Fatal("the approval is not seen by a second reader, or depends on the order of paths")
	}
	for _, c := range []struct {
		version string
		p       tool.Permissions
	}{{"v2", perms}, {"v1", tool.Permissions{Read: []string{"/a", "/b"}}}, {"v1", tool.Permissions{Read: []string{"/a", "/b", "/c"}, ChildProcess: true}}} {
		if ok, _ := b.Approved("t", c.version, c.p); ok {
			t.Fatalf("%s %+v counts as approved", c.version, c.p)
		}
	}
	// A new version's approval replaces the old one's.
	if err := b.Approve("t", "v2", perms); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.Approved("t", "v1", perms); ok {
		t.Fatal("the old version is still approved")
	}
	if err := a.Revoke("t"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.Approved("t", "v2", perms); ok {
		t.Fatal("revoked, still approved")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the approvals file: %v %v", fi.Mode(), err)
	}
	writeFile(t, path, "{broken")
	if _, err := b.Approved("t", "v2", perms); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("a broken file: %v", err)
	}
	if Declares(&tool.Permissions{}) || Declares(nil) || !Declares(&perms) {
		t.Fatal("Declares")
	}
	if got := DescribePermissions(&perms); got != "read /b, /a; start processes" {
		t.Fatalf("describe: %s", got)
	}
}

// Landlock alone lets a worker run a program through its runtime's dynamic loader
// (`ld.so /usr/bin/cat`); with NoFork the worker cannot make a process at all, while its
// own threads still work.
func TestNoForkClosesTheLoaderRoute(t *testing.T) {
	needLandlock(t)
	if !CanDenyProcesses() {
		t.Skip("no seccomp filter on this platform")
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "ws", "own.txt")
	writeFile(t, own, "own")
	sh, _ := exec.LookPath("sh")
	interp := elfInterpreter(mustReal(sh))
	if interp == "" {
		t.Skip("sh is not dynamically linked")
	}
	cat, _ := exec.LookPath("cat")
	plan := Plan{Program: sh, ReadWrite: []string{filepath.Join(dir, "ws")}}
	// "; echo after" keeps the shell from replacing itself with the last command: it must fork.
	script := interp + " " + cat + " " + own + "; echo after"
	out, stderr, _ := launch(t, Spec{Landlock: true, Rules: plan.Rules()}, sh, "-c", script)
	if !strings.Contains(out, "own") {
		t.Fatalf("the loader route should work under Landlock alone (else this test proves nothing): %q %s", out, stderr)
	}
	out, stderr, _ = launch(t, Spec{Landlock: true, Rules: plan.Rules(), NoFork: true}, sh, "-c", script)
	if strings.Contains(out, "own") || !strings.Contains(stderr, "fork") {
		t.Fatalf("with NoFork the shell still started cat, or failed for another reason: %q %s", out, stderr)
	}
	// Threads are not processes: a runtime that starts threads works under the filter.
	if node, err := exec.LookPath("node"); err == nil {
		nplan := Plan{Program: node}
		out, stderr, code := launch(t, Spec{Landlock: true, Rules: nplan.Rules(), NoFork: true}, node, "-e",
			"require('crypto').pbkdf2('a','b',1000,32,'sha256',(e,k)=>{console.log(e?'error '+e.message:'threads ok')}); try { require('child_process').execFileSync('/bin/true'); console.log('spawned') } catch (e) { console.log('spawn refused: ' + e.code) }")
		if code != 0 || !strings.Contains(out, "threads ok") || strings.Contains(out, "spawned") || !strings.Contains(out, "spawn refused") {
			t.Fatalf("node under NoFork: exit %d %q %s", code, out, stderr)
		}
	}
}
