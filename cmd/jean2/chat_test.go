package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/server"
)

// Tool folders of the chat tests: real Node workers.
const (
	// chatWriteTool writes a file through ctx.fs and shows the change as a diff.
	chatWriteTool = `export const definition = {
  name: 'write_file', description: 'Write text to a file in the workspace.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } }, required: ['path', 'text'] },
};
export async function execute(input, ctx) {
  const p = ctx.resolvePath(input.path);
  const old = (await ctx.fs.exists(p)) ? await ctx.fs.readFile(p, 'utf-8') : '';
  await ctx.fs.writeFile(p, input.text);
  const changes = [];
  old.split('\n').filter(Boolean).forEach((l, i) => changes.push({ type: 'removed', content: l, oldLineNumber: i + 1 }));
  input.text.split('\n').filter(Boolean).forEach((l, i) => changes.push({ type: 'added', content: l, newLineNumber: i + 1 }));
  const removed = changes.filter(c => c.type === 'removed').length, added = changes.length - removed;
  return { success: true, result: { wrote: input.path },
    visualization: { type: 'diff', path: input.path, additions: added, deletions: removed,
      hunks: [{ oldStart: 1, oldLines: removed, newStart: 1, newLines: added, changes }] } };
}
`
	// chatChooseTool asks which environment and for permission to deploy there.
	chatChooseTool = `export const definition = {
  name: 'deploy', description: 'Deploy after asking where.',
  inputSchema: { type: 'object', properties: {} },
};
export async function execute(input, ctx) {
  const env = await ctx.ask({ type: 'single_select', target: 'human', question: 'Deploy where?',
    options: [{ label: 'Staging', value: 'staging' }, { label: 'Production', value: 'prod' }] });
  const ok = await ctx.ask({ type: 'permission', question: 'Deploy to ' + env + ' now?', risk: 'high', resource: 'deploy' });
  return { success: true, result: { env, ok },
    visualization: { type: 'table', columns: [{ key: 'env', label: 'Environment' }, { key: 'ok', label: 'Allowed' }], rows: [{ env, ok }] } };
}
`
	// chatSurveyTool asks one of each kind a person answers, and shows the answers.
	chatSurveyTool = `export const definition = {
  name: 'survey', description: 'Ask several questions.',
  inputSchema: { type: 'object', properties: {} },
};
export async function execute(input, ctx) {
  const langs = await ctx.ask({ type: 'multi_select', target: 'human', question: 'Which languages?', min: 1, max: 2,
    options: [{ label: 'Go', value: 'go' }, { label: 'Rust', value: 'rust' }, { label: 'Zig', value: 'zig' }] });
  const name = await ctx.ask({ type: 'text', target: 'human', question: 'Project name?', defaultValue: 'jean' });
  const sure = await ctx.ask({ type: 'confirm', target: 'human', question: 'Start now?' });
  const form = await ctx.ask({ type: 'form', target: 'human', question: 'Details', questions: [
    { type: 'text', question: 'Owner?' }, { type: 'confirm', question: 'Public?' }] });
  const data = { langs, name, sure, form };
  return { success: true, result: data, visualization: { type: 'structured-response', formatName: 'Survey', data } };
}
`
	// chatWaitTool runs until the turn is stopped.
	chatWaitTool = `export const definition = {
  name: 'wait_forever', description: 'Wait until stopped.',
  inputSchema: { type: 'object', properties: {} },
};
export async function execute(input, ctx) {
  ctx.progress({ message: 'waiting for Stop' });
  await new Promise((resolve) => {
    const t = setTimeout(resolve, 120000);
    ctx.abortSignal.addEventListener('abort', () => { clearTimeout(t); resolve(); });
  });
  return { success: false, error: 'stopped while waiting' };
}
`
)

// chatEnv is a jean2 home with the chat's test tools, a workspace folder and a fake OpenAI
// server the jean2 processes are pointed at.
type chatEnv struct {
	t    *testing.T
	home string
	ws   string
	fake *providertest.Server
}

