package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// TestMain lets the test binary act as the sandbox launcher, as the jean2 binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ExecArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	// As an ordinary user (asuser.Rerun), the tests run as jean2 does: in a user and mount
	// namespace of their own under a mounter of the temporary folders' tmpfs.
	if code, ran := sandbox.EnterTempNamespace(); ran {
		os.Exit(code)
	}
	tempMounter = sandbox.TakeTempMounter()
	os.Exit(m.Run())
}

// tempMounter is the test binary's mounter (TestMain), nil as root: what jean2's main gives
// its hosts.
var tempMounter *sandbox.TempMounter

// shellFixture is a real host serving the shell built-in, confined by the launcher (this
// test binary), with a workspace and a JEAN2_HOME holding a secret .env.
type shellFixture struct {
	t      testing.TB
	h      *host.Host
	ws     string
	layout host.Layout
	root   string
}

func newShellFixture(t testing.TB, mod func(*builtin.ShellOptions)) *shellFixture {
	t.Helper()
	return newShellFixtureHost(t, mod, nil)
}

// newShellFixtureWith is newShellFixture with more built-ins beside the shell.
func newShellFixtureWith(t testing.TB, mod func(*builtin.ShellOptions), more ...tool.Tool) *shellFixture {
	t.Helper()
	return newShellFixtureHost(t, mod, func(o *host.Options) { o.Builtins = append(o.Builtins, more...) })
}

// newShellFixtureHost is newShellFixture with the host's options changed by hostMod.
func newShellFixtureHost(t testing.TB, mod func(*builtin.ShellOptions), hostMod func(*host.Options)) *shellFixture {
	t.Helper()
	// An ordinary user's shell (no network namespace: Landlock's TCP rule instead) runs the
	// view's tests too (TestShellViewAttackAsOrdinaryUser); as root a namespace is expected.
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || (!st.NetNS && (os.Geteuid() == 0 || !st.NetLandlock)) {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	root := t.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layout.DotEnv, []byte("OPENAI_API_KEY=sk-secret-in-jean2-home\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mode := sandbox.ModeRequire
	if os.Geteuid() != 0 {
		mode = sandbox.ModeLandlock // an ordinary user has no network namespace: Landlock's TCP rule
	}
	sb := host.SandboxOptions{Mode: mode, Launcher: os.Args[0], TempMounter: tempMounter}
	opts := builtin.ShellOptions{Sandbox: sb, Layout: layout}
	if mod != nil {
		mod(&opts)
	}
	hopts := host.Options{
		Layout: layout, Sandbox: sb, Builtins: []tool.Tool{builtin.Shell(opts)},
		ServerEnv: []string{"PATH=/usr/bin:/bin"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if hostMod != nil {
		hostMod(&hopts)
	}
	h, err := host.New(context.Background(), hopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	})
	return &shellFixture{t: t, h: h, ws: ws, layout: layout, root: root}
}

type shellOut struct {
	Stdout         string            `json:"stdout"`
	Stderr         string            `json:"stderr"`
	ExitCode       int               `json:"exitCode"`
	TimedOut       bool              `json:"timedOut"`
	Overflow       map[string]string `json:"overflow"`
	NetworkRefused []string          `json:"networkRefused"`
	NetworkAllowed []string          `json:"networkAllowed"`
	Background     *struct {
		ID      string `json:"id"`
		Output  string `json:"output"`
		Running bool   `json:"running"`
	} `json:"background"`
}

func (f *shellFixture) run(ctx context.Context, args any, mods ...func(*host.Call)) (host.Outcome, shellOut) {
	f.t.Helper()
	raw, _ := json.Marshal(args)
	c := host.Call{Tool: "shell", Args: raw, SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: f.ws}}
	for _, m := range mods {
		m(&c)
	}
	out := f.h.Invoke(ctx, c)
	var res shellOut
	if len(out.Result.Result) > 0 {
		if err := json.Unmarshal(out.Result.Result, &res); err != nil {
			f.t.Fatalf("decode %s: %v", out.Result.Result, err)
		}
	}
	return out, res
}

func (f *shellFixture) sh(command string, mods ...func(*host.Call)) (host.Outcome, shellOut) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return f.run(ctx, map[string]any{"command": command}, mods...)
}

func TestShellEchoExitCodeAndVisualization(t *testing.T) {
	f := newShellFixture(t, nil)
	out, res := f.sh(`echo hello; echo oops >&2; pwd`)
	if !out.Result.Success || res.Stdout != "hello\n"+f.ws+"\n" || res.Stderr != "oops\n" || res.ExitCode != 0 {
		t.Fatalf("echo: %+v %+v", out.Result, res)
	}
	if err := tool.CheckVisualization(out.Result.Visualization); err != nil {
		t.Fatal(err)
	}
	var viz map[string]any
	_ = json.Unmarshal(out.Result.Visualization, &viz)
	if viz["type"] != "shell-output" || viz["command"] != `echo hello; echo oops >&2; pwd` || viz["stdout"] != res.Stdout || viz["exitCode"] != 0.0 {
		t.Fatalf("visualization %v", viz)
	}
	out, res = f.sh(`echo failing >&2; exit 3`)
	if out.Result.Success || res.ExitCode != 3 || out.Result.Error != "Command exited with code 3: failing" {
		t.Fatalf("exit 3: %+v %+v", out.Result, res)
	}
	out, _ = f.sh("   ")
	if out.Result.Success || !strings.HasPrefix(out.Result.Error, "EMPTY_COMMAND") {
		t.Fatalf("empty: %+v", out.Result)
	}
	// The environment is clean: nothing of the server's but what is passed.
	t.Setenv("SHELL_TEST_SECRET", "leaked")
	_, res = f.sh(`echo "[$SHELL_TEST_SECRET] $HOME $TMPDIR"`)
	if strings.Contains(res.Stdout, "leaked") || !strings.Contains(res.Stdout, filepath.Join(f.layout.Temp)) {
		t.Fatalf("env: %q", res.Stdout)
	}
}

func TestShellStreamsProgress(t *testing.T) {
	f := newShellFixture(t, nil)
	var mu sync.Mutex
	var got []string
	out, _ := f.sh(`echo one; sleep 0.2; echo two >&2`, func(c *host.Call) {
		c.Progress = func(p tool.Progress) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, string(p.Data)+p.Message)
		}
	})
	if !out.Result.Success {
		t.Fatal(out.Result)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "|") != `{"stream":"stdout"}one`+"\n"+`|{"stream":"stderr"}two`+"\n" {
		t.Fatalf("progress %q", got)
	}
}

