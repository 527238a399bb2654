//go:build linux

package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
)

// A command of session s1, in the foreground or the background, writes its own temporary
// folder and no other session's of the workspace, nor the workspace's folder that holds
// them; s1 filling its quota (ENOSPC) leaves session s2 its own. Run as an ordinary user
// too (TestShellTempQuotaAsOrdinaryUser).
func TestShellSessionTempIsItsOwn(t *testing.T) {
	f := newShellFixtureHost(t, nil, func(o *host.Options) { o.Limits.SessionTempMB = 16 })
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	inS2 := func(c *host.Call) { c.SessionID = "s2" }
	if out, res := f.run(ctx, map[string]any{"command": `echo "$TMPDIR"`}, inS2); !out.Result.Success {
		t.Fatalf("session s2: %+v %s", res, out.Result.Error)
	}
	wsTemp := f.layout.WorkspaceTemp("w1")
	others := []string{filepath.Join(wsTemp, "s2", "from-s1"), filepath.Join(wsTemp, "from-s1")}
	script := `for p in "$@"; do echo x > "$p" && echo "wrote $p"; done; echo done`
	_, res := f.run(ctx, map[string]any{"command": `set -- ` + strings.Join(others, " ") + `; ` + script})
	if strings.Contains(res.Stdout, "wrote") || !strings.Contains(res.Stdout, "done") {
		t.Fatalf("a command of session s1 wrote outside its own temporary folder: %+v", res)
	}
	bgOthers := []string{filepath.Join(wsTemp, "s2", "from-s1-bg"), filepath.Join(wsTemp, "from-s1-bg")}
	out, bg := f.run(ctx, map[string]any{"command": `set -- ` + strings.Join(bgOthers, " ") + `; (` + script + `) > bg.txt 2>&1`, "background": true})
	if !out.Result.Success || bg.Background == nil {
		t.Fatalf("background: %+v", out.Result)
	}
	var text string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !strings.Contains(text, "done"); time.Sleep(50 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(f.ws, "bg.txt"))
		text = string(data)
	}
	t.Logf("a background command of s1 tried the other folders: %q", text)
	if strings.Contains(text, "wrote") || !strings.Contains(text, "done") {
		t.Fatalf("a background command of session s1 wrote outside its own temporary folder: %q", text)
	}
	for _, p := range append(others, bgOthers...) {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is there: %v", p, err)
		}
	}
	_, res = f.run(ctx, map[string]any{"command": `dd if=/dev/zero of="$TMPDIR/fill" bs=1M count=32; echo "dd exit $?"`})
	if !strings.Contains(res.Stderr, "No space left on device") {
		t.Fatalf("session s1 wrote 32 MiB into a 16 MiB quota: %+v", res)
	}
	out, res = f.run(ctx, map[string]any{"command": `dd if=/dev/zero of="$TMPDIR/some" bs=1M count=8 && echo ok`}, inS2)
	if !out.Result.Success || !strings.Contains(res.Stdout, "ok") {
		t.Fatalf("session s2 could not write 8 MiB once s1 filled its quota: %+v %s", res, out.Result.Error)
	}
}