func newChatEnv(t *testing.T) *chatEnv {
	t.Helper()
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("node is not installed at /usr/bin/node")
	}
	root := t.TempDir()
	c := &chatEnv{t: t, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws")}
	for name, src := range map[string]string{"write-file": chatWriteTool, "deploy": chatChooseTool, "survey": chatSurveyTool, "wait-forever": chatWaitTool} {
		dir := filepath.Join(c.home, "tools", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(c.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	c.fake = providertest.NewOpenAI(t)
	c.fake.Key = "sk-chat-test-0123456789"
	return c
}

func (c *chatEnv) env(extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "JEAN2_HOME=" + c.home, "JEAN2_LOG=error",
		"JEAN2_NODE=/usr/bin/node", "JEAN2_RUNTIME=node",
		"OPENAI_API_KEY=" + c.fake.Key, "OPENAI_BASE_URL=" + c.fake.BaseURL(), "OPENAI_MODEL=test-model",
		"TERM=xterm-256color",
	}, extra...)
}

// serve starts `jean2 serve --port 0` and returns its URL; it is stopped when the test ends.
func (c *chatEnv) serve() string {
	c.t.Helper()
	u, _ := c.serveOn("0")
	return u
}

// serveOn starts `jean2 serve --port PORT` and returns its URL and a stop that waits for it
// to end (called when the test ends too).
func (c *chatEnv) serveOn(port string) (string, func()) {
	c.t.Helper()
	cmd := exec.Command(jean2Bin, "serve", "--port", port)
	cmd.Env = c.env()
	cmd.Dir = c.ws
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	found := make(chan string, 1)
	var log syncBuffer
	go func() {
		re := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	c.t.Cleanup(stop)
	select {
	case u := <-found:
		// Sessions are not named by the model here: the tests script every model request
		// (TestChatSessionNamed turns it back on).
		c.setAutoTitle(u, false)
		return u, stop
	case <-time.After(60 * time.Second):
		c.t.Fatalf("jean2 serve did not start; its output:\n%s", log.String())
		return "", stop
	}
}

// setAutoTitle turns the naming of sessions by the model on or off on the server at base.
func (c *chatEnv) setAutoTitle(base string, on bool) {
	c.t.Helper()
	c.patchSettings(base, fmt.Sprintf(`{"autoTitle":%v}`, on))
}

// patchSettings sends PATCH /api/settings with the JSON body to the server at base.
func (c *chatEnv) patchSettings(base, body string) {
	c.t.Helper()
	req, _ := http.NewRequest("PATCH", base+"/api/settings", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		c.t.Fatalf("PATCH /api/settings: %d", resp.StatusCode)
	}
}

// ptyChat is `jean2 chat` on a pseudo-terminal, as a person would run it.
type ptyChat struct {
	t      *testing.T
	cmd    *exec.Cmd
	pty    *os.File
	screen *syncBuffer
	mark   int // waitFor looks at the screen after this offset
	done   chan error
}

func (c *chatEnv) chat(extraEnv []string, args ...string) *ptyChat {
	c.t.Helper()
	cmd := exec.Command(jean2Bin, append([]string{"chat"}, args...)...)
	cmd.Env = c.env(extraEnv...)
	cmd.Dir = c.ws
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 160})
	if err != nil {
		c.t.Fatal(err)
	}
	p := &ptyChat{t: c.t, cmd: cmd, pty: f, screen: &syncBuffer{}, done: make(chan error, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(p.screen, f)
	}()
	go func() {
		err := cmd.Wait()
		<-copied
		p.done <- err
	}()
	c.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		f.Close()
	})
	return p
}

