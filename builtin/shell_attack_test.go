package builtin_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// TestShellAttackSessionFolderSwappedForALink: a tool worker of the workspace could write
// the workspace's temporary folder, so it could put a link to "/" in place of a session's
// folder (a confined one no longer can: host/TestSandboxAttackSessionFolderSwappedForALink;
// an unconfined one still can, and here the test does it for the tool). The shell grants
// its commands that folder, resolved: the command got "/" read-write, protected places
// carved out — every file of the machine jean2's uid may touch. Now the host puts a real
// folder back before the command, and the launcher refuses a rule whose path became a link
// after it was planned.
func TestShellAttackSessionFolderSwappedForALink(t *testing.T) {
	// No tmpfs: the test swaps the folder itself, which a mount's root would refuse.
	f := newShellFixtureHost(t, nil, func(o *host.Options) { o.Limits.SessionTempMB = -1 })
	outside := filepath.Join(t.TempDir(), "user-files")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("the user's private notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, res := f.sh(`echo "$TMPDIR"`)
	if !out.Result.Success {
		t.Fatalf("first command: %+v", out.Result)
	}
	session := strings.TrimSpace(res.Stdout)
	if !strings.HasPrefix(session, f.layout.Temp) {
		t.Fatalf("the command's TMPDIR %q is not a session folder", session)
	}
	if err := os.RemoveAll(session); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", session); err != nil {
		t.Fatal(err)
	}
	out, res = f.sh(`cat ` + filepath.Join(outside, "notes.txt") + `; echo planted > ` + filepath.Join(outside, "planted.txt") + `; echo "$TMPDIR"`)
	if strings.Contains(res.Stdout, "private notes") {
		t.Errorf("the command read a file outside the workspace through the swapped session folder: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
		t.Errorf("the command wrote outside the workspace through the swapped session folder")
	}
	if fi, err := os.Lstat(session); err != nil || !fi.IsDir() {
		t.Errorf("the session's folder after the command: %v %v", fi, err)
	}
}

// TestShellAttackNetworkToSpecialAddressUnattended: a hostile model reply (or a page it read)
// runs curl against a service of this machine — here one on loopback; the cloud's metadata
// address or a database on the private network alike — naming it in "network", in a
// session nobody watches. Before, every network ask of the shell was labelled "medium",
// and the unattended policy at "medium" granted it: the command read the service. Now an
// address the egress rules call special, localhost, or a range of addresses is asked at
// "high"; a name (which the proxy lets reach public addresses only) stays "medium".
func TestShellAttackNetworkToSpecialAddressUnattended(t *testing.T) {
	f := newShellFixture(t, nil)
	addr, _ := loopbackServer(t)
	_, port, _ := net.SplitHostPort(addr)
	policy, err := ask.NewPolicy("medium")
	if err != nil {
		t.Fatal(err)
	}
	for i, target := range []string{addr, "localhost:" + port, "127.0.0.0/8", "169.254.169.254", "[::1]:" + port} {
		var asked []tool.Ask
		unattended := func(c *host.Call) {
			c.Asker = recordingPolicy{policy, &asked}
			c.SessionID = fmt.Sprintf("unattended-%d", i)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, res := f.run(ctx, map[string]any{"command": "curl -sS -m 5 http://" + addr + "/", "network": []string{target}}, unattended)
		cancel()
		if strings.Contains(res.Stdout, "hello from the loopback service") {
			t.Errorf("network %q: the command reached this machine's service unattended: %+v", target, res)
		}
		if len(asked) == 0 || asked[0].Risk != "high" {
			t.Errorf("network %q: asked %+v (outcome %+v)", target, asked, out.Result)
		}
	}
	// Not named, refused, then offered again: the same.
	var asked []tool.Ask
	_, res := f.sh("curl -sS -m 5 http://"+addr+"/", func(c *host.Call) { c.Asker = recordingPolicy{policy, &asked}; c.SessionID = "unattended-retry" })
	if strings.Contains(res.Stdout, "hello from the loopback service") || len(asked) != 1 || asked[0].Risk != "high" {
		t.Errorf("the retry's ask: %+v, asked %+v", res, asked)
	}
	// A name is an ordinary ask.
	asked = nil
	f.run(context.Background(), map[string]any{"command": "true", "network": []string{"registry.npmjs.org"}}, func(c *host.Call) {
		c.Asker = recordingPolicy{policy, &asked}
		c.SessionID = "unattended-name"
	})
	if len(asked) != 1 || asked[0].Risk != "medium" {
		t.Errorf("a name: asked %+v", asked)
	}
}

// TestShellAttackNestedWorkspaceSwappedForALink: a workspace inside another (~/code/app in
// ~/code) is replaced by a link to the user's other files by a tool of the outer one (the
// test does it for the tool). A command in the inner workspace was granted the link's
// target read-write; now it is refused and says why.
func TestShellAttackNestedWorkspaceSwappedForALink(t *testing.T) {
	f := newShellFixture(t, nil)
	inner := filepath.Join(f.ws, "app")
	user := filepath.Join(t.TempDir(), "user-files")
	for _, d := range []string{inner, user} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(user, "notes.txt"), []byte("the user's private notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inApp := func(c *host.Call) { c.Workspace = host.Workspace{ID: "wapp", Path: inner}; c.SessionID = "sapp" }
	if out, res := f.sh("pwd", inApp); !out.Result.Success || strings.TrimSpace(res.Stdout) != inner {
		t.Fatalf("before: %+v %+v", out.Result, res)
	}
	if err := os.Rename(inner, inner+"-aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(user, inner); err != nil {
		t.Fatal(err)
	}
	out, res := f.sh("cat notes.txt; echo planted > planted.txt", inApp)
	if strings.Contains(res.Stdout, "private notes") {
		t.Errorf("the command read the user's files through the link: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(user, "planted.txt")); err == nil {
		t.Errorf("the command wrote among the user's files through the link")
	}
	if out.Result.Success || !strings.Contains(out.Result.Error, "now leads to") {
		t.Errorf("the refusal: %+v", out.Result)
	}
}

// TestShellAttackSessionlessBackgroundOfAnotherCall: background commands are kept by
// session, and every sessionless call (a stateless MCP client's, the API's Run form's) has
// the same empty session, whatever its workspace; their ids are counted (bg-1, bg-2…). So a
// sessionless call in one workspace stopped the background command another sessionless
// call started in another workspace, and was given the end of its output. A sessionless
// call has no session to keep a background command in, nor a later call of its own to stop
// it from: it is refused one, and stops none.
func TestShellAttackSessionlessBackgroundOfAnotherCall(t *testing.T) {
	f := newShellFixture(t, nil)
	other := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sessionless := func(id, path string) func(*host.Call) {
		return func(c *host.Call) { c.SessionID, c.Workspace = "", host.Workspace{ID: id, Path: path} }
	}
	// A session's own, to show that one is not reachable either.
	out, res := f.run(ctx, map[string]any{"command": "echo session-secret; sleep 100", "background": true})
	if !out.Result.Success || res.Background == nil {
		t.Fatalf("a session's background command: %+v", out.Result)
	}
	out, res = f.run(ctx, map[string]any{"command": "echo w1-secret; sleep 100", "background": true}, sessionless("w1", f.ws))
	started := out.Result.Success && res.Background != nil
	if started {
		t.Logf("a sessionless call in w1 started %s", res.Background.ID)
	}
	for _, id := range []string{"bg-1", "bg-2", "bg-3"} {
		time.Sleep(50 * time.Millisecond) // the commands print
		stop, got := f.run(ctx, map[string]any{"command": "", "stop": id}, sessionless("w2", other))
		if stop.Result.Success || strings.Contains(got.Stdout, "secret") {
			t.Errorf("a sessionless call in w2 stopped %s and read %q", id, got.Stdout)
		}
	}
	if started {
		t.Fatalf("a sessionless call was given a background command no later call of its own can stop")
	}
	if !strings.Contains(out.Result.Error, "session") {
		t.Fatalf("the refusal does not say why: %s", out.Result.Error)
	}
}

// TestShellAttackOwnCgroup: a shell command (uid 0 like its root host, any program at
// hand) finds its groups in /proc/self/cgroup and tries to lift its session's limits,
// move itself out to the host's group or the hierarchy's root, make a group of its own,
// and set a release agent. Each write must fail and the session's limits stay.
func TestShellAttackOwnCgroup(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("cgroups are made by a root host only")
	}
	f := newShellFixture(t, nil)
	script := `for line in $(cat /proc/self/cgroup); do
  h=${line#*:}; h=${h%%:*}; g=${line#*:*:}
  case "$h" in pids|memory) ;; *) continue ;; esac
  own=/sys/fs/cgroup/$h$g; session=${own%/*}
  for target in "$own/pids.max" "$session/pids.max" "$session/memory.limit_in_bytes" "$session/../../cgroup.procs" "/sys/fs/cgroup/$h/cgroup.procs" "/sys/fs/cgroup/$h/release_agent"; do
    [ -e "$target" ] || continue
    if echo max > "$target" 2>/dev/null || echo $$ > "$target" 2>/dev/null; then echo "WROTE $target"; else echo "refused $target"; fi
  done
  if mkdir "$session/escape" 2>/dev/null; then echo "MADE $session/escape"; else echo "refused mkdir $session/escape"; fi
  echo "session $h $session $(cat $session/pids.max 2>/dev/null)"
done`
	out, res := f.sh(script)
	if !out.Result.Success {
		t.Fatalf("the command: %+v", out.Result)
	}
	t.Logf("%s", res.Stdout)
	if strings.Contains(res.Stdout, "WROTE") || strings.Contains(res.Stdout, "MADE") {
		t.Fatalf("a command changed its cgroups:\n%s", res.Stdout)
	}
	if !strings.Contains(res.Stdout, "refused") {
		t.Skipf("the command found no cgroup to try:\n%s", res.Stdout)
	}
	out, res = f.sh(`cat /proc/self/cgroup`)
	if !out.Result.Success || !strings.Contains(res.Stdout, "/s-s1/") {
		t.Fatalf("the next command is not in its session's group: %s %+v", res.Stdout, out.Result)
	}
}
