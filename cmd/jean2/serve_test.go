package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// served is a running `jean2 serve`.
type served struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	logs *bytes.Buffer
	done chan error
}

var listeningLine = regexp.MustCompile(`listening on (http://\S+)`)

// startServe runs jean2 serve on a free port with env and waits until it listens.
func startServe(t *testing.T, c *cli, extraEnv []string, args ...string) *served {
	t.Helper()
	cmd := exec.Command(jean2Bin, append([]string{"serve", "--port", "0"}, args...)...)
	cmd.Env = append(c.env(), extraEnv...)
	cmd.Dir = c.ws
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{t: t, cmd: cmd, logs: &bytes.Buffer{}, done: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.logs.WriteString(line + "\n")
			if m := listeningLine.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() { s.kill(syscall.SIGKILL) })
	select {
	case s.base = <-found:
	case err := <-s.done:
		t.Fatalf("jean2 serve exited before listening: %v\n%s", err, s.logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("jean2 serve did not listen within a minute:\n%s", s.logs)
	}
	return s
}

// kill sends sig and waits for the process to end.
func (s *served) kill(sig syscall.Signal) error {
	if s.cmd.ProcessState != nil {
		return nil
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		return fmt.Errorf("jean2 serve did not stop within 30s after %v", sig)
	}
}

func (s *served) call(method, path string, body any, want int, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", method, path, err, s.logs)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %s: %v", method, path, data, err)
		}
	}
}

