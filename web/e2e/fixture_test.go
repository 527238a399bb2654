// Package e2e_test drives jean2's web client in a real headless Chromium against a real
// server (package server: SQLite, Node tool workers, the hub, the harness, undo) with the
// fake OpenAI model server of provider/providertest.
package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/web"
	"github.com/jean2/jean2/web/internal/browsertest"
)

// Tools the tests write as real folders, run by real Node workers.
const (
	// showTool returns the visualization of the type it is asked for; every one carries a
	// key text the test looks for on the page.
	showTool = `export const definition = {
  name: 'show', description: 'Draw a visualization of the given type.',
  inputSchema: { type: 'object', properties: { type: { type: 'string' } }, required: ['type'] },
};
const hunk = (oldText, newText) => ({ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, changes: [
  { type: 'removed', content: oldText, oldLineNumber: 1 }, { type: 'added', content: newText, newLineNumber: 1 }] });
const vizs = {
  diff: { type: 'diff', path: 'src/diffKey.ts', hunks: [hunk('const diffKeyOld = 1;', 'const diffKeyNew = 2;')], additions: 1, deletions: 1 },
  diffs: { type: 'diffs', items: [
    { type: 'diff', path: 'diffsKeyOne.txt', hunks: [hunk('a', 'b')], additions: 1, deletions: 1 },
    { type: 'diff', path: 'diffsKeyTwo.txt', hunks: [hunk('c', 'd')], additions: 1, deletions: 1 }] },
  code: { type: 'code', path: 'codeKey.go', content: 'func codeKeyFunction() {}\n', language: 'go', created: true },
  'file-list': { type: 'file-list', files: [{ path: 'fileListKey.txt', action: 'created' }], total: 1 },
  table: { type: 'table', columns: [{ key: 'name', label: 'Name' }], rows: [{ name: 'tableKeyCell' }] },
  markdown: { type: 'markdown', content: '## markdownKeyHeading\n\nsome *text*' },
  'shell-output': { type: 'shell-output', command: 'echo shellKey', stdout: 'shellKeyStdout', exitCode: 3 },
  'todo-list': { type: 'todo-list', items: [{ content: 'todoKeyItem', status: 'in_progress', priority: 'high' }] },
  'structured-response': { type: 'structured-response', formatName: 'KeyFormat', data: { structuredKey: 'structuredKeyValue' } },
  none: { type: 'none', message: 'noneKeyMessage' },
  'diff-comments': { type: 'diff', path: 'src/calc.py', additions: 2, deletions: 1, hunks: [{ oldStart: 1, oldLines: 2, newStart: 1, newLines: 3, changes: [
    { type: 'context', content: '# add two numbers', oldLineNumber: 1, newLineNumber: 1 },
    { type: 'removed', content: 'return a - b  # wrong', oldLineNumber: 2 },
    { type: 'added', content: 'return a + b  # fixed: it adds', newLineNumber: 2 },
    { type: 'added', content: '// a comment in another language', newLineNumber: 3 }] }] },
  'long-shell': { type: 'shell-output', command: 'for i in $(seq 1 200); do echo "line $i of the long output"; done # ' + 'a very long command '.repeat(20) + 'longShellCommandEnd',
    stdout: Array.from({ length: 200 }, (_, i) => 'line ' + (i + 1) + ' of the long output').join('\n'), exitCode: 0 },
  'empty-header': { type: 'table', columns: [{ key: 'n', label: '' }, { key: 'v', label: 'Value' }], rows: [{ n: 1, v: 'one' }] },
  'wide-structured': { type: 'structured-response', formatName: 'Wide', data: { rows: [
    { id: 1, name: 'averyveryverylongnamethatdoesnotbreak', path: '/a/very/long/path/that/keeps/going/and/going/and/going', owner: { name: 'Ada', team: 'core' }, note: 'more text in a wide column' },
    { id: 2, name: 'anotherquitelongnamewithoutspaces', path: '/another/long/path/that/keeps/going/and/going', owner: { name: 'Bob', team: 'web' }, note: 'and another wide cell' }] } },
};
export async function execute(input) {
  return { success: true, result: { shown: input.type }, visualization: vizs[input.type] };
}
`
	// writeNoteTool writes a file through ctx.fs, so the turn changes a file.
	writeNoteTool = `export const definition = {
  name: 'write_note', description: 'Write text to a file in the workspace.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } }, required: ['path', 'text'] },
};
export async function execute(input, ctx) {
  await ctx.fs.writeFile(ctx.resolvePath(input.path), input.text);
  return { success: true, result: { wrote: input.path } };
}
`
	// slowNoteTool writes a file, then waits waitMs, or until the file untilPath exists (the
	// test makes it when it has seen what it waited for; a minute at most), so a turn runs
	// as long as a test needs to act while it runs, however slow the machine.
	slowNoteTool = `export const definition = {
  name: 'slow_note', description: 'Write a file, then wait.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' }, waitMs: { type: 'number' }, untilPath: { type: 'string' } }, required: ['path', 'text'] },
};
export async function execute(input, ctx) {
  await ctx.fs.writeFile(ctx.resolvePath(input.path), input.text);
  if (input.untilPath) {
    const gate = ctx.resolvePath(input.untilPath);
    for (let i = 0; i < 1200 && !(await ctx.fs.exists(gate)); i++) await new Promise((r) => setTimeout(r, 50));
  } else {
    await new Promise((r) => setTimeout(r, input.waitMs || 0));
  }
  return { success: true, result: { wrote: input.path } };
}
`
	// widenTool adds a folder to the workspace, then takes it away again when asked to.
	widenTool = `export const definition = {
  name: 'widen', description: 'Allow or disallow a folder.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, remove: { type: 'boolean' } }, required: ['path'] },
};
export async function execute(input, ctx) {
  if (input.remove) await ctx.removeWorkspacePath(input.path);
  else await ctx.addWorkspacePath(input.path);
  return { success: true, result: { allowed: ctx.allowedPaths } };
}
`
	// askTool reports progress, asks whatever ask it is given and returns the answer.
	askTool = `export const definition = {
  name: 'ask_it', description: 'Ask the user.',
  inputSchema: { type: 'object', properties: { ask: { type: 'object' } }, required: ['ask'] },
};
export async function execute(input, ctx) {
  if (ctx.progress) ctx.progress({ message: 'waiting for you', current: 1, total: 2 });
  const answer = await ctx.ask(input.ask);
  return { success: true, result: { answer } };
}
`
	// refuseTool fails the way a built-in does when the person refuses it: with the code
	// USER_REJECTION, alone or before the reason.
	refuseTool = `export const definition = {
  name: 'refuse', description: 'Fail as refused.',
  inputSchema: { type: 'object', properties: { why: { type: 'string' } } },
};
export async function execute(input) {
  return { success: false, error: 'USER_REJECTION' + (input.why ? ': ' + input.why : '') };
}
`
	// greetTool has a schema with several field kinds for the Run form, and declares one
	// variable that is set and one that is not.
	greetTool = `export const definition = {
  name: 'greet', description: 'Greet someone.',
  env: ['GREET_STYLE', 'GREET_MISSING'],
  inputSchema: { type: 'object', required: ['name'], properties: {
    name: { type: 'string', description: 'who to greet' },
    times: { type: 'integer', minimum: 1 },
    loud: { type: 'boolean' },
    mood: { type: 'string', enum: ['warm', 'cool'] } } },
};
export async function execute(input, ctx) {
  const text = ('Hello, ' + input.name + '! ').repeat(input.times || 1) + '(' + (input.mood || 'plain') + (input.loud ? ', loud' : '') + ')';
  return { success: true, result: { text }, visualization: { type: 'markdown', content: text } };
}
`
)

