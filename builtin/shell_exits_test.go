package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// A session's next command reuses the network exit (namespace and proxy) of one that
// ended, and still reaches only what it may itself: the hosts the last command was allowed
// do not carry over. A command that runs while another holds an exit, and a command of
// another session, get exits of their own.
func TestShellReusesExitPerCommand(t *testing.T) {
	f := newShellFixture(t, nil)
	addr, _ := loopbackServer(t)
	netns := func(mods ...func(*host.Call)) string {
		t.Helper()
		out, res := f.sh(`readlink /proc/self/ns/net`, mods...)
		if !out.Result.Success || !strings.HasPrefix(res.Stdout, "net:[") {
			t.Fatalf("readlink: %+v %+v", out.Result, res)
		}
		return strings.TrimSpace(res.Stdout)
	}
	first := netns()
	if own, _ := os.Readlink("/proc/self/ns/net"); own == first {
		t.Fatalf("the command ran in the host's network namespace %s", own)
	}

	// Allowed by name (and a person's yes) for this command: reached, through the exit
	// the last command left.
	yes := func(c *host.Call) {
		c.Asker = tool.AskerFunc(func(context.Context, tool.Ask) (json.RawMessage, error) {
			return json.RawMessage(`{"granted": true, "duration": "once"}`), nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, res := f.run(ctx, map[string]any{"command": fmt.Sprintf("curl -sS -m 5 http://%s/; readlink /proc/self/ns/net", addr), "network": []string{addr}}, yes)
	if !out.Result.Success || !strings.Contains(res.Stdout, "hello from the loopback service") || !strings.Contains(res.Stdout, first) {
		t.Fatalf("allowed command on the reused exit (%s): %+v %+v", first, out.Result, res)
	}
	// The next command on the same exit was allowed nothing: refused, and told so.
	out, res = f.sh(fmt.Sprintf("readlink /proc/self/ns/net; curl -sS -m 5 http://%s/", addr))
	if strings.Contains(res.Stdout, "hello") || !strings.Contains(res.Stdout, first) || len(res.NetworkRefused) != 1 || res.NetworkRefused[0] != addr {
		t.Fatalf("the last command's allowance carried over to the next on %s: %+v %+v", first, out.Result, res)
	}

	// A background command holds its exit while it runs: the foreground command beside it
	// has another one; once it is stopped, its exit serves the session again.
	out, res = f.run(ctx, map[string]any{"command": `readlink /proc/self/ns/net > bg.ns; sleep 100`, "background": true})
	if !out.Result.Success || res.Background == nil {
		t.Fatalf("background: %+v %+v", out.Result, res)
	}
	bgNS := waitFile(t, filepath.Join(f.ws, "bg.ns"))
	if fg := netns(); fg == bgNS {
		t.Fatalf("a foreground command shares the running background command's exit %s", bgNS)
	}
	out, _ = f.run(ctx, map[string]any{"command": "", "stop": res.Background.ID})
	if !out.Result.Success {
		t.Fatalf("stop: %+v", out.Result)
	}

	// Another session never gets this session's exits.
	s2 := func(c *host.Call) { c.SessionID = "s2" }
	if other := netns(s2); other == first || other == bgNS {
		t.Fatalf("session s2 got session s1's exit %s", other)
	}
}

// waitFile waits for a command to write a line to path and returns it.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for range 500 {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			return strings.TrimSpace(string(data))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("nothing written to %s", path)
	return ""
}
