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

	"github.com/jean2/jean2/internal/pgtest"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/store"
)

// served is a running `jean2 serve`.
type served struct {
	t     *testing.T
	cmd   *exec.Cmd
	base  string
	token string      // $JEAN2_HOME/token, which every request carries
	logs  *syncBuffer // stderr, written while the test reads it
	done  chan error
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
	s := &served{t: t, cmd: cmd, logs: &syncBuffer{}, done: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.logs.Write([]byte(line + "\n"))
			if m := listeningLine.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		s.kill(syscall.SIGKILL)
		// A killed serve leaves its workspaces' temporary tmpfs mounted (the next jean2 on
		// that home would sweep it): unmount it so the test's folder can be removed.
		unmountBelow(c.home)
	})
	select {
	case s.base = <-found:
	case err := <-s.done:
		t.Fatalf("jean2 serve exited before listening: %v\n%s", err, s.logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("jean2 serve did not listen within a minute:\n%s", s.logs)
	}
	tok, err := server.ReadTokenFile(c.home)
	if err != nil {
		t.Fatalf("jean2 serve listens, but its token: %v", err)
	}
	s.token = tok
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
	req.Header.Set("Authorization", "Bearer "+s.token)
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
	if health["status"] != "ok" || len(health) != 1 {
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

// jean2 serve on any address: the token file is made 0600 and every API call needs it;
// the printed one-time address signs a browser in; jean2 signin prints another; --new-token
// prints a token for another machine; Host names are checked (DNS rebinding).
func TestServeSignInAndTokens(t *testing.T) {
	c := newCLI(t)
	s := startServe(t, c, []string{"JEAN2_ALLOWED_HOSTS=box.example"}, "--host", "0.0.0.0", "--allowed-host", "jean2.lan,other.lan", "--new-token")
	fi, err := os.Stat(filepath.Join(c.home, server.TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if strings.Contains(s.logs.String(), s.token) {
		t.Errorf("jean2 serve printed the token of $JEAN2_HOME/token:\n%s", s.logs)
	}
	other := regexp.MustCompile(`jean2_[A-Za-z0-9_-]{20,}`).FindString(s.logs.String())
	if other == "" {
		t.Fatalf("--new-token printed no token:\n%s", s.logs)
	}
	signIn := regexp.MustCompile(`http://127\.0\.0\.1:\d+/auth\?code=\S+`).FindString(s.logs.String())
	if signIn == "" {
		t.Fatalf("no sign-in address printed:\n%s", s.logs)
	}
	base := strings.Replace(s.base, "0.0.0.0", "127.0.0.1", 1)
	get := func(url, host string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	port := base[strings.LastIndex(base, ":"):]
	for _, tc := range []struct {
		host, auth string
		want       int
	}{
		{"", "", 401}, {"", "Bearer " + s.token, 200}, {"", "Bearer " + other, 200}, {"", "Bearer jean2_wrong", 401},
		{"jean2.lan" + port, "Bearer " + s.token, 200}, {"other.lan" + port, "Bearer " + s.token, 200},
		{"box.example" + port, "Bearer " + s.token, 200}, {"rebind.example" + port, "Bearer " + s.token, 403},
	} {
		if resp := get(base+"/api/workspaces", tc.host, "Authorization", tc.auth); resp.StatusCode != tc.want {
			t.Errorf("Host %q, Authorization %q: %d, want %d", tc.host, tc.auth, resp.StatusCode, tc.want)
		}
	}
	signedIn := func(addr string) bool {
		t.Helper()
		resp := get(addr, "")
		for _, ck := range resp.Cookies() {
			if ck.Name == server.TokenCookie && resp.StatusCode == http.StatusSeeOther {
				return get(base+"/api/workspaces", "", "Cookie", ck.String()).StatusCode == 200
			}
		}
		return false
	}
	if !signedIn(signIn) {
		t.Errorf("the printed address %s did not sign in", signIn)
	}
	if signedIn(signIn) {
		t.Errorf("the printed address %s signed in twice", signIn)
	}
	// jean2 signin reads the token file and prints a new address.
	out, stderr, code := c.runWith([]string{"JEAN2_SERVER=" + base}, "signin")
	addr := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(addr, base+"/auth?code=") || !signedIn(addr) {
		t.Errorf("jean2 signin: exit %d, %q, %s", code, out, stderr)
	}
	// Without the token file, it says what is missing.
	_, stderr, code = c.runWith([]string{"JEAN2_SERVER=" + base, "JEAN2_HOME=" + t.TempDir()}, "signin")
	if code == 0 || !strings.Contains(stderr, "token") {
		t.Errorf("jean2 signin without a token: exit %d, %s", code, stderr)
	}
	// A restart keeps the token: a browser's cookie and jean2 chat go on working.
	s.kill(syscall.SIGTERM)
	again := startServe(t, c, nil)
	if again.token != s.token {
		t.Errorf("the token changed at a restart")
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
func TestServeCrashMidTurnLosesNothingAcknowledged(t *testing.T) { testServeCrashMidTurn(t, nil) }

// The same on PostgreSQL: what a killed server acknowledged is there after the restart, and
// the restarted server seals the interrupted turn.
func TestServeCrashMidTurnOnPostgres(t *testing.T) {
	testServeCrashMidTurn(t, []string{"JEAN2_DATABASE_URL=" + pgtest.URL(t)})
}

func testServeCrashMidTurn(t *testing.T, dbEnv []string) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "slow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(slowTool), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := providertest.NewOpenAI(t)
	env := append([]string{"OPENAI_BASE_URL=" + fake.BaseURL(), "OPENAI_API_KEY=sk-test", "OPENAI_MODEL=test-model"}, dbEnv...)
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

// jean2 serve with JEAN2_DATABASE_URL keeps everything on PostgreSQL (no jean2.db is made):
// a turn runs with the fake provider, and after a restart that finds the URL in
// config.json instead, the session and its messages are there. A URL that is not
// postgres:// and a server that does not answer stop the start with words that name the
// variable or the server, never the password.
func TestServeOnPostgres(t *testing.T) {
	c := newCLI(t)
	url := pgtest.URL(t)
	fake := providertest.NewOpenAI(t)
	env := []string{"OPENAI_BASE_URL=" + fake.BaseURL(), "OPENAI_API_KEY=sk-test", "OPENAI_MODEL=test-model"}
	fake.Push(providertest.OpenAIText("test-model", "Hello from the fake model."))

	s := startServe(t, c, append([]string{"JEAN2_DATABASE_URL=" + url}, env...))
	if !strings.Contains(s.logs.String(), "(PostgreSQL)") {
		t.Errorf("the database in use is not said:\n%s", s.logs)
	}
	var ws store.Workspace
	s.call("POST", "/api/workspaces", map[string]any{"path": c.ws}, 201, &ws)
	var ses struct{ ID string }
	s.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": "on postgres"}, 201, &ses)
	s.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "say hello"}, 202, nil)
	s.waitEvent(ses.ID, 0, "turn.finished", `"done"`)
	if err := s.kill(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
	if _, err := os.Stat(filepath.Join(c.home, "jean2.db")); err == nil {
		t.Fatal("jean2 serve made $JEAN2_HOME/jean2.db although JEAN2_DATABASE_URL was set")
	}

	// The same database named in config.json.
	cfg, _ := json.Marshal(map[string]string{"databaseURL": url})
	if err := os.WriteFile(filepath.Join(c.home, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, c, env)
	var msgs struct{ Messages []store.Message }
	s.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if len(msgs.Messages) != 2 || msgs.Messages[0].Content != "say hello" ||
		!strings.Contains(msgs.Messages[1].Content+partsText(msgs.Messages[1]), "Hello from the fake model.") {
		t.Fatalf("messages after the restart = %+v", msgs.Messages)
	}
	var list struct{ Sessions []store.Session }
	s.call("GET", "/api/workspaces/"+ws.ID+"/sessions", nil, 200, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Title != "on postgres" {
		t.Fatalf("sessions after the restart = %+v", list.Sessions)
	}
	if err := s.kill(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
	os.Remove(filepath.Join(c.home, "config.json"))

	_, stderr, code := c.runWith([]string{"JEAN2_DATABASE_URL=mysql://u:pw@db/x"}, "serve", "--port", "0")
	if code != 2 || !strings.Contains(stderr, "JEAN2_DATABASE_URL") || strings.Contains(stderr, ":pw@") {
		t.Fatalf("a URL that is not postgres://: exit %d, stderr %s", code, stderr)
	}
	_, stderr, code = c.runWith([]string{"JEAN2_DATABASE_URL=postgres://u:s3cretpw@127.0.0.1:1/x?connect_timeout=5"}, "serve", "--port", "0")
	if code == 0 || !strings.Contains(stderr, "127.0.0.1:1") || strings.Contains(stderr, "s3cretpw") {
		t.Fatalf("an unreachable server: exit %d, stderr %s", code, stderr)
	}
}