// fixture is a jean2 server on a temporary home with a workspace folder, the fake model
// server and the tool folders above, plus a headless Chromium.
type fixture struct {
	t    *testing.T
	home string
	ws   string
	fake *providertest.Server
	srv  *server.Server
	ts   *httptest.Server
	b    *browsertest.Browser
	// signedIn is whether the browser has the server's cookie; open signs it in first.
	signedIn bool
	seen     seenRequests
	// otherSite is set by a test that opens a page of another origin on purpose.
	otherSite bool
}

// seenRequest is a request the server answered: what the browser sent and the status.
type seenRequest struct {
	Path, SecFetchSite, Origin string
	Cookie                     bool // it carried the sign-in cookie
	Status                     int
}

// seenRequests records what reached the server, so a test can tell what the browser sent
// (a page's script sees only what the browser lets it).
type seenRequests struct {
	mu      sync.Mutex
	list    []seenRequest
	arrived []string                 // paths in the order their requests arrived
	holds   map[string]chan struct{} // path → closed when its requests may be answered
}

func (s *seenRequests) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.arrived = append(s.arrived, r.URL.Path)
		held := s.holds[r.URL.Path]
		s.mu.Unlock()
		if held != nil {
			select {
			case <-held:
			case <-r.Context().Done():
			}
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		_, err := r.Cookie(server.TokenCookie)
		s.mu.Lock()
		s.list = append(s.list, seenRequest{Path: r.URL.Path, SecFetchSite: r.Header.Get("Sec-Fetch-Site"), Origin: r.Header.Get("Origin"), Cookie: err == nil, Status: rec.status})
		s.mu.Unlock()
	})
}