// The command cannot read jean2's home (its .env holds the provider keys) nor a credential
// folder, and cannot write outside the workspace and the session's folder.
func TestShellConfinesFiles(t *testing.T) {
	f := newShellFixture(t, nil)
	outside := filepath.Join(f.root, "outside.txt")
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, res := f.sh("cat " + f.layout.DotEnv)
	if strings.Contains(res.Stdout, "sk-secret") || res.ExitCode == 0 {
		t.Fatalf("read $JEAN2_HOME/.env: %+v", res)
	}
	_, res = f.sh("ls " + f.layout.Home)
	if res.ExitCode == 0 {
		t.Fatalf("listed $JEAN2_HOME: %+v", res)
	}
	_, res = f.sh("echo x > " + outside + "; echo y > /tmp/jean2-shell-escape-" + strconv.Itoa(os.Getpid()))
	if data, _ := os.ReadFile(outside); string(data) != "outside" {
		t.Fatalf("wrote outside the workspace: %q (%+v)", data, res)
	}
	if _, err := os.Stat("/tmp/jean2-shell-escape-" + strconv.Itoa(os.Getpid())); err == nil {
		os.Remove("/tmp/jean2-shell-escape-" + strconv.Itoa(os.Getpid()))
		t.Fatal("wrote /tmp")
	}
	// Landlock says "Permission denied"; the view, where the launcher builds one, says the
	// machine is read-only outside the command's places.
	if !strings.Contains(res.Stderr, "Permission denied") && !strings.Contains(res.Stderr, "Read-only file system") {
		t.Fatalf("stderr %q", res.Stderr)
	}
	// The host cannot be signalled (Landlock's signal scope).
	_, res = f.sh(fmt.Sprintf("kill -0 %d && echo signalled", os.Getpid()))
	if strings.Contains(res.Stdout, "signalled") {
		t.Fatalf("signalled the host: %+v", res)
	}
	out, res := f.sh(`echo made > in-ws.txt && mkdir -p sub && echo t > "$TMPDIR/t" && cat in-ws.txt "$TMPDIR/t"`)
	if !out.Result.Success || res.Stdout != "made\nt\n" {
		t.Fatalf("workspace write: %+v %+v", out.Result, res)
	}
	// A write outside asked through "write" and granted is allowed; refused, the command
	// does not run.
	grant := func(answer bool, asked *[]tool.Ask) func(*host.Call) {
		return func(c *host.Call) {
			c.Asker = tool.AskerFunc(func(_ context.Context, a tool.Ask) (json.RawMessage, error) {
				*asked = append(*asked, a)
				return json.Marshal(answer)
			})
		}
	}
	var asked []tool.Ask
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, _ = f.run(ctx, map[string]any{"command": "echo granted > " + outside, "write": []string{outside}}, grant(false, &asked))
	if out.Result.Success || !strings.Contains(out.Result.Error, "USER_REJECTION") || len(asked) != 1 || !strings.Contains(asked[0].Question, "echo granted") {
		t.Fatalf("refused write: %+v %+v", out.Result, asked)
	}
	out, _ = f.run(ctx, map[string]any{"command": "echo granted > " + outside, "write": []string{outside}}, grant(true, &asked))
	if data, _ := os.ReadFile(outside); !out.Result.Success || string(data) != "granted\n" {
		t.Fatalf("granted write: %+v %q", out.Result, data)
	}
	out, _ = f.run(ctx, map[string]any{"command": "cat > /dev/null", "write": []string{f.layout.Home}}, grant(true, &asked))
	if out.Result.Success || !strings.Contains(out.Result.Error, "no command may touch") {
		t.Fatalf("write jean2 home: %+v", out.Result)
	}
}

