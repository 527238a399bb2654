package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/tool"
)

// runResult is what one `jean2 run` printed and how it exited.
type runResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// run runs `jean2 run ARGS…` in the workspace with stdin (nil: none) and waits for it.
func (c *chatEnv) run(extraEnv []string, stdin string, args ...string) runResult {
	c.t.Helper()
	cmd := exec.Command(jean2Bin, append([]string{"run"}, args...)...)
	cmd.Env = c.env(extraEnv...)
	cmd.Dir = c.ws
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(120 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		c.t.Fatalf("jean2 run did not end; stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	r := runResult{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// jsonLines decodes the JSON output of jean2 run, every line an object with a type.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev["type"] == nil || ev["sessionId"] == nil {
			t.Fatalf("a line of --format json is not an event (%v): %q\nall:\n%s", err, line, out)
		}
		evs = append(evs, ev)
	}
	return evs
}

func eventsOf(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

// toolResultSent is the content of the tool message the model was sent in request i.
func (c *chatEnv) toolResultSent(i int) string {
	c.t.Helper()
	reqs := c.fake.Requests()
	if i >= len(reqs) {
		c.t.Fatalf("the model got %d requests, not %d", len(reqs), i+1)
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := reqs[i].Decode(&body); err != nil {
		c.t.Fatal(err)
	}
	for j := len(body.Messages) - 1; j >= 0; j-- {
		if body.Messages[j].Role == "tool" {
			data, _ := json.Marshal(body.Messages[j].Content)
			return string(data)
		}
	}
	c.t.Fatalf("request %d carries no tool result", i)
	return ""
}

// A turn with a tool call against the server jean2 serve runs (found through
// $JEAN2_HOME/server.json, no --server): the final answer alone on stdout, exit 0.
func TestRunTextUsesTheRunningServer(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.fake.Push(
		providertest.NewOpenAIStream("test-model").Text("I will write it.").
			ToolCall(0, "call_1", "write_file", `{"path":"note.txt","text":"hello\n"}`).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("test-model", "Wrote ", "note.txt."),
	)
	r := c.run(nil, "", "write a note")
	if r.code != 0 || r.stdout != "Wrote note.txt.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "started one here") {
		t.Fatalf("jean2 run started its own server beside the running one:\n%s", r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(c.ws, "note.txt")); err != nil || string(data) != "hello\n" {
		t.Fatalf("note.txt: %q %v", data, err)
	}
	var list struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	getJSON(t, c.token(), base+"/api/sessions", &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("the running server has %d sessions, want the run's one", len(list.Sessions))
	}
}

// --format json: one JSON event a line, the API's events in seq order between run.started
// and run.finished; --session continues the session with a second run.
func TestRunJSONEventsAndSessionContinued(t *testing.T) {
	c := newChatEnv(t)
	c.serve()
	c.fake.Push(providertest.OpenAIText("test-model", "First ", "answer."), providertest.OpenAIText("test-model", "Second answer."))
	r := c.run(nil, "", "--format", "json", "--model", "test-model", "one")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	evs := jsonLines(t, r.stdout)
	if evs[0]["type"] != "run.started" || evs[len(evs)-1]["type"] != "run.finished" {
		t.Fatalf("the stream does not open with run.started and close with run.finished:\n%s", r.stdout)
	}
	last := 0.0
	// (A reply streamed this fast comes as one message.created, without part.delta.)
	for _, typ := range []string{"turn.started", "message.created", "turn.finished"} {
		if len(eventsOf(evs, typ)) == 0 {
			t.Errorf("no %s event in:\n%s", typ, r.stdout)
		}
	}
	for _, ev := range evs[1 : len(evs)-1] {
		seq, _ := ev["seq"].(float64)
		if seq <= last {
			t.Fatalf("event seqs not increasing at %v:\n%s", ev, r.stdout)
		}
		last = seq
	}
	if !strings.Contains(r.stdout, `"role":"assistant"`) {
		t.Errorf("no message.created of the answer in:\n%s", r.stdout)
	}
	fin := evs[len(evs)-1]["payload"].(map[string]any)
	if fin["status"] != "done" || fin["text"] != "First answer." || fin["reason"] != "done" {
		t.Fatalf("run.finished %v", fin)
	}
	sid := fin["sessionId"].(string)

	r = c.run(nil, "", "--session", sid, "two")
	if r.code != 0 || r.stdout != "Second answer.\n" {
		t.Fatalf("the continued run: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The model saw the first exchange: the session went on.
	if sent := string(c.fake.Requests()[1].Body); !strings.Contains(sent, "First answer.") {
		t.Fatalf("the second turn's request lacks the first answer: %s", sent)
	}
}

// An ask no policy covers is refused at once, never waited on (the ask timeout is 300 s):
// reported on stderr and by exit code 3 in text mode, as run.refused and an ask.resolved
// "refused" in JSON mode; the tool gets an error and the model goes on.
func TestRunRefusesWhatThePolicyDoesNotCover(t *testing.T) {
	c := newChatEnv(t)
	c.serve()
	deployThenText := func(answer string) {
		c.fake.Push(providertest.OpenAIToolCall("test-model", "call_d", "deploy", `{}`), providertest.OpenAIText("test-model", answer))
	}
	deployThenText("Could not deploy.")
	r := c.run(nil, "", "deploy it")
	if r.code != runExitRefused {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, runExitRefused, r.stderr)
	}
	if !strings.Contains(r.stderr, `refused single_select ask "Deploy where?" of tool deploy: no --allow rule or --answers entry covers it`) {
		t.Fatalf("the refusal is not reported on stderr:\n%s", r.stderr)
	}
	t.Logf("the run with a refused ask took %s (the ask timeout is 300 s)", r.took)
	if r.stdout != "Could not deploy.\n" || r.took > 60*time.Second {
		t.Fatalf("stdout %q after %s", r.stdout, r.took)
	}
	if got := c.toolResultSent(1); !strings.Contains(got, "refused by the client") {
		t.Fatalf("the tool's error sent to the model: %s", got)
	}

	deployThenText("Still could not.")
	r = c.run(nil, "", "--format", "json", "deploy it")
	evs := jsonLines(t, r.stdout)
	refused := eventsOf(evs, "run.refused")
	if r.code != runExitRefused || len(refused) != 1 {
		t.Fatalf("exit %d, %d run.refused events:\n%s", r.code, len(refused), r.stdout)
	}
	if p := refused[0]["payload"].(map[string]any); p["tool"] != "deploy" || p["reason"] == "" {
		t.Fatalf("run.refused payload %v", p)
	}
	resolved := eventsOf(evs, "ask.resolved")
	if len(resolved) != 1 || resolved[0]["payload"].(map[string]any)["outcome"] != "refused" {
		t.Fatalf("ask.resolved events %v", resolved)
	}
	if fin := evs[len(evs)-1]["payload"].(map[string]any); fin["status"] != "refused" {
		t.Fatalf("run.finished %v", fin)
	}
}

// --answers answers the question and --allow grants the permission; without --allow the
// permission is refused (answered "not granted") and reported; --deny wins over both.
func TestRunPolicyAnswersAllowsAndDenies(t *testing.T) {
	c := newChatEnv(t)
	c.serve()
	answers := filepath.Join(t.TempDir(), "answers.json")
	if err := os.WriteFile(answers, []byte(`{"Deploy where?": "Staging"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	push := func() {
		c.fake.Push(providertest.OpenAIToolCall("test-model", "call_d", "deploy", `{}`), providertest.OpenAIText("test-model", "Deployed."))
	}
	push()
	r := c.run(nil, "", "--answers", answers, "--allow", "deploy:deploy", "deploy it")
	if r.code != 0 || r.stdout != "Deployed.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := c.toolResultSent(1); !strings.Contains(got, `\"env\":\"staging\"`) || !strings.Contains(got, `\"ok\":true`) {
		t.Fatalf("the tool's result: %s", got)
	}

	push()
	r = c.run(nil, "", "--answers", answers, "--allow", "other-tool", "deploy it")
	if r.code != runExitRefused || !strings.Contains(r.stderr, `refused permission ask "Deploy to staging now?" of tool deploy: no --allow rule covers it, and answers file`) {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if got := c.toolResultSent(3); !strings.Contains(got, `\"ok\":false`) {
		t.Fatalf("the refused permission reached the tool as: %s", got)
	}

	push()
	r = c.run(nil, "", "--answers", answers, "--allow", "*", "--deny", "dep*", "deploy it")
	if r.code != runExitRefused || !strings.Contains(r.stderr, "denied by --deny dep*") {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// With no server running, jean2 run starts its own inside itself; the prompt comes from
// stdin, with "-" and with no argument at all.
func TestRunStartsItsOwnServerAndReadsStdin(t *testing.T) {
	c := newChatEnv(t)
	// Naming of sessions by the model, on in a fresh home, may ask after the turn.
	c.fake.Respond(func(providertest.Request) providertest.Reply { return providertest.OpenAIText("test-model", "A title") })
	c.fake.Push(providertest.OpenAIText("test-model", "Hello from stdin."))
	noServer := []string{"JEAN2_SERVER=http://127.0.0.1:1"}
	r := c.run(noServer, "say hello\n", "-")
	if r.code != 0 || r.stdout != "Hello from stdin.\n" || !strings.Contains(r.stderr, "started one here at http://127.0.0.1:") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if sent := string(c.fake.Requests()[0].Body); !strings.Contains(sent, "say hello") {
		t.Fatalf("the prompt from stdin did not reach the model: %s", sent)
	}
	if _, err := os.Stat(filepath.Join(c.home, "server.json")); !os.IsNotExist(err) {
		t.Fatalf("the run's own server is still published after it ended: %v", err)
	}

	c.fake.Push(providertest.OpenAIText("test-model", "Piped."))
	r = c.run(noServer, "no argument\n")
	if r.code != 0 || r.stdout != "Piped.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// --max-turns 1 stops the turn when the model is called a second time (exit 4), and the
// model is not called a third; --timeout stops a turn that runs too long (exit 4).
func TestRunLimits(t *testing.T) {
	c := newChatEnv(t)
	c.serve()
	c.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "write_file", `{"path":"a.txt","text":"a"}`),
		providertest.OpenAIToolCall("test-model", "call_2", "wait_forever", `{}`),
	)
	r := c.run(nil, "", "--max-turns", "1", "go")
	if r.code != runExitLimit || !strings.Contains(r.stderr, "--max-turns 1") {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if n := len(c.fake.Requests()); n != 2 {
		t.Fatalf("the model was called %d times, want 2", n)
	}

	c.fake.Push(providertest.OpenAIToolCall("test-model", "call_3", "wait_forever", `{}`))
	r = c.run(nil, "", "--timeout", "3s", "--format", "json", "wait")
	evs := jsonLines(t, r.stdout)
	fin := evs[len(evs)-1]["payload"].(map[string]any)
	if r.code != runExitLimit || fin["status"] != "limit" || fin["reason"] != "stopped" || r.took > 60*time.Second {
		t.Fatalf("exit %d after %s; run.finished %v; stderr:\n%s", r.code, r.took, fin, r.stderr)
	}
}

// Mistakes in the command exit 2 and say what is wrong.
func TestRunUsageMistakes(t *testing.T) {
	c := newChatEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "yaml", "x"}, `--format "yaml"`},
		{[]string{"a", "b"}, "takes one prompt"},
		{[]string{"--allow", ":file", "x"}, "names no tool"},
		{[]string{"-"}, "the prompt on stdin is empty"},
	} {
		r := c.run([]string{"JEAN2_SERVER=http://127.0.0.1:1"}, "", tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("jean2 run %q: exit %d, stderr:\n%s", tc.args, r.code, r.stderr)
		}
	}
}

// The policy's order: --deny, then the answers file, then --allow (permissions only, never
// what only a person may grant); anything else refused.
func TestRunPolicyDecide(t *testing.T) {
	var allow, deny ruleList
	for _, r := range []string{"*:file", "deploy"} {
		if err := allow.Set(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := deny.Set("rm-*"); err != nil {
		t.Fatal(err)
	}
	p, err := newRunPolicy(allow, deny, "")
	if err != nil {
		t.Fatal(err)
	}
	perm := func(toolName, resource string, paths ...string) hub.PendingAsk {
		return hub.PendingAsk{Tool: toolName, Ask: tool.Ask{Type: tool.AskPermission, Question: "May I?", Risk: "medium", Resource: resource, Paths: paths}}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		ask     hub.PendingAsk
		granted bool
		why     string
	}{
		{"allowed by resource", perm("write-file", "file", "/ws/a.txt"), true, ""},
		{"allowed by tool", perm("deploy", "deploy"), true, ""},
		{"denied first", perm("rm-all", "file", "/ws/a.txt"), false, "denied by --deny rm-*"},
		{"not covered", perm("webfetch", "network"), false, "no --allow rule or --answers entry covers it"},
		{"person only", perm("read-file", "file", "~/.ssh/id_rsa"), false, "only a person may grant this"},
		{"a question", hub.PendingAsk{Tool: "deploy", Ask: tool.Ask{Type: tool.AskText, Question: "Name?"}}, false, "no --allow rule"},
	} {
		d := p.decide(ctx, tc.ask)
		if tc.granted != (string(d.Answer) == `{"granted":true,"duration":"once"}`) || !strings.Contains(d.Refuse, tc.why) {
			t.Errorf("%s: answer %s, refusal %q", tc.name, d.Answer, d.Refuse)
		}
	}
}