// hold keeps the requests for path unanswered until release is called (at the latest
// when the test ends): a test can change the page while it loads.
func (s *seenRequests) hold(t *testing.T, path string) (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	if s.holds == nil {
		s.holds = map[string]chan struct{}{}
	}
	s.holds[path] = ch
	s.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.holds, path)
			s.mu.Unlock()
			close(ch)
		})
	}
	t.Cleanup(release)
	return release
}

// hasArrived reports whether a request for path has reached the server.
func (s *seenRequests) hasArrived(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.arrived, path)
}

func (s *seenRequests) get() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.list...)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets the WebSocket upgrade reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func newFixture(t *testing.T) *fixture { t.Helper(); return newFixtureAt(t, nil, nil) }

// newFixtureWith is newFixture with the server's config changed by edit first.
func newFixtureWith(t *testing.T, edit func(f *fixture, cfg *server.Config)) *fixture {
	t.Helper()
	return newFixtureAt(t, nil, edit)
}

// newFixtureEnv is newFixture with the server's environment replaced by env (nil: the fake
// provider's OPENAI_* variables), e.g. none to start without a provider.
func newFixtureEnv(t *testing.T, env map[string]string) *fixture {
	t.Helper()
	return newFixtureAt(t, env, nil)
}

func newFixtureAt(t *testing.T, env map[string]string, edit func(f *fixture, cfg *server.Config)) *fixture {
	t.Helper()
	b := browsertest.New(t) // skips before any other set-up when Chromium is missing
	slowPage(t, b)
	root := t.TempDir()
	f := &fixture{t: t, home: filepath.Join(root, "home"), ws: filepath.Join(root, "project"), b: b}
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	f.fake = providertest.NewOpenAI(t)
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return f.home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	// "broken" does not load: the tools page lists it with its error.
	for folder, src := range map[string]string{"show": showTool, "write-note": writeNoteTool, "ask-it": askTool, "greet": greetTool, "widen": widenTool, "slow-note": slowNoteTool, "refuse": refuseTool, "broken": "export const definition = {;\n"} {
		f.writeTool(layout.Tools, folder, src)
	}
	if env == nil {
		env = map[string]string{"OPENAI_API_KEY": f.fake.Key, "OPENAI_BASE_URL": f.fake.BaseURL(), "OPENAI_MODEL": "test-model"}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg := server.Config{
		Host: host.Options{
			Layout: layout, RuntimePreference: "node", NodePath: "/usr/bin/node",
			ServerEnv:   []string{"PATH=/usr/bin:/bin", "GREET_STYLE=formal"},
			IdleTimeout: time.Minute, KillGrace: 300 * time.Millisecond,
		},
		Getenv:          func(k string) string { return env[k] },
		ProviderOptions: &provider.Options{Retry: provider.Retry{MaxAttempts: 1}},
		MCPWorkspace:    f.ws,
		UserHome:        root, // a workspace on it gets the home folder's warning
		Web:             web.Handler(),
		Watch:           &host.WatchOptions{},
		Version:         "e2e",
		Logger:          logger,
	}
	if edit != nil {
		edit(f, &cfg)
	}
	f.srv, err = server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(f.seen.wrap(f.srv.Handler()))
	// The tests script every model request: sessions are not named by the model here
	// (TestSessionNamedInTheMenu turns it back on).
	if code := f.api("PATCH", "/api/settings", map[string]any{"autoTitle": false}, nil); code != 200 {
		t.Fatalf("turn autoTitle off: %d", code)
	}
	t.Cleanup(func() {
		if v := f.cspViolations(); v != "" {
			t.Errorf("the Content-Security-Policy blocked: %s", v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := f.srv.Close(ctx); err != nil {
			t.Errorf("close server: %v", err)
		}
		f.ts.Close()
		if errs := f.b.Errors(); len(errs) > 0 {
			t.Errorf("script errors on the page: %s", strings.Join(errs, "\n"))
		}
		if err := f.b.CheckLocal(f.ts.URL); err != nil && !f.otherSite {
			t.Error(err)
		}
	})
	return f
}

func (f *fixture) writeTool(toolsDir, folder, src string) {
	f.t.Helper()
	dir := filepath.Join(toolsDir, folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// api calls the server directly (setting up, or checking what the page did).
func (f *fixture) api(method, path string, body any, out any) int {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+f.srv.Token())
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			f.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

type apiSession struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspaceId"`
	Title       string `json:"title"`
}

// session makes a workspace on the fixture's folder (once) and a session in it.
func (f *fixture) session(title string) apiSession {
	f.t.Helper()
	var list struct {
		Workspaces []struct{ ID, Path string }
	}
	f.api("GET", "/api/workspaces", nil, &list)
	wsID := ""
	for _, w := range list.Workspaces {
		if w.Path == f.ws {
			wsID = w.ID
		}
	}
	if wsID == "" {
		var w struct{ ID string }
		if code := f.api("POST", "/api/workspaces", map[string]any{"path": f.ws}, &w); code != 201 {
			f.t.Fatalf("create workspace: status %d", code)
		}
		wsID = w.ID
	}
	var s apiSession
	if code := f.api("POST", "/api/workspaces/"+wsID+"/sessions", map[string]any{"title": title}, &s); code != 201 {
		f.t.Fatalf("create session: status %d", code)
	}
	return s
}

// signIn opens a one-time sign-in address in the browser, as a person does with the one
// jean2 serve prints: the server sets its cookie and sends the browser to the client.
func (f *fixture) signIn() {
	f.t.Helper()
	addr, err := f.srv.SignInURL(f.ts.URL)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.b.Do(30*time.Second, chromedp.Navigate(addr)); err != nil {
		f.t.Fatal(err)
	}
	f.waitJS("the app after signing in", `document.querySelector(".topbar") !== null`)
	f.signedIn = true
}

// open navigates to a client route and waits for the app to draw, signing the browser in
// first.
func (f *fixture) open(route string) {
	f.t.Helper()
	if !f.signedIn {
		f.signIn()
	}
	if err := f.b.Do(30*time.Second, chromedp.Navigate(f.ts.URL+"/"+route)); err != nil {
		f.t.Fatal(err)
	}
	f.waitJS("the app's frame", `document.querySelector("#main") !== null`)
	if strings.HasPrefix(route, "#/s/") {
		// Opened: drawn at the latest message and followed live (what a person sees settle
		// before acting; a test acting earlier races the opening).
		f.waitJS("the session opened", `document.querySelector(".session-view") !== null && !document.querySelector(".session-view").hasAttribute("aria-busy")`)
	}
	// Record what the Content-Security-Policy blocks from now on: the client must need nothing
	// it forbids (no inline script or style markup, nothing from another host).
	f.eval(`(() => { if (!window.__cspWatch) { window.__cspWatch = true; window.__csp = []; document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline"))); } return ""; })()`)
}

// cspViolations returns what the page's policy blocked since the last open.
func (f *fixture) cspViolations() string {
	f.t.Helper()
	v, err := browsertest.Eval[string](f.b, 5*time.Second, `(window.__csp || []).join("; ")`)
	if err != nil {
		return ""
	}
	return v
}

// waitJS waits until a script expression is true in the page; on failure it reports what
// the page shows.
func (f *fixture) waitJS(what, expr string) {
	f.t.Helper()
	script := fmt.Sprintf(`new Promise((resolve) => {
  const t0 = Date.now();
  const check = () => {
    let ok = false;
    try { ok = !!(%s); } catch (e) {}
    if (ok) return resolve(true);
    if (Date.now() - t0 > 60000) return resolve(false);
    setTimeout(check, 50);
  };
  check();
})`, expr)
	ok, err := browsertest.Eval[bool](f.b, 75*time.Second, script)
	if err != nil {
		f.t.Fatalf("waiting for %s: %v", what, err)
	}
	if !ok {
		text, _ := browsertest.Eval[string](f.b, 5*time.Second, `document.body.innerText.slice(0, 3000)`)
		f.t.Fatalf("waited for %s (%s); the page shows:\n%s\nscript errors: %v", what, expr, text, f.b.Errors())
	}
}

// waitGo waits (up to a minute) until cond, checked in the test, holds.
func (f *fixture) waitGo(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitText waits until an element matching sel contains text.
func (f *fixture) waitText(sel, text string) {
	f.t.Helper()
	f.waitJS(fmt.Sprintf("%q in %s", text, sel), fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => e.textContent.includes(%s))`, jsString(sel), jsString(text)))
}

// click clicks the first element matching a CSS selector, as a person would (mouse events
// at the element's centre, after scrolling it into view).
func (f *fixture) click(sel string) {
	f.t.Helper()
	for range 3 {
		landed, err := f.clickOnce(chromedp.Click(chromedp.CSS(sel)))
		// The node chromedp found was replaced by a redraw (the session list's, after a
		// switch) before it could be scrolled to and clicked, or between the mouse's press
		// and its release: nothing was clicked, so the click is made again on the node that
		// replaced it. Any other error is the test's.
		if (err != nil && strings.Contains(err.Error(), "Could not find node with given id")) || (err == nil && !landed) {
			continue
		}
		if err != nil {
			f.t.Fatalf("click %s: %v", sel, err)
		}
		return
	}
	f.t.Fatalf("click %s: the node was replaced three times before it could be clicked", sel)
}

// clickOnce runs a chromedp click and reports whether the page received a click event. A
// button redrawn between the press and the release (the sidebar redraws on every live
// update) receives neither: Chromium fires no click, and chromedp reports success
// (TestWorkspaceWarnings' "type into #ws-path: timed out" after its click on New workspace).
// A click that leaves the document (a real navigation) counts as received.
func (f *fixture) clickOnce(click chromedp.Action[chromedp.Void]) (bool, error) {
	f.t.Helper()
	arm := `(() => { if (!window.__e2eClickHook) { window.__e2eClickHook = true; document.addEventListener("click", () => { window.__e2eClicks++; }, true); } window.__e2eClicks = 0; window.__e2eClickArmed = true; return true; })()`
	if _, err := browsertest.Eval[bool](f.b, 5*time.Second, arm); err != nil {
		f.t.Fatal(err)
	}
	if err := f.b.Do(20*time.Second, click); err != nil {
		return false, err
	}
	landed, err := browsertest.Eval[bool](f.b, 5*time.Second, `(() => { const landed = window.__e2eClickArmed !== true || window.__e2eClicks > 0; window.__e2eClickArmed = false; return landed; })()`)
	return landed || err != nil, nil
}

// clickText clicks the first button or link under scope whose text is text.
func (f *fixture) clickText(scope, text string) {
	f.t.Helper()
	els := jsString(scope + " button, " + scope + " a")
	f.waitJS(fmt.Sprintf("a %q button in %s", text, scope), fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => e.textContent.trim() === %s)`, els, jsString(text)))
	mark := fmt.Sprintf(`(() => { const el = [...document.querySelectorAll(%s)].find((e) => e.textContent.trim() === %s); if (!el) return false; el.setAttribute("data-e2e-target", "1"); return true; })()`,
		els, jsString(text))
	unmark := `(() => { document.querySelectorAll("[data-e2e-target]").forEach((e) => e.removeAttribute("data-e2e-target")); return true; })()`
	for range 3 {
		if _, err := browsertest.Eval[bool](f.b, 5*time.Second, mark); err != nil {
			f.t.Fatal(err)
		}
		// AtLeast(0): a redraw that replaced the marked node (the settings' provider list after
		// a providers.changed, a session list after a switch) leaves no node with the mark, and
		// the query says so at once instead of waiting its 20 s for a mark no node will get
		// again; the button is marked anew and clicked.
		landed, err := f.clickOnce(chromedp.Click(chromedp.CSS(`[data-e2e-target="1"]`), chromedp.AtLeast(0)))
		if _, uerr := browsertest.Eval[bool](f.b, 5*time.Second, unmark); uerr != nil {
			f.t.Fatal(uerr)
		}
		if (err != nil && (strings.Contains(err.Error(), "did not return any nodes") || strings.Contains(err.Error(), "Could not find node with given id"))) || (err == nil && !landed) {
			continue
		}
		if err != nil {
			f.t.Fatalf("click %q in %s: %v", text, scope, err)
		}
		return
	}
	f.t.Fatalf("click %q in %s: the button was replaced three times before it could be clicked", text, scope)
}

// typeInto focuses a field and types text (a "\n" presses Enter).
func (f *fixture) typeInto(sel, text string) {
	f.t.Helper()
	if err := f.b.Do(20*time.Second, chromedp.SendKeys(chromedp.CSS(sel), text)); err != nil {
		f.t.Fatalf("type into %s: %v", sel, err)
	}
}

func (f *fixture) eval(expr string) string {
	f.t.Helper()
	v, err := browsertest.Eval[string](f.b, 10*time.Second, expr)
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// toolCalls is a model reply that calls tools, one call per (name, args) pair.
func toolCalls(calls ...[2]string) providertest.Reply {
	s := providertest.NewOpenAIStream("test-model")
	for i, c := range calls {
		s.ToolCall(i, fmt.Sprintf("call_%d", i+1), c[0], c[1])
	}
	return s.Finish("tool_calls").Usage(10, 5).Done().Reply()
}

// text is a model reply that streams text in pieces.
func text(pieces ...string) providertest.Reply {
	s := providertest.NewOpenAIStream("test-model")
	for _, p := range pieces {
		s.Text(p)
	}
	return s.Finish("stop").Usage(10, 5).Done().Reply()
}

// slowPage slows the page's CPU by the factor in $JEAN2_E2E_SLOWDOWN (e.g. 6), through
// Chromium's own throttling: the page's scripts, layout and paint run that much slower while
// the server and the test run at full speed. It shows the races a loaded machine shows now
// and then (a live redraw between finding a node and clicking it, focus not yet moved) in
// most runs, without loading the machine.
func slowPage(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	v := os.Getenv("JEAN2_E2E_SLOWDOWN")
	if v == "" {
		return
	}
	rate, err := strconv.ParseFloat(v, 64)
	if err != nil || rate < 1 {
		t.Fatalf("JEAN2_E2E_SLOWDOWN=%q: give a slowdown factor of 1 or more, e.g. 6", v)
	}
	err = b.Do(10*time.Second, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: rate})
		return err
	}))
	if err != nil {
		t.Fatalf("slow the page down %gx: %v", rate, err)
	}
}