// A folder of the user's home made readable (a toolchain) keeps its credential folders
// closed: the protected list is carved out of every grant.
func TestShellReadOnlyKeepsCredentialsClosed(t *testing.T) {
	fakeHome := filepath.Join(t.TempDir(), "home")
	for rel, content := range map[string]string{"bin/tool": "#!/bin/sh\necho tool ran\n", ".ssh/id_ed25519": "PRIVATE KEY", "notes.txt": "notes"} {
		p := filepath.Join(fakeHome, rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := newShellFixture(t, func(o *builtin.ShellOptions) {
		o.ReadOnly = []string{fakeHome}
		o.Protected = []string{filepath.Join(fakeHome, ".ssh")}
	})
	out, res := f.sh(fmt.Sprintf("cat %s/notes.txt; %s/bin/tool", fakeHome, fakeHome))
	if !out.Result.Success || res.Stdout != "notestool ran\n" {
		t.Fatalf("read-only folder: %+v %+v", out.Result, res)
	}
	_, res = f.sh(fmt.Sprintf("cat %s/.ssh/id_ed25519", fakeHome))
	if strings.Contains(res.Stdout, "PRIVATE") || res.ExitCode == 0 {
		t.Fatalf("read a protected key: %+v", res)
	}
	_, res = f.sh(fmt.Sprintf("echo x > %s/notes.txt", fakeHome))
	if data, _ := os.ReadFile(filepath.Join(fakeHome, "notes.txt")); string(data) != "notes" {
		t.Fatalf("wrote a read-only folder: %+v", res)
	}
}

// loopbackServer answers every connection with a line, on the host's 127.0.0.1.
func loopbackServer(t *testing.T) (string, *int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	hits := new(int)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			*hits++
			mu.Unlock()
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, _ = c.Read(buf)
				fmt.Fprint(c, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello from the loopback service\n")
			}()
		}
	}()
	return ln.Addr().String(), hits
}

