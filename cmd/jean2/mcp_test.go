package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpScripts copies the TypeScript SDK client and server scripts into a folder whose
// node_modules is the one scripts/setup fills, and returns that folder.
func mcpScripts(t *testing.T) string {
	t.Helper()
	modules, _ := filepath.Abs("../../.deps/node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP TypeScript SDK is not installed in %s: scripts/setup installs it", modules)
		}
		t.Skipf("the MCP TypeScript SDK is not installed in %s: run scripts/setup", modules)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	for _, f := range []string{"client.mjs", "server.mjs", "task-server.mjs"} {
		data, err := os.ReadFile(filepath.Join("testdata", "mcp", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tsClient runs the TypeScript SDK client script against `jean2 mcp --workspace c.ws` and
// returns what it saw.
func (c *cli) tsClient(scripts, scenario string, out any) {
	c.t.Helper()
	cmd := exec.Command("node", filepath.Join(scripts, "client.mjs"), scenario, jean2Bin, c.ws, filepath.Join(c.home, "tools"))
	cmd.Env = append(c.env(), "JEAN2_LOG=warn")
	cmd.Dir = c.ws
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			c.t.Fatalf("client.mjs %s: %v\n%s\n%s", scenario, err, stdout.String(), stderr.String())
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		c.t.Fatalf("client.mjs %s did not finish\n%s\n%s", scenario, stdout.String(), stderr.String())
	}
	var seen struct {
		Error  string `json:"error"`
		Stderr string `json:"stderr"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &seen); err != nil {
		c.t.Fatalf("client.mjs %s printed %q: %v\n%s", scenario, stdout.String(), err, stderr.String())
	}
	if seen.Error != "" {
		c.t.Fatalf("client.mjs %s failed: %s\njean2's stderr:\n%s", scenario, seen.Error, seen.Stderr)
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		c.t.Fatal(err)
	}
}

type mcpContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type mcpResult struct {
	Content           []mcpContent               `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

func (r mcpResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// The official TypeScript SDK, as a client of `jean2 mcp`, lists the tools with their
// schemas, hints and titles, calls them, answers an ask through elicitation, receives
// progress and log notifications, cancels a call (the tool sees its signal aborted), serves
// ctx.llm through sampling, and hears list_changed when a tool folder is added.
func TestMCPServeToTypeScriptClient(t *testing.T) {
	c := newCLI(t)
	scripts := mcpScripts(t)
	for _, name := range []string{"echo", "ask", "wait", "think"} {
		copyDir(t, filepath.Join("testdata", "mcp", "tools", name), filepath.Join(c.home, "tools", name))
	}
	var got struct {
		Tools []struct {
			Name         string          `json:"name"`
			Title        string          `json:"title"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
			Annotations  map[string]bool `json:"annotations"`
		} `json:"tools"`
		Echo         mcpResult `json:"echo"`
		Ask          mcpResult `json:"ask"`
		Elicitations []struct {
			Message string          `json:"message"`
			Mode    string          `json:"mode"`
			Schema  json.RawMessage `json:"schema"`
		} `json:"elicitations"`
		Progress []struct {
			Progress, Total float64
			Message         string
		} `json:"progress"`
		Logs []struct {
			Level  string         `json:"level"`
			Logger string         `json:"logger"`
			Data   map[string]any `json:"data"`
		} `json:"logs"`
		Cancelled struct {
			Rejected string `json:"rejected"`
		} `json:"cancelled"`
		Report      mcpResult `json:"report"`
		Think       mcpResult `json:"think"`
		AfterChange []string  `json:"afterChange"`
		Added       mcpResult `json:"added"`
		Stderr      string    `json:"stderr"`
	}
	c.tsClient(scripts, "serve", &got)
	got.Tools = withoutBuiltins(t, got.Tools)

	if len(got.Tools) != 4 {
		t.Fatalf("tools: %+v", got.Tools)
	}
	echo := got.Tools[1]
	if echo.Name != "echo" || echo.Title != "Echo" ||
		string(echo.InputSchema) != `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}` ||
		string(echo.OutputSchema) != `{"type":"object","properties":{"echo":{"type":"string"}},"required":["echo"]}` ||
		!echo.Annotations["readOnlyHint"] || !echo.Annotations["idempotentHint"] || echo.Annotations["openWorldHint"] {
		t.Fatalf("echo as listed: %+v", echo)
	}
	if ask := got.Tools[0]; ask.Name != "ask" || ask.Annotations["destructiveHint"] || ask.OutputSchema != nil {
		t.Fatalf("ask as listed: %+v", ask)
	}
	if got.Echo.text() != `{"success":true,"result":{"echo":"hi"}}` || string(got.Echo.StructuredContent) != `{"echo":"hi"}` ||
		string(got.Echo.Meta["jean2/visualization"]) != `{"type":"markdown","content":"> hi"}` {
		t.Fatalf("echo: %+v", got.Echo)
	}

	if got.Ask.text() != `{"success":true,"result":{"name":"Ada","env":"staging","allowed":true}}` {
		t.Fatalf("ask: %s", got.Ask.text())
	}
	if len(got.Elicitations) != 3 || got.Elicitations[0].Mode != "form" || got.Elicitations[0].Message != "Tool ask asks: Your name?" ||
		!strings.Contains(string(got.Elicitations[1].Schema), `{"const":"staging","title":"Staging"}`) ||
		!strings.HasPrefix(got.Elicitations[2].Message, "Tool ask asks for permission: Deploy to staging?") ||
		!strings.Contains(string(got.Elicitations[2].Schema), `"allow":{"type":"boolean"`) {
		t.Fatalf("elicitations: %+v", got.Elicitations)
	}

	if len(got.Progress) != 3 || got.Progress[2].Progress != 3 || got.Progress[2].Total != 3 || got.Progress[0].Message != "step 1" {
		t.Fatalf("progress: %+v", got.Progress)
	}
	if len(got.Logs) != 3 || got.Logs[0].Level != "info" || got.Logs[0].Logger != "wait" || got.Logs[0].Data["message"] != "step" ||
		fmt.Sprint(got.Logs[0].Data["data"]) != "map[i:1]" {
		t.Fatalf("logs: %+v", got.Logs)
	}
	if !strings.Contains(got.Cancelled.Rejected, "stop pressed") {
		t.Fatalf("cancelled call: %+v", got.Cancelled)
	}
	if got.Report.text() != `{"success":true,"result":{"lastAbort":{"aborted":true,"reason":"The call was stopped"}}}` {
		t.Fatalf("the tool did not see its signal aborted: %s\n%s", got.Report.text(), got.Stderr)
	}

	if got.Think.text() != "sampled: 2+2?" {
		t.Fatalf("think through sampling: %s", got.Think.text())
	}
	got.AfterChange = slices.DeleteFunc(got.AfterChange, isBuiltin)
	if !slices.Equal(got.AfterChange, []string{"added", "ask", "echo", "think", "wait"}) || got.Added.text() != "new" {
		t.Fatalf("after adding a tool: %v %s", got.AfterChange, got.Added.text())
	}
}

// A server built with the official TypeScript SDK, listed in mcp.json files, joins jean2's
// tools: listed (a clash prefixed, a server that cannot start listed with its error), run
// with an explicit environment, timed out with the cancellation reaching the server, and
// re-exported over `jean2 mcp`, where the server's list_changed reaches jean2's client.
func TestMCPImportTypeScriptServer(t *testing.T) {
	c := newCLI(t)
	// The protocol with servers whose scripts and SDK lie outside any workspace: unconfined.
	// Confined servers: mcpclient's TestConfinedNpxServer and TestAttackWorkspaceServerRewritten.
	c.extraEnv = []string{"JEAN2_SANDBOX=off"}
	scripts := mcpScripts(t)
	server := filepath.Join(scripts, "server.mjs")
	marker := filepath.Join(t.TempDir(), "cancelled.txt")
	writeJSON := func(path string, v any) {
		t.Helper()
		data, _ := json.Marshal(v)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeJSON(filepath.Join(c.home, "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"ts":     map[string]any{"command": "node", "args": []string{server}, "env": map[string]string{"GREETING": "hello ${USER}"}},
		"broken": map[string]any{"command": "/nonexistent/mcp-server"},
	}})
	// The workspace's file adds a second copy with a short timeout; its names clash.
	writeJSON(filepath.Join(c.ws, ".jean2", "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"ts2": map[string]any{"command": "node", "args": []string{server}, "timeout": 1500, "env": map[string]string{"MARKER": marker}},
	}})
	// A person trusted that file's content (TestMCPWorkspaceFileNeedsTrust: not until then).
	if out, stderr, code := c.run("", "mcp", "trust", "--yes"); code != 0 {
		t.Fatalf("trust: exit %d %s %s", code, out, stderr)
	}

	out, stderr, code := c.run("", "tools", "list", "--json")
	if code != 0 {
		t.Fatalf("list: exit %d %s", code, stderr)
	}
	var entries []struct {
		Name, Runtime, Status, Error, Version string
		Definition                            *struct {
			Title       string          `json:"title"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Annotations map[string]bool `json:"annotations"`
		}
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	byName := map[string]int{}
	for i, e := range entries {
		byName[e.Name] = i
	}
	// Imported tools are namespaced by their server: never beside the built-ins, and the
	// workspace's second copy needs no other prefix.
	for _, name := range []string{"mcp__ts__add", "mcp__ts__shout", "mcp__ts__env", "mcp__ts__fail", "mcp__ts__grow", "mcp__ts__slow", "mcp__ts__ping", "mcp__ts2__add", "mcp__ts2__slow", "mcp:broken"} {
		if _, ok := byName[name]; !ok {
			t.Fatalf("%s is not listed: %s", name, out)
		}
	}
	add := entries[byName["mcp__ts__add"]]
	var schema bytes.Buffer
	if add.Definition != nil {
		_ = json.Compact(&schema, add.Definition.InputSchema)
	}
	if add.Runtime != "mcp" || add.Status != "ok" || add.Version != "mcp:ts" || add.Definition == nil || add.Definition.Title != "Add" ||
		!add.Definition.Annotations["readOnlyHint"] || !strings.Contains(schema.String(), `"a":{"type":"number"}`) {
		t.Fatalf("add: %+v", add)
	}
	if b := entries[byName["mcp:broken"]]; b.Status != "error" || !strings.Contains(b.Error, "/nonexistent/mcp-server: no such file or directory") || !strings.Contains(b.Error, "retrying in") {
		t.Fatalf("broken server: %+v", b)
	}

	out, stderr, code = c.run("", "tools", "run", "mcp__ts__add", "--input", `{"a":2,"b":3}`)
	if code != 0 || !strings.Contains(out, `"sum": 5`) {
		t.Fatalf("run add: exit %d %s %s", code, out, stderr)
	}
	out, _, code = c.run("", "tools", "run", "mcp__ts__fail")
	if code != 1 || !strings.Contains(out, `"error": "it broke"`) {
		t.Fatalf("run fail: exit %d %s", code, out)
	}
	// Only PATH, HOME and the configured variables reach a stdio server.
	out, _, code = c.run("", "tools", "run", "mcp__ts__env")
	if code != 0 || !strings.Contains(out, `"result": "GREETING,HOME,JEAN2_MCP_NESTED,PATH"`) {
		t.Fatalf("run env: exit %d %s", code, out)
	}
	// The server's timeout (1500 ms) ends the call, and the server hears the cancellation.
	start := time.Now()
	out, _, code = c.run("", "tools", "run", "mcp__ts2__slow")
	if code != 1 || !strings.Contains(out, "timed out after 1500ms") || time.Since(start) > 20*time.Second {
		t.Fatalf("run slow: exit %d %s after %v", code, out, time.Since(start))
	}
	if data, err := os.ReadFile(marker); err != nil || !strings.HasPrefix(string(data), "aborted") {
		t.Fatalf("the server did not see the cancellation: %q %v", data, err)
	}

	var got struct {
		Tools     []string  `json:"tools"`
		Add       mcpResult `json:"add"`
		Grow      mcpResult `json:"grow"`
		AfterGrow []string  `json:"afterGrow"`
		Grown     mcpResult `json:"grown"`
	}
	c.tsClient(scripts, "imported", &got)
	if !slices.Contains(got.Tools, "mcp__ts__add") || !slices.Contains(got.Tools, "mcp__ts2__shout") || slices.Contains(got.Tools, "mcp__ts__grown") {
		t.Fatalf("re-exported tools: %v", got.Tools)
	}
	if got.Add.text() != `{"success":true,"result":{"sum":5}}` || string(got.Add.StructuredContent) != `{"sum":5}` {
		t.Fatalf("add through jean2: %+v", got.Add)
	}
	if !slices.Contains(got.AfterGrow, "mcp__ts__grown") || got.Grown.text() != "grown up" {
		t.Fatalf("after grow: %v %s", got.AfterGrow, got.Grown.text())
	}
}

// A malformed mcp.json is listed with what is wrong; the tools still work.
func TestMCPConfigErrorsAreListed(t *testing.T) {
	c := newCLI(t)
	copyDir(t, "../../host/testdata/word-count", filepath.Join(c.home, "tools", "word-count"))
	if err := os.WriteFile(filepath.Join(c.home, "mcp.json"), []byte(`{"mcpServers": {"x": {"command": "a", "url": "http://b"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := c.run("", "tools", "list")
	if code != 0 || !strings.Contains(out, "word-count") || !strings.Contains(out, "mcp.json:") || !strings.Contains(out, "mcpServers.x: give either command (a stdio server) or url (an HTTP server), not both") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}

// A jean2 listed in its own mcp.json serves its tools once: the nested jean2 connects to
// no servers of its own, so it does not start itself again.
func TestMCPSelfImportDoesNotLoop(t *testing.T) {
	c := newCLI(t)
	copyDir(t, "../../host/testdata/word-count", filepath.Join(c.home, "tools", "word-count"))
	// jean2 needs its home, which no confined process sees: the user's own file opts it out.
	cfg := fmt.Sprintf(`{"mcpServers": {"self": {"command": %q, "args": ["mcp"], "env": {"JEAN2_HOME": %q, "JEAN2_LOG": "error"}, "sandbox": false}}}`, jean2Bin, c.home)
	if err := os.WriteFile(filepath.Join(c.home, "mcp.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("one two"), 0o644)
	out, stderr, code := c.run("", "tools", "list")
	if code != 0 || !strings.Contains(out, "word-count ") || !strings.Contains(out, "mcp__self__word-count") || strings.Contains(out, "mcp__self__mcp__self") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "run", "mcp__self__word-count", "--input", `{"path":"a.txt"}`)
	if code != 0 || !strings.Contains(out, `\"words\":2`) {
		t.Fatalf("through the nested jean2: exit %d\n%s\n%s", code, out, stderr)
	}
}

// jean2 mcp says at start how tool workers are confined.
func TestMCPSaysWhichProtectionIsActive(t *testing.T) {
	c := newCLI(t)
	_, stderr, _ := c.run("", "mcp", "--workspace", c.ws)
	if !strings.Contains(stderr, "jean2 mcp: tool workers: ") {
		t.Fatalf("stderr does not name the protection:\n%s", stderr)
	}
}

// The official TypeScript SDK's experimental tasks client, against `jean2 mcp`: jean2
// declares tasks and every tool's taskSupport, so the SDK runs calls as tasks by itself and
// follows them to the result (asks answered through elicitation on the way); a long call run
// as a task shows its progress as the status message, is listed, and tasks/cancel stops it
// (the tool sees its signal aborted).
func TestMCPTasksFromTypeScriptClient(t *testing.T) {
	c := newCLI(t)
	scripts := mcpScripts(t)
	for _, name := range []string{"echo", "ask", "wait"} {
		copyDir(t, filepath.Join("testdata", "mcp", "tools", name), filepath.Join(c.home, "tools", name))
	}
	var got tsTasksSeen
	c.tsClient(scripts, "tasks", &got)
	got.check(t)
}

// The same over streamable HTTP, against jean2 serve's /mcp: the asks of a task travel on
// the session's GET stream, since no request of the client is open for them.
func TestMCPTasksOverHTTPFromTypeScriptClient(t *testing.T) {
	c := newChatEnv(t)
	scripts := mcpScripts(t)
	for _, name := range []string{"echo", "ask", "wait"} {
		copyDir(t, filepath.Join("testdata", "mcp", "tools", name), filepath.Join(c.home, "tools", name))
	}
	u := c.serve()
	cmd := exec.Command("node", filepath.Join(scripts, "client.mjs"), "tasks", "", c.ws, "")
	cmd.Env = c.env("MCP_URL="+u+"/mcp", "MCP_TOKEN="+c.token())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan struct{})
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill(); close(done) })
	out, err := cmd.Output()
	if !timer.Stop() {
		<-done
		t.Fatalf("client.mjs tasks over HTTP did not finish: %s\n%s", out, stderr.String())
	}
	if err != nil {
		t.Fatalf("client.mjs tasks over HTTP: %v\n%s\n%s", err, out, stderr.String())
	}
	var got tsTasksSeen
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client.mjs printed %q: %v", out, err)
	}
	if got.Error != "" {
		t.Fatalf("client.mjs tasks over HTTP failed: %s", got.Error)
	}
	got.check(t)
}

type tsTaskStep struct {
	Type   string    `json:"type"`
	Status string    `json:"status"`
	TTL    float64   `json:"ttl"`
	Result mcpResult `json:"result"`
	Error  string    `json:"error"`
}

type tsTaskState struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
}

// tsTasksSeen is what client.mjs's tasks scenario saw.
type tsTasksSeen struct {
	Error        string `json:"error"`
	Capabilities struct {
		Tasks json.RawMessage `json:"tasks"`
	} `json:"capabilities"`
	Tools []struct {
		Name      string `json:"name"`
		Execution struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	} `json:"tools"`
	Echo        []tsTaskStep `json:"echo"`
	Ask         []tsTaskStep `json:"ask"`
	Running     tsTaskState  `json:"running"`
	Listed      []string     `json:"listed"`
	Cancel      tsTaskState  `json:"cancel"`
	AfterCancel tsTaskState  `json:"afterCancel"`
	Report      mcpResult    `json:"report"`
	Unknown     string       `json:"unknown"`
}

func (got tsTasksSeen) check(t *testing.T) {
	t.Helper()

	if string(got.Capabilities.Tasks) != `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}` {
		t.Fatalf("capabilities.tasks: %s", got.Capabilities.Tasks)
	}
	for _, tl := range got.Tools {
		if tl.Execution.TaskSupport != "optional" {
			t.Fatalf("tool %s listed with taskSupport %q", tl.Name, tl.Execution.TaskSupport)
		}
	}
	last := func(what string, steps []tsTaskStep) tsTaskStep {
		t.Helper()
		if len(steps) < 2 || steps[0].Type != "taskCreated" || steps[0].TTL != 60000 || steps[len(steps)-1].Type != "result" {
			t.Fatalf("%s as a task: %+v", what, steps)
		}
		return steps[len(steps)-1]
	}
	if r := last("echo", got.Echo).Result; r.text() != `{"success":true,"result":{"echo":"hi"}}` || string(r.StructuredContent) != `{"echo":"hi"}` {
		t.Fatalf("echo's task result: %+v", r)
	}
	if r := last("ask", got.Ask).Result; r.text() != `{"success":true,"result":{"name":"Ada","env":"staging","allowed":true}}` {
		t.Fatalf("ask's task result: %+v", r)
	}
	if got.Running.Status != "working" || got.Running.StatusMessage != "step 3" {
		t.Fatalf("the running task: %+v", got.Running)
	}
	if !slices.Equal(got.Listed, []string{"completed", "completed", "working"}) {
		t.Fatalf("tasks/list: %v", got.Listed)
	}
	if got.Cancel.Status != "cancelled" || got.AfterCancel.Status != "cancelled" {
		t.Fatalf("tasks/cancel: %+v then %+v", got.Cancel, got.AfterCancel)
	}
	if got.Report.text() != `{"success":true,"result":{"lastAbort":{"aborted":true,"reason":"The call was stopped"}}}` {
		t.Fatalf("the cancelled task's tool did not see its signal aborted: %s", got.Report.text())
	}
	if !strings.Contains(got.Unknown, "no task") {
		t.Fatalf("tasks/get of an unknown task: %s", got.Unknown)
	}
}

// An imported server whose tools run only as tasks (the TypeScript SDK's experimental tasks,
// taskSupport "required"), over stdio and over streamable HTTP: jean2 calls them as tasks,
// follows each to its result, and when the call times out, cancels the task on the server
// (tasks/cancel).
func TestMCPImportTaskServer(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			c := newCLI(t)
			c.extraEnv = []string{"JEAN2_SANDBOX=off"} // its script and SDK lie outside any workspace
			scripts := mcpScripts(t)
			marker := filepath.Join(t.TempDir(), "cancelled.txt")
			server := filepath.Join(scripts, "task-server.mjs")
			entry := map[string]any{"command": "node", "args": []string{server}, "timeout": 1500, "env": map[string]string{"MARKER": marker}}
			if transport == "http" {
				portFile := filepath.Join(t.TempDir(), "port")
				cmd := exec.Command("node", server)
				cmd.Env = append(os.Environ(), "MARKER="+marker, "PORT_FILE="+portFile)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
				var port []byte
				for deadline := time.Now().Add(20 * time.Second); len(port) == 0; time.Sleep(50 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the HTTP task server did not start")
					}
					port, _ = os.ReadFile(portFile)
				}
				entry = map[string]any{"url": "http://127.0.0.1:" + string(port) + "/mcp", "timeout": 1500}
			}
			data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"tasks": entry}})
			if err := os.WriteFile(filepath.Join(c.home, "mcp.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := c.run("", "tools", "run", "mcp__tasks__delay", "--input", `{"ms":300}`)
			if code != 0 || !strings.Contains(out, "waited 300 ms as task yes") {
				t.Fatalf("run delay (a task): exit %d %s %s", code, out, stderr)
			}
			out, stderr, code = c.run("", "tools", "run", "mcp__tasks__plain")
			if code != 0 || !strings.Contains(out, "plain answer") {
				t.Fatalf("run plain: exit %d %s %s", code, out, stderr)
			}
			out, stderr, code = c.run("", "tools", "run", "mcp__tasks__hang")
			if code == 0 {
				t.Fatalf("run hang ended well: %s %s", out, stderr)
			}
			waitUntil := time.Now().Add(10 * time.Second)
			for {
				b, err := os.ReadFile(marker)
				if err == nil && strings.HasPrefix(string(b), "cancelled ") {
					break
				}
				if time.Now().After(waitUntil) {
					t.Fatalf("the timed-out task was not cancelled on the server (%v %q); run hang said: %s %s", err, b, out, stderr)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// An mcp.json made, edited or emptied while jean2 serve runs takes effect without a
// restart: the server's tools join the list under mcp__<server>__<tool>, and leave it when
// the entry goes. The peer is a Go SDK server over streamable HTTP, so what is tested is
// the reload, not how a stdio server is started.
func TestServeAppliesAnEditedMCPConfig(t *testing.T) {
	c := newCLI(t)
	peer := mcp.NewServer(&mcp.Implementation{Name: "peer", Version: "1"}, nil)
	for _, name := range []string{"add", "read_file"} {
		peer.AddTool(&mcp.Tool{Name: name, Description: "A peer tool.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return peer }, nil))
	defer ts.Close()
	s := startServe(t, c, nil)
	names := func() map[string]string {
		var list struct {
			Tools []struct{ Name, Status, Error string }
		}
		s.call("GET", "/api/tools", nil, 200, &list)
		out := map[string]string{}
		for _, tl := range list.Tools {
			out[tl.Name] = tl.Status + " " + tl.Error
		}
		return out
	}
	waitTools := func(what string, ok func(map[string]string) bool) map[string]string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := names()
			if ok(got) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the tools are %v\n%s", what, got, s.logs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if _, ok := names()["mcp__ts__add"]; ok {
		t.Fatal("a tool before mcp.json exists")
	}
	file := filepath.Join(c.home, "mcp.json")
	write := func(v any) {
		t.Helper()
		data, _ := json.Marshal(v)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(map[string]any{"mcpServers": map[string]any{"ts": map[string]any{"url": ts.URL}}})
	got := waitTools("the server added", func(m map[string]string) bool { _, ok := m["mcp__ts__read_file"]; return ok })
	// The built-ins keep their names; the imported ones never sit beside them unprefixed.
	if _, ok := got["read-file"]; !ok {
		t.Errorf("read-file is gone: %v", got)
	}
	for name := range got {
		if name == "add" || name == "read_file" {
			t.Errorf("an imported tool under its bare name %s", name)
		}
	}
	write(map[string]any{"mcpServers": map[string]any{}})
	waitTools("the server removed", func(m map[string]string) bool { _, ok := m["mcp__ts__add"]; return !ok })
}
