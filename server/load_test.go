package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// pidProbeTool answers the process it ran in and the temporary folder it was given.
const pidProbeTool = `export const definition = {
  name: 'pid_probe', description: 'Say which process ran the call.',
  inputSchema: { type: 'object', properties: {} },
};
export async function execute(input, ctx) {
  return { success: true, result: { pid: process.pid, temp: ctx.fs.tempDir } };
}
`

// tempFolders lists the temporary folders in $JEAN2_HOME/tmp (sessions/NAME and
// workspaces/ID/NAME).
func (f *fixture) tempFolders() []string {
	f.t.Helper()
	var out []string
	for _, pattern := range []string{"sessions/*", "workspaces/*/*"} {
		m, err := filepath.Glob(filepath.Join(f.cfg.Host.Layout.Temp, pattern))
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

// Found under load: every POST /api/tools/{name}/run without a session had a scope of its
// own, so a confined tool started a worker per call (kept for the idle timeout) and left
// an empty temporary folder per call. Sessionless calls of one workspace share a scope: N
// calls, one worker, one temporary folder, removed with the workspace.
func TestSessionlessRunsShareAWorkerAndTemp(t *testing.T) {
	f := newFixture(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.Host.Sandbox = host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: exe}
	f.tools = map[string]string{"pid-probe": pidProbeTool}
	f.start()
	if f.srv.host.Sandbox().LandlockABI == 0 {
		t.Skipf("no Landlock here: workers are not confined per scope")
	}
	var ws struct{ ID string }
	f.call("POST", "/api/workspaces", map[string]any{"path": f.ws}, 201, &ws)
	const calls = 12
	pids := map[float64]int{}
	temps := map[string]bool{}
	for range calls {
		var res struct {
			Result struct {
				Success bool           `json:"success"`
				Result  map[string]any `json:"result"`
				Error   any            `json:"error"`
			} `json:"result"`
		}
		body := f.call("POST", "/api/tools/pid_probe/run", map[string]any{"workspaceId": ws.ID}, 200, &res)
		if !res.Result.Success {
			t.Fatalf("pid_probe failed: %s", body)
		}
		pids[res.Result.Result["pid"].(float64)]++
		temps[res.Result.Result["temp"].(string)] = true
	}
	if len(pids) != 1 {
		t.Errorf("%d sessionless calls ran in %d workers (%v), want 1", calls, len(pids), pids)
	}
	if len(temps) != 1 {
		t.Errorf("%d sessionless calls had %d temporary folders, want 1: %v", calls, len(temps), temps)
	}
	if got := f.tempFolders(); len(got) > 1 {
		t.Errorf("%d sessionless calls left %d temporary folders: %v", calls, len(got), got)
	}
	f.call("DELETE", "/api/workspaces/"+ws.ID, nil, 204, nil)
	if got := f.tempFolders(); len(got) != 0 {
		t.Errorf("after the workspace was deleted, temporary folders are left: %v", got)
	}
}

// Found under load: connections that send a request body a byte at a time were never cut
// off, and enough of them used every file descriptor. With HTTPLimits, more slow
// connections than the cap are cut off after the body timeout, the connections open at
// once never pass the cap, and a normal request is still answered.
func TestSlowBodiesDoNotStopTheServer(t *testing.T) {
	f := newFixture(t)
	f.start()
	lim := HTTPLimits{MaxConns: 4, HeaderTimeout: 500 * time.Millisecond, BodyTimeout: time.Second, IdleTimeout: time.Second}
	hs := f.srv.HTTPServer(lim)
	var mu sync.Mutex
	open, most := 0, 0
	hs.ConnState = func(_ net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch st {
		case http.StateNew:
			open++
			most = max(most, open)
		case http.StateClosed, http.StateHijacked:
			open--
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(LimitListener(ln, lim)) }()
	t.Cleanup(func() { _ = hs.Close() })
	addr := ln.Addr().String()

	// Twice the cap of clients that announce 1,000 bytes and send one every 100 ms.
	const slow = 8
	cut := make(chan time.Duration, slow)
	for range slow {
		go func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				cut <- -1
				return
			}
			defer c.Close()
			start := time.Now()
			fmt.Fprintf(c, "POST /api/workspaces HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", addr, f.token)
			for time.Since(start) < 20*time.Second {
				if _, err := c.Write([]byte(" ")); err != nil {
					break
				}
				_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				var b [512]byte
				if _, err := c.Read(b[:]); err != nil {
					var ne net.Error
					if !(errors.As(err, &ne) && ne.Timeout()) {
						break // the server answered and closed, or reset
					}
				}
			}
			cut <- time.Since(start)
		}()
	}
	time.Sleep(300 * time.Millisecond)
	client := &http.Client{Timeout: 15 * time.Second}
	resp, err := client.Get("http://" + addr + "/api/health")
	if err != nil {
		t.Fatalf("a normal request while %d slow ones hold the server: %v", slow, err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health: %d", resp.StatusCode)
	}
	for range slow {
		if d := <-cut; d < 0 || d >= 20*time.Second {
			t.Errorf("a slow-body connection was not cut off (%v)", d)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most > lim.MaxConns {
		t.Errorf("%d connections were open at once, over the cap of %d", most, lim.MaxConns)
	}
}

// The body timeout bounds reading the body only: a tool run that lasts longer than it after
// its body was read is not cut off.
func TestBodyTimeoutSparesLongRuns(t *testing.T) {
	f := newFixture(t)
	f.tools = map[string]string{"slow": `export const definition = { name: 'slow', description: 'wait', inputSchema: { type: 'object', properties: {} } };
export async function execute() { await new Promise((r) => setTimeout(r, 1500)); return { success: true, result: 'waited' }; }
`}
	f.start()
	lim := HTTPLimits{MaxConns: 8, BodyTimeout: 300 * time.Millisecond}
	hs := f.srv.HTTPServer(lim)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(LimitListener(ln, lim)) }()
	t.Cleanup(func() { _ = hs.Close() })
	var ws struct{ ID string }
	f.call("POST", "/api/workspaces", map[string]any{"path": f.ws}, 201, &ws)
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/api/tools/slow/run",
		strings.NewReader(fmt.Sprintf(`{"workspaceId":%q}`, ws.ID)))
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"waited"`) {
		t.Fatalf("a run longer than the body timeout: %d %s", resp.StatusCode, body)
	}
}