// waitEvent polls the session's log until an event of type typ whose payload contains
// substr appears after seq; it returns that event.
func (s *served) waitEvent(sessionID string, after int64, typ, substr string) store.Event {
	s.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var page struct{ Events []store.Event }
		s.call("GET", fmt.Sprintf("/api/sessions/%s/events?after=%d", sessionID, after), nil, 200, &page)
		for _, ev := range page.Events {
			if ev.Type == typ && strings.Contains(string(ev.Payload), substr) {
				return ev
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("no %s event containing %q in session %s\n%s", typ, substr, sessionID, s.logs)
	return store.Event{}
}

func TestServeAnswersHealthAndStopsOnSIGTERM(t *testing.T) {
	c := newCLI(t)
	s := startServe(t, c, nil)
	var health map[string]string
	s.call("GET", "/api/health", nil, 200, &health)
	if health["status"] != "ok" || health["auth"] != "none" {
		t.Fatalf("health = %v", health)
	}
	if err := s.kill(syscall.SIGTERM); err != nil {
		t.Fatalf("jean2 serve after SIGTERM: %v\n%s", err, s.logs)
	}
	if _, err := os.Stat(filepath.Join(c.home, "jean2.db")); err != nil {
		t.Fatalf("no database: %v", err)
	}
}

// JEAN2_DB_SYNC chooses when a commit reaches the disk: full is used and said; a value
// that is neither normal nor full stops the start with a message naming the variable.
func TestServeDBSync(t *testing.T) {
	c := newCLI(t)
	_, stderr, code := c.runWith([]string{"JEAN2_DB_SYNC=sometimes"}, "serve", "--port", "0")
	if code != 2 || !strings.Contains(stderr, "JEAN2_DB_SYNC") || !strings.Contains(stderr, "full") {
		t.Fatalf("JEAN2_DB_SYNC=sometimes: exit %d, stderr %s", code, stderr)
	}
	s := startServe(t, c, []string{"JEAN2_DB_SYNC=FULL"})
	if !strings.Contains(s.logs.String(), "(JEAN2_DB_SYNC=full)") {
		t.Errorf("the durability in use is not said:\n%s", s.logs)
	}
	s.call("POST", "/api/workspaces", map[string]any{"path": c.ws}, 201, nil)
	if err := s.kill(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
	s = startServe(t, c, nil)
	if !strings.Contains(s.logs.String(), "(JEAN2_DB_SYNC=normal)") {
		t.Errorf("the default durability is not said:\n%s", s.logs)
	}
	var list struct{ Workspaces []store.Workspace }
	s.call("GET", "/api/workspaces", nil, 200, &list)
	if len(list.Workspaces) != 1 {
		t.Errorf("the workspace made under full durability: %+v", list.Workspaces)
	}
}

func TestServeOnNonLoopbackPrintsTokenOnce(t *testing.T) {
	c := newCLI(t)
	s := startServe(t, c, nil, "--host", "0.0.0.0")
	tok := regexp.MustCompile(`jean2_[A-Za-z0-9_-]{20,}`).FindString(s.logs.String())
	if tok == "" {
		t.Fatalf("no token printed:\n%s", s.logs)
	}
	base := strings.Replace(s.base, "0.0.0.0", "127.0.0.1", 1)
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer " + tok, 200}} {
		req, _ := http.NewRequest("GET", base+"/api/workspaces", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("auth %q: %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
	s.kill(syscall.SIGTERM)
	// The second start prints no token: only its hash was kept.
	again := startServe(t, c, nil, "--host", "0.0.0.0")
	if strings.Contains(again.logs.String(), tok) || regexp.MustCompile(`jean2_[A-Za-z0-9_-]{20,}`).MatchString(again.logs.String()) {
		t.Fatalf("a token was printed again:\n%s", again.logs)
	}
}

// slowTool waits until aborted (or a minute): a call still running when the server dies.
const slowTool = `export const definition = {
  name: 'slow', description: 'Take a long time.', inputSchema: { type: 'object' },
};
export async function execute(input, ctx) {
  await new Promise((resolve) => { const t = setTimeout(resolve, 60000); ctx.signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }); });
  return { success: true, result: 'slept' };
}
`

// kill -9 in the middle of a turn: after a restart what was acknowledged is there (the
// user's message, the text streamed before the tool call), the interrupted turn is sealed,
// and the session takes a new turn.
func TestServeCrashMidTurnLosesNothingAcknowledged(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "slow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(slowTool), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := providertest.NewOpenAI(t)
	env := []string{"OPENAI_BASE_URL=" + fake.BaseURL(), "OPENAI_API_KEY=sk-test", "OPENAI_MODEL=test-model"}
	fake.Push(providertest.NewOpenAIStream("test-model").Text("Starting the slow job.").
		ToolCall(0, "call_slow", "slow", `{}`).Finish("tool_calls").Done().Reply())

	s := startServe(t, c, env)
	var ws store.Workspace
	s.call("POST", "/api/workspaces", map[string]any{"path": c.ws}, 201, &ws)
	var ses struct{ ID string }
	s.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": "crash"}, 201, &ses)
	var started struct {
		Turn struct{ ID, UserMessageID string }
	}
	s.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "run the slow job"}, 202, &started)
	// The tool call is running: everything before it was acknowledged.
	s.waitEvent(ses.ID, 0, "part.updated", `"running"`)
	if err := s.kill(syscall.SIGKILL); err == nil {
		t.Fatal("jean2 serve exited cleanly after SIGKILL")
	}

	fake.Push(providertest.OpenAIText("test-model", "Back again."))
	s = startServe(t, c, env)
	var msgs struct{ Messages []store.Message }
	s.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if len(msgs.Messages) < 2 || msgs.Messages[0].ID != started.Turn.UserMessageID || msgs.Messages[0].Content != "run the slow job" {
		t.Fatalf("messages after the crash = %+v", msgs.Messages)
	}
	var text string
	var call *store.Part
	for _, m := range msgs.Messages[1:] {
		if m.Status == store.StatusStreaming {
			t.Errorf("message %s still streaming after the restart", m.ID)
		}
		for i, p := range m.Parts {
			if p.Kind == store.PartText {
				text += p.Text
			}
			if p.Kind == store.PartToolCall && p.CallID == "call_slow" {
				call = &m.Parts[i]
			}
		}
	}
	if !strings.Contains(text, "Starting the slow job.") {
		t.Errorf("the streamed text was lost: %q", text)
	}
	if call == nil || call.Status == store.StatusRunning || call.Status == store.StatusPending {
		t.Errorf("the interrupted call is not sealed: %+v", call)
	}
	fin := s.waitEvent(ses.ID, 0, "turn.finished", `"interrupted"`)
	var view struct{ Running bool }
	s.call("GET", "/api/sessions/"+ses.ID, nil, 200, &view)
	if view.Running {
		t.Fatal("the session still runs a turn after the restart")
	}

	// The session goes on.
	s.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "are you there?"}, 202, nil)
	s.waitEvent(ses.ID, fin.Seq, "turn.finished", `"done"`)
	s.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	last := msgs.Messages[len(msgs.Messages)-1]
	if last.Role != store.RoleAssistant || !strings.Contains(last.Content+partsText(last), "Back again.") {
		t.Fatalf("last message after the new turn = %+v", last)
	}
	if err := s.kill(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
}

func partsText(m store.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