// waitFor waits until s appears on the screen after the last thing waited for.
func (p *ptyChat) waitFor(s string) {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		screen := p.screen.String()
		if i := strings.Index(screen[p.mark:], s); i >= 0 {
			p.mark += i + len(s)
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %q; the screen after what was seen already:\n%s", s, screen[p.mark:])
		}
		select {
		case err := <-p.done:
			p.done <- err
			if !strings.Contains(p.screen.String()[p.mark:], s) {
				p.t.Fatalf("jean2 chat ended (%v) before %q appeared; the screen:\n%s", err, s, p.screen.String())
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (p *ptyChat) send(line string) {
	p.t.Helper()
	if _, err := p.pty.Write([]byte(line + "\r")); err != nil {
		p.t.Fatal(err)
	}
}

// interrupt presses Ctrl-C.
func (p *ptyChat) interrupt() {
	p.t.Helper()
	if _, err := p.pty.Write([]byte{3}); err != nil {
		p.t.Fatal(err)
	}
}

func (p *ptyChat) wait() error {
	p.t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(30 * time.Second):
		p.t.Fatalf("jean2 chat did not end; the screen:\n%s", p.screen.String())
		return nil
	}
}

// A whole turn against a real server: the answer streams in, the tool call is drawn with
// its diff, the turn ends with "Changed 1 file"; the next turn is a second message; /quit
// leaves.
func TestChatTurnWithToolCallDrawn(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.fake.Push(
		providertest.NewOpenAIStream("test-model").Text("I will write ").Text("the note.").
			ToolCall(0, "call_1", "write_file", "").ToolArgs(0, `{"path":"note.txt",`).ToolArgs(0, `"text":"hello\nworld\n"}`).
			Finish("tool_calls").Usage(10, 5).Done().Reply(),
		providertest.OpenAIText("test-model", "Done: note.txt ", "is written."),
		providertest.OpenAIText("test-model", "You are welcome."),
	)
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base)
	p.waitFor("jean2 chat")
	p.waitFor("> ")
	p.send("write a note")
	p.waitFor("I will write the note.")
	p.waitFor("⏺ write_file")
	p.waitFor(`{"path":"note.txt","text":"hello\nworld\n"}`)
	p.waitFor("✓")
	p.waitFor("note.txt  +2 -0")
	p.waitFor("@@ -1,0 +1,2 @@")
	p.waitFor("  1 +hello")
	p.waitFor("  2 +world")
	p.waitFor("Done: note.txt is written.")
	p.waitFor("── done · Changed 1 file")
	if data, err := os.ReadFile(filepath.Join(c.ws, "note.txt")); err != nil || string(data) != "hello\nworld\n" {
		t.Fatalf("note.txt = %q, %v", data, err)
	}
	p.send("thanks")
	p.waitFor("You are welcome.")
	p.waitFor("── done")
	p.send("/quit")
	p.waitFor("jean2 chat --session ")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v; the screen:\n%s", err, p.screen.String())
	}
	if os.Getenv("JEAN2_SHOW_SCREEN") != "" {
		t.Logf("the screen:\n%s", p.screen.String())
	}
	if strings.Contains(p.screen.String(), "\x1b[") {
		t.Errorf("colours with NO_COLOR set:\n%q", p.screen.String())
	}

	// The model saw the tool's result, not its visualization.
	reqs := c.fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if body := string(reqs[1].Body); !strings.Contains(body, "wrote") || strings.Contains(body, `\"hunks\"`) { // the key inside the tool message's JSON text ("chunks" is in a built-in's description)
		t.Errorf("the second request should hold the result without the visualization: %s", body)
	}

	// Going on with the session shows what was said before.
	sid := regexp.MustCompile(`jean2 chat --session (\S+)`).FindStringSubmatch(p.screen.String())[1]
	again := c.chat([]string{"NO_COLOR=1"}, "--server", base, "--session", strings.TrimRight(sid, "\r\n"))
	again.waitFor("> write a note")
	again.waitFor("⏺ write_file")
	again.waitFor("You are welcome.")
	again.waitFor("earlier in this session")
	again.send("/quit")
	if err := again.wait(); err != nil {
		t.Fatalf("resumed chat exited with %v", err)
	}
}