// No network by default: a service on the host's loopback is out of reach, directly and
// through the proxy; asked and granted, the command runs again and reaches it, and the
// grant is remembered for the command prefix in the session.
func TestShellNetwork(t *testing.T) {
	f := newShellFixture(t, nil)
	addr, _ := loopbackServer(t)
	host_, port, _ := net.SplitHostPort(addr)
	_, res := f.sh(fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && echo connected`, host_, port))
	if strings.Contains(res.Stdout, "connected") || res.ExitCode == 0 {
		t.Fatalf("raw TCP to the host's loopback: %+v", res)
	}
	curl := fmt.Sprintf(`curl -sS -m 5 http://%s/`, addr)
	out, res := f.sh(curl) // no asker: refused
	if strings.Contains(res.Stdout, "hello") || len(res.NetworkRefused) != 1 || res.NetworkRefused[0] != addr {
		t.Fatalf("curl through the proxy without a grant: %+v %+v", out.Result, res)
	}
	// The refusal the command sees says how a shell command gets the network, not how a
	// tool folder declares it.
	if !strings.Contains(res.Stdout+res.Stderr, `name it in the call's "network" list`) || strings.Contains(res.Stdout+res.Stderr, "package.json") {
		t.Errorf("the refusal does not say how a shell command gets the network: %+v", res)
	}
	var asked []tool.Ask
	yes := func(c *host.Call) {
		c.Asker = tool.AskerFunc(func(_ context.Context, a tool.Ask) (json.RawMessage, error) {
			asked = append(asked, a)
			return json.RawMessage(`{"granted": true, "duration": "session"}`), nil
		})
	}
	out, res = f.sh(curl, yes)
	if !out.Result.Success || res.Stdout != "hello from the loopback service\n" || len(asked) != 1 {
		t.Fatalf("granted: %+v %+v asked %+v", out.Result, res, asked)
	}
	if !strings.Contains(asked[0].Question, "curl") || !strings.Contains(asked[0].Question, addr) || asked[0].Resource != "network" {
		t.Fatalf("ask %+v", asked[0])
	}
	// Remembered for the session: the same prefix reaches it at once, without asking again
	// (the host's grants answer), and without a retry.
	out, res = f.sh(curl+" -o /dev/stdout", yes)
	if !out.Result.Success || len(res.NetworkAllowed) != 0 || len(asked) != 1 {
		t.Fatalf("remembered: %+v %+v asked %d", out.Result, res, len(asked))
	}
	// Named in "network", a host is asked before the command runs (no retry).
	raw := func(c *host.Call) { c.SessionID = "s3" }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, res = f.run(ctx, map[string]any{"command": fmt.Sprintf("wget -q -O - http://%s/ 2>&1 || curl -sS http://%s/", addr, addr), "network": []string{addr}}, yes, raw)
	if !out.Result.Success || !strings.Contains(res.Stdout, "hello from the loopback service") || len(asked) != 2 || !strings.Contains(asked[1].Question, "wget") {
		t.Fatalf("named network: %+v %+v asked %+v", out.Result, res, asked)
	}
	// Another session is asked again.
	out, res = f.sh(curl, yes, func(c *host.Call) { c.SessionID = "s2" })
	if !out.Result.Success || len(asked) != 3 {
		t.Fatalf("other session: %+v %+v asked %d", out.Result, res, len(asked))
	}
}

// hostPidOf finds the process that is pid in the pid namespace ns ("pid:[inode]"); 0 when
// there is none any more.
func hostPidOf(pid int, ns string) int {
	if own, _ := os.Readlink("/proc/self/ns/pid"); own == ns {
		return pid
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if link, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || link != ns {
			continue
		}
		status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" && f[len(f)-1] == strconv.Itoa(pid) {
				host, _ := strconv.Atoi(e.Name())
				return host
			}
		}
	}
	return 0
}

func processGone(pid int) bool {
	if pid <= 0 {
		return true // hostPidOf found it gone
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// readPid waits for the command to write the pid of its background child, and its pid
// namespace (the launcher's own, where the host makes one), and returns the child's pid as
// this process sees it.
func readPid(t *testing.T, path string) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			f := strings.Fields(string(data))
			pid, err := strconv.Atoi(f[0])
			if err == nil && len(f) == 2 {
				return hostPidOf(pid, f[1])
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the command did not write its child's pid")
	return 0
}

func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if processGone(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: child %d still runs", what, pid)
}

func TestShellTimeoutKillsTheGroup(t *testing.T) {
	f := newShellFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	out, res := f.run(ctx, map[string]any{"command": `sleep 100 & echo $! $(readlink /proc/self/ns/pid) > child.pid; setsid sleep 100 & echo $! $(readlink /proc/self/ns/pid) > setsid.pid; echo started; wait`, "timeout": 500})
	if out.Result.Success || !res.TimedOut || !strings.Contains(out.Result.Error, "timed out") || res.Stdout != "started\n" {
		t.Fatalf("%+v %+v", out.Result, res)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
	waitGone(t, readPid(t, filepath.Join(f.ws, "child.pid")), "timeout")
	// One that left the process group (setsid) is still in the command's cgroup.
	waitGone(t, readPid(t, filepath.Join(f.ws, "setsid.pid")), "timeout, setsid")
}

func TestShellStopKillsTheGroup(t *testing.T) {
	f := newShellFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan host.Outcome, 1)
	go func() {
		out, _ := f.run(ctx, map[string]any{"command": `sleep 100 & echo $! $(readlink /proc/self/ns/pid) > child.pid; wait`})
		done <- out
	}()
	pid := readPid(t, filepath.Join(f.ws, "child.pid"))
	cancel()
	select {
	case out := <-done:
		if out.Result.Success {
			t.Fatalf("%+v", out.Result)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stop did not end the call")
	}
	waitGone(t, pid, "stop")
	// A background child of a command that ended by itself ends with it too.
	_, res := f.sh(`sleep 100 & echo $! $(readlink /proc/self/ns/pid) > bg.pid; echo done`)
	if res.Stdout != "done\n" {
		t.Fatalf("%+v", res)
	}
	waitGone(t, readPid(t, filepath.Join(f.ws, "bg.pid")), "end")
}

func TestShellOutputCapAndOverflow(t *testing.T) {
	f := newShellFixture(t, func(o *builtin.ShellOptions) { o.MaxOutput = 1000 })
	out, res := f.sh(`for i in $(seq 1 2000); do echo "line $i"; done`)
	if !out.Result.Success {
		t.Fatal(out.Result)
	}
	if len(res.Stdout) > 1300 || !strings.HasPrefix(res.Stdout, "line 1\nline 2\n") || !strings.HasSuffix(res.Stdout, "line 1999\nline 2000\n") || !strings.Contains(res.Stdout, "bytes left out") {
		t.Fatalf("capped stdout (%d bytes): %q", len(res.Stdout), res.Stdout)
	}
	path := res.Overflow["stdout"]
	if !strings.HasPrefix(path, f.layout.Temp) || !strings.Contains(res.Stdout, path) {
		t.Fatalf("overflow %q not in the session's folder %s", path, f.layout.Temp)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2000 || lines[1499] != "line 1500" {
		t.Fatalf("overflow file has %d lines", len(lines))
	}
	// The overflow file is in the session's folder, which the next command may read.
	out, res = f.sh("wc -l < " + path)
	if !out.Result.Success || strings.TrimSpace(res.Stdout) != "2000" {
		t.Fatalf("read overflow: %+v %+v", out.Result, res)
	}
}

// BenchmarkShellStart measures a call of `true` through the host and the launcher
// (Landlock, the view, a pid namespace, network namespace + proxy, cgroups, capability
// drop) against bare bash. Beside the mean (ns/op) it reports the median and the CPU time
// of the host and of what it started (the launcher and bash, counted once reaped) per
// command, which moves much less with the machine's load. The shell's first command,
// which learns the person's environment once (`go env`, `git config`), runs before the
// timer.
func BenchmarkShellStart(b *testing.B) {
	b.Run("bare-bash", func(b *testing.B) {
		measureStarts(b, func() {
			if err := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("shell-builtin", func(b *testing.B) {
		f := newShellFixture(b, nil)
		args, _ := json.Marshal(map[string]any{"command": "true"})
		call := func() {
			out := f.h.Invoke(context.Background(), host.Call{Tool: "shell", Args: args, SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: f.ws}})
			if !out.Result.Success {
				b.Fatal(out.Result)
			}
		}
		call()
		measureStarts(b, call)
	})
	// Other sessions' temporary folders are tmpfs mounts of their own (one per live session,
	// host.Limits.SessionTempMB), which every command's view copies and makes read-only: the
	// start grows with them. Root only, in a mount namespace of its own:
	//	unshare -m --propagation private sh -c 'mount --make-rshared / && exec go test ./builtin -run "^$" -bench ShellStart'
	for _, n := range []int{500, 2000} {
		b.Run(fmt.Sprintf("shell-builtin-idle-sessions=%d", n), func(b *testing.B) {
			if os.Geteuid() != 0 {
				b.Skip("mounts the other sessions' tmpfs itself: root only")
			}
			f := newShellFixture(b, nil)
			for i := range n {
				dir := filepath.Join(f.layout.WorkspaceTemp("idle"), fmt.Sprintf("s%d", i))
				if err := os.MkdirAll(dir, 0o700); err != nil {
					b.Fatal(err)
				}
				unmount, err := mountIdleSessionTemp(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(unmount)
			}
			args, _ := json.Marshal(map[string]any{"command": "true"})
			call := func() {
				out := f.h.Invoke(context.Background(), host.Call{Tool: "shell", Args: args, SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: f.ws}})
				if !out.Result.Success {
					b.Fatal(out.Result)
				}
			}
			call()
			measureStarts(b, call)
		})
	}
}

func measureStarts(b *testing.B, start func()) {
	lat := make([]time.Duration, 0, b.N)
	cpu := cpuWithChildren()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		start()
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64((cpuWithChildren()-cpu).Microseconds())/float64(len(lat))/1000, "cpu-ms/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

// cpuWithChildren is the CPU time (user and system) of this process and of the children
// it reaped, with theirs.
func cpuWithChildren() time.Duration {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// Where the sandbox cannot be had in auto mode (no launcher, no Landlock), a command runs
// only once a person said yes for its prefix; a mode that requires Landlock refuses.
func TestShellUnconfinedAsks(t *testing.T) {
	f := newShellFixture(t, func(o *builtin.ShellOptions) { o.Sandbox = host.SandboxOptions{Mode: sandbox.ModeAuto} })
	out, res := f.sh(`echo ran > ran.txt`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "without the sandbox") {
		t.Fatalf("no asker: %+v %+v", out.Result, res)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "ran.txt")); err == nil {
		t.Fatal("ran without a yes")
	}
	var asked []tool.Ask
	yes := func(c *host.Call) {
		c.Asker = tool.AskerFunc(func(_ context.Context, a tool.Ask) (json.RawMessage, error) {
			asked = append(asked, a)
			return json.RawMessage(`{"granted": true, "duration": "session"}`), nil
		})
	}
	out, res = f.sh(`echo ran`, yes)
	if !out.Result.Success || res.Stdout != "ran\n" || len(asked) != 1 || asked[0].Risk != "high" || !strings.Contains(asked[0].Description, "no sandbox launcher") {
		t.Fatalf("%+v %+v %+v", out.Result, res, asked)
	}
	out, _ = f.sh(`echo ran again`, yes)
	if !out.Result.Success || len(asked) != 1 {
		t.Fatalf("same prefix asked again: %+v %d", out.Result, len(asked))
	}

	g := newShellFixture(t, func(o *builtin.ShellOptions) { o.Sandbox = host.SandboxOptions{Mode: sandbox.ModeLandlock} })
	out, _ = g.sh(`echo ran`, yes)
	if out.Result.Success || !strings.Contains(out.Result.Error, "the sandbox mode is landlock but no launcher") {
		t.Fatalf("landlock mode without launcher: %+v", out.Result)
	}
}

// A background command runs confined after the call returns, writes its output to a file
// in the session's folder, and ends with {"stop": id}: it and what it started.
func TestShellBackground(t *testing.T) {
	f := newShellFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, res := f.run(ctx, map[string]any{"command": `sleep 100 & echo $! $(readlink /proc/self/ns/pid) > bgchild.pid; while true; do echo tick; sleep 0.05; done`, "background": true})
	if !out.Result.Success || res.Background == nil || !res.Background.Running || !strings.HasPrefix(res.Background.Output, f.layout.Temp) {
		t.Fatalf("%+v %+v", out.Result, res)
	}
	child := readPid(t, filepath.Join(f.ws, "bgchild.pid"))
	for i := 0; i < 200; i++ {
		if data, _ := os.ReadFile(res.Background.Output); strings.Contains(string(data), "tick\ntick\n") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Still confined: it cannot read jean2's home either.
	out, _ = f.run(ctx, map[string]any{"command": "cat " + f.layout.DotEnv + " > leak.txt", "background": true})
	if !out.Result.Success {
		t.Fatal(out.Result)
	}
	// Another session cannot stop it.
	other, _ := f.run(ctx, map[string]any{"command": "", "stop": res.Background.ID}, func(c *host.Call) { c.SessionID = "s2" })
	if other.Result.Success || processGone(child) {
		t.Fatalf("stopped from another session: %+v", other.Result)
	}
	out, stopped := f.run(ctx, map[string]any{"command": "", "stop": res.Background.ID})
	if !out.Result.Success || !strings.Contains(stopped.Stdout, "tick\n") || stopped.ExitCode != 128+9 {
		t.Fatalf("stop: %+v %+v", out.Result, stopped)
	}
	waitGone(t, child, "background stop")
	if data, _ := os.ReadFile(filepath.Join(f.ws, "leak.txt")); strings.Contains(string(data), "sk-secret") {
		t.Fatalf("background command read the .env: %q", data)
	}
}

// A command cannot plant the workspace's .jean2/mcp.json where the launcher can seal the
// folder by a mount (it still makes files at the workspace's top level); where it cannot,
// the trust of mcp.json's content is what stands (docs/security.md).
func TestShellSealsWorkspaceSettings(t *testing.T) {
	f := newShellFixture(t, nil)
	if st := sandbox.Probe(sandbox.ModeLandlock, os.Args[0]); !st.MountSeal {
		t.Skipf("the launcher cannot seal by a mount here: %s", st.MountSealError)
	}
	_, res := f.sh(`mkdir -p .jean2 2>/dev/null; echo '{"mcpServers":{}}' > .jean2/mcp.json; echo "write=$?"; mv .jean2 moved 2>/dev/null; echo "mv=$?"; echo top > top.txt && echo "top=$?"`)
	if !strings.Contains(res.Stdout, "top=0") {
		t.Fatalf("could not make a file at the workspace's top level: %+v", res)
	}
	if strings.Contains(res.Stdout, "write=0") || strings.Contains(res.Stdout, "mv=0") {
		t.Fatalf("changed the workspace's .jean2: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(f.ws, ".jean2", "mcp.json")); err == nil {
		t.Fatal("a command planted .jean2/mcp.json")
	}
}

// When a session ends (it is deleted), the host ends its background commands and removes
// its temporary folder; another session's background command goes on.
func TestShellBackgroundEndsWithItsSession(t *testing.T) {
	f := newShellFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := func(session, pidFile string) shellOut {
		out, res := f.run(ctx, map[string]any{"command": `sleep 100 & echo $! $(readlink /proc/self/ns/pid) > ` + pidFile + `; while true; do sleep 0.05; done`, "background": true},
			func(c *host.Call) { c.SessionID = session })
		if !out.Result.Success || res.Background == nil {
			t.Fatalf("%s: %+v", session, out.Result)
		}
		return res
	}
	ended := start("s-ended", "ended.pid")
	kept := start("s-kept", "kept.pid")
	endedChild := readPid(t, filepath.Join(f.ws, "ended.pid"))
	keptChild := readPid(t, filepath.Join(f.ws, "kept.pid"))
	if err := f.h.EndSession(ctx, "w1", "s-ended"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, endedChild, "session end")
	if _, err := os.Stat(filepath.Dir(ended.Background.Output)); !os.IsNotExist(err) {
		t.Fatalf("the ended session's temporary folder is still there: %v", err)
	}
	if processGone(keptChild) {
		t.Fatal("ending one session stopped another session's background command")
	}
	if _, err := os.Stat(kept.Background.Output); err != nil {
		t.Fatalf("the other session's output file: %v", err)
	}
	// The job is gone from the shell too: stopping it by id says so.
	out, _ := f.run(ctx, map[string]any{"command": "", "stop": ended.Background.ID}, func(c *host.Call) { c.SessionID = "s-ended" })
	if out.Result.Success || !strings.Contains(out.Result.Error, "no background command") {
		t.Fatalf("stop after the session ended: %+v", out.Result)
	}
}

// TestShellNetworkAskHoldsTheConnection: a command refused the network was offered to the
// person after it ended and, allowed, ran again whole: `echo run >> count.txt; curl …`
// left two lines in count.txt, and the model was told only "retried". Now the proxy holds
// the connection while the person is asked: the command runs once, and the model is told
// which hosts the person allowed while it ran. Refused (by the person or with no one to
// ask), the command still runs once and does not get through.
func TestShellNetworkAskHoldsTheConnection(t *testing.T) {
	f := newShellFixture(t, nil)
	addr, _ := loopbackServer(t)
	command := fmt.Sprintf(`echo run >> count.txt; curl -sS -m 30 http://%s/`, addr)
	answer := func(grant bool, asked *[]tool.Ask, session string) func(*host.Call) {
		return func(c *host.Call) {
			c.SessionID = session
			c.Asker = tool.AskerFunc(func(_ context.Context, a tool.Ask) (json.RawMessage, error) {
				*asked = append(*asked, a)
				return json.Marshal(grant)
			})
		}
	}
	lines := func() int {
		b, _ := os.ReadFile(filepath.Join(f.ws, "count.txt"))
		os.Remove(filepath.Join(f.ws, "count.txt"))
		return strings.Count(string(b), "\n")
	}
	var asked []tool.Ask
	out, res := f.sh(command, answer(true, &asked, "hold-yes"))
	if n := lines(); n != 1 {
		t.Errorf("allowed: count.txt has %d lines, want 1 (the command ran again)", n)
	}
	if !out.Result.Success || !strings.Contains(res.Stdout, "hello from the loopback service") || len(asked) != 1 {
		t.Fatalf("allowed: %+v %+v asked %d", out.Result, res, len(asked))
	}
	if !slices.Contains(res.NetworkAllowed, addr) || len(res.NetworkRefused) != 0 {
		t.Errorf("allowed: the model is not told what the person allowed: %s", out.Result.Result)
	}
	if !strings.Contains(asked[0].Description, "waits") {
		t.Errorf("the ask does not say the command waits: %q", asked[0].Description)
	}
	asked = nil
	out, res = f.sh(command, answer(false, &asked, "hold-no"))
	if n := lines(); n != 1 || strings.Contains(res.Stdout, "hello") || len(asked) != 1 || !slices.Contains(res.NetworkRefused, addr) {
		t.Fatalf("refused by the person: %d lines, %+v %+v asked %d", n, out.Result, res, len(asked))
	}
	out, res = f.sh(command, func(c *host.Call) { c.SessionID = "hold-nobody" })
	if n := lines(); n != 1 || strings.Contains(res.Stdout, "hello") || !slices.Contains(res.NetworkRefused, addr) {
		t.Fatalf("no one to ask: %d lines, %+v %+v", n, out.Result, res)
	}
	// The person's time to answer does not count toward the command's timeout.
	slow := func(c *host.Call) {
		c.SessionID = "hold-slow"
		c.Asker = tool.AskerFunc(func(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
			select {
			case <-time.After(3 * time.Second):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return json.RawMessage("true"), nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, res = f.run(ctx, map[string]any{"command": command, "timeout": 2000}, slow)
	if n := lines(); n != 1 || res.TimedOut || !strings.Contains(res.Stdout, "hello from the loopback service") {
		t.Fatalf("a slow answer: %d lines, %+v %+v", n, out.Result, res)
	}
}

// A command runs in the cwd asked for when it is a folder of the workspace; a cwd outside
// the workspace, or one that is a file, is refused before anything runs.
func TestShellCwd(t *testing.T) {
	f := newShellFixture(t, nil)
	if err := os.MkdirAll(filepath.Join(f.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, res := f.run(ctx, map[string]any{"command": "pwd", "cwd": "sub"})
	if !out.Result.Success || res.Stdout != filepath.Join(f.ws, "sub")+"\n" {
		t.Fatalf("cwd sub: %+v %+v", out.Result, res)
	}
	outside := t.TempDir()
	out, _ = f.run(ctx, map[string]any{"command": "pwd", "cwd": outside})
	if out.Result.Success || out.Result.Error != "cwd "+outside+" lies outside the workspace: commands run in the workspace, its allowed paths or the session's folder" {
		t.Fatalf("cwd outside: %+v", out.Result)
	}
	out, _ = f.run(ctx, map[string]any{"command": "pwd", "cwd": "file.txt"})
	if out.Result.Success || out.Result.Error != "cwd "+filepath.Join(f.ws, "file.txt")+" is not a folder" {
		t.Fatalf("cwd file: %+v", out.Result)
	}
}