// A tool's asks are answered inline: a select, a permission for the session, a multi
// select, a text with a default, a form; a question answered from another client meanwhile
// is withdrawn from the terminal.
func TestChatAnswersAsksInline(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.fake.Push(
		providertest.NewOpenAIStream("test-model").ToolCall(0, "call_d", "deploy", `{}`).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("test-model", "Deployed."),
		providertest.NewOpenAIStream("test-model").ToolCall(0, "call_s", "survey", `{}`).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("test-model", "Thanks for answering."),
	)
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base, "--workspace", c.ws)
	p.waitFor("> ")
	sid := regexp.MustCompile(`session (ses_\w+)`).FindStringSubmatch(p.screen.String())[1]
	p.send("deploy it")
	p.waitFor("[tool deploy asks]")
	p.waitFor("Deploy where?")
	p.waitFor("Choose one")
	p.send("9") // not an option: asked again
	p.waitFor("not an option")
	p.send("2")
	p.waitFor("Permission requested: Deploy to prod now?")
	p.waitFor("Risk: high")
	p.waitFor("Choose 1-4")
	p.send("2") // allow for the session
	p.waitFor("Allowed (session)")
	p.waitFor("Environment  Allowed")
	p.waitFor("prod         true")
	p.waitFor("Deployed.")
	p.waitFor("── done")

	p.send("survey me")
	p.waitFor("Which languages?")
	p.waitFor("choose 1 to 2")
	p.send("1, Zig")
	p.waitFor("Project name?")
	p.waitFor("[jean]")
	p.send("") // the default
	p.waitFor("Start now? [y/n]")
	// Another client answers this one: the terminal's question is withdrawn.
	var asks struct {
		Asks []struct {
			ID string `json:"id"`
		} `json:"asks"`
	}
	getJSON(t, c.token(), base+"/api/sessions/"+sid+"/asks", &asks)
	if len(asks.Asks) != 1 {
		t.Fatalf("pending asks %+v", asks.Asks)
	}
	req, _ := http.NewRequest("POST", base+"/api/sessions/"+sid+"/asks/"+asks.Asks[0].ID, strings.NewReader(`{"answer":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("answering from another client: %d", resp.StatusCode)
	}
	p.waitFor("question withdrawn")
	p.waitFor("answered in another client")
	p.waitFor("Form: Details")
	p.waitFor("(1/2) Owner?")
	p.send("ann")
	p.waitFor("(2/2) Public? [y/n]")
	p.send("n")
	p.waitFor("Survey")
	for _, want := range []string{`"go",`, `"zig"`, `"name": "jean"`, `"sure": true`, `"answer": "ann"`, `"answer": false`} {
		p.waitFor(want)
	}
	p.waitFor("Thanks for answering.")
	p.waitFor("── done")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
	if os.Getenv("JEAN2_SHOW_SCREEN") != "" {
		t.Logf("the screen:\n%s", p.screen.String())
	}
	// The grant was remembered for the session by the server.
	var grants struct {
		Grants []struct {
			Tool     string `json:"tool"`
			Duration string `json:"duration"`
		} `json:"grants"`
	}
	getJSON(t, c.token(), base+"/api/grants", &grants)
	if len(grants.Grants) != 1 || grants.Grants[0].Tool != "deploy" || grants.Grants[0].Duration != "session" {
		t.Fatalf("grants %+v", grants.Grants)
	}
}

// token is the API token the chat's server wrote to its home.
func (c *chatEnv) token() string {
	c.t.Helper()
	tok, err := server.ReadTokenFile(c.home)
	if err != nil {
		c.t.Fatal(err)
	}
	return tok
}

func getJSON(t *testing.T, token, u string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, data)
	}
}

// Ctrl-C stops a running turn (the tool in flight sees its abort signal); a second Ctrl-C
// within 2 seconds leaves. With no server at the default address, the chat starts its own.
func TestChatCtrlCStopsTheTurnThenLeaves(t *testing.T) {
	c := newChatEnv(t)
	c.fake.Push(
		providertest.NewOpenAIStream("test-model").Text("Waiting.").ToolCall(0, "call_w", "wait_forever", `{}`).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("test-model", "Answering the queued line."),
	)
	// Nothing listens on port 1: the chat starts a server of its own.
	p := c.chat([]string{"NO_COLOR=1", "JEAN2_SERVER=http://127.0.0.1:1"})
	p.waitFor("started one here at http://127.0.0.1:")
	p.waitFor("> ")
	p.send("wait")
	p.waitFor("⏺ wait_forever")
	p.waitFor("waiting for Stop")
	p.send("and then this")
	p.waitFor("(queued: sent when this turn ends)")
	p.interrupt()
	p.waitFor("Stopping the turn…")
	// A stopped call reads as stopped, not as a failure.
	p.waitFor("■ stopped")
	p.waitFor("── stopped")
	if strings.Contains(p.screen.String(), "✗ ") || strings.Contains(p.screen.String(), "The model failed") {
		t.Errorf("the stopped turn reads as a failure:\n%s", p.screen.String())
	}
	// The line typed during the turn goes out as the next message.
	p.waitFor("> and then this")
	p.waitFor("Answering the queued line.")
	p.waitFor("── done")
	time.Sleep(2*time.Second + 100*time.Millisecond) // past the chat's 2 s: a Ctrl-C now is a first one again
	p.interrupt()
	p.waitFor("Ctrl-C again within 2 s leaves the chat")
	p.interrupt()
	p.waitFor("Bye.")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v; the screen:\n%s", err, p.screen.String())
	}
}

// /restore lists the turns with "Changed N files", shows what would change, refuses silently
// to force past a file changed outside jean2 until told to, and puts the files back.
func TestChatRestore(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	if err := os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTurn := func(id, path, text string) providertest.Reply {
		args, _ := json.Marshal(map[string]string{"path": path, "text": text})
		return providertest.NewOpenAIStream("test-model").ToolCall(0, id, "write_file", string(args)).Finish("tool_calls").Done().Reply()
	}
	c.fake.Push(
		writeTurn("call_1", "a.txt", "first change\n"), providertest.OpenAIText("test-model", "Changed a."),
		writeTurn("call_2", "b.txt", "new file\n"), providertest.OpenAIText("test-model", "Made b."),
	)
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base)
	p.waitFor("> ")
	p.send("change a")
	p.waitFor("── done · Changed 1 file")
	p.send("make b")
	p.waitFor("── done · Changed 1 file")

	// Someone edits b.txt outside jean2.
	if err := os.WriteFile(filepath.Join(c.ws, "b.txt"), []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.send("/restore")
	p.waitFor("Turns that changed files:")
	p.waitFor(`1) `)
	p.waitFor(`"change a"  Changed 1 file`)
	p.waitFor(`2) `)
	p.waitFor(`"make b"  Changed 1 file`)
	p.waitFor("before which turn?")
	p.send("1")
	p.waitFor("This undoes turn 1 and every later turn:")
	p.waitFor("restore      a.txt")
	p.waitFor("remove       b.txt")
	p.waitFor("conflict     b.txt — ")
	p.waitFor("changed outside jean2 since; restoring puts them back all the same")
	p.waitFor("Restore anyway? [y/N]")
	p.send("n")
	p.waitFor("(nothing was restored)")
	if data, _ := os.ReadFile(filepath.Join(c.ws, "a.txt")); string(data) != "first change\n" {
		t.Fatalf("a.txt changed by a refused restore: %q", data)
	}

	p.send("/restore")
	p.waitFor("before which turn?")
	p.send("1")
	p.waitFor("Restore anyway? [y/N]")
	p.send("y")
	p.waitFor("Restored.")
	p.waitFor("restored     a.txt")
	p.waitFor("removed      b.txt")
	p.waitFor("overwritten  b.txt")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
	if os.Getenv("JEAN2_SHOW_SCREEN") != "" {
		t.Logf("the screen:\n%s", p.screen.String())
	}
	if data, err := os.ReadFile(filepath.Join(c.ws, "a.txt")); err != nil || string(data) != "original\n" {
		t.Fatalf("a.txt after the restore = %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(c.ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt, made by turn 2, is still there: %v", err)
	}
}

// The chat colours its output on a terminal only, and never with NO_COLOR or TERM=dumb.
func TestChatColor(t *testing.T) {
	e := env{getenv: func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }}
	if chatColor(e, true) {
		t.Error("NO_COLOR did not turn colour off")
	}
	e.getenv = func(k string) string { return map[string]string{"TERM": "dumb"}[k] }
	if chatColor(e, true) {
		t.Error("TERM=dumb did not turn colour off")
	}
	e.getenv = func(string) string { return "" }
	if !chatColor(e, true) || chatColor(e, false) {
		t.Error("colour should be on for a terminal only")
	}
}

// A question whose call ends (the turn stopped from another client) is withdrawn from the
// terminal, and the server holds no pending ask for it (issue 24, point 4).
func TestChatWithdrawsAQuestionWhenItsCallEnds(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_s", "survey", `{}`).Finish("tool_calls").Done().Reply())
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base, "--workspace", c.ws)
	p.waitFor("> ")
	sid := regexp.MustCompile(`session (ses_\w+)`).FindStringSubmatch(p.screen.String())[1]
	p.send("survey me")
	p.waitFor("Which languages?")
	req, _ := http.NewRequest("POST", base+"/api/sessions/"+sid+"/stop", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("stop from another client: %d", resp.StatusCode)
	}
	p.waitFor("question withdrawn")
	p.waitFor("the call no longer waits for it")
	var asks struct {
		Asks []json.RawMessage `json:"asks"`
	}
	getJSON(t, c.token(), base+"/api/sessions/"+sid+"/asks", &asks)
	if len(asks.Asks) != 0 {
		t.Fatalf("asks still pending after the stop: %s", asks.Asks)
	}
}
