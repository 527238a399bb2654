package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// The guide's word-count example, verbatim, through a real worker.
func TestWordCountGuideExample(t *testing.T) {
	f := newFixture(t)
	f.copyTool("word-count")
	f.start()
	if e := f.entry("word-count"); e.Status != host.StatusOK || e.Version != "1.0.0" || e.Runtime != "node" {
		t.Fatalf("entry %+v", e)
	}
	text := "one two  three\nfour\n\nfive six\n"
	if err := os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := f.call("word-count", `{"path":"notes.txt"}`)
	got := result[map[string]int](t, out)
	if got["words"] != 6 || got["lines"] != 5 || got["characters"] != len(text) {
		t.Fatalf("counts %v", got)
	}
	if !strings.Contains(string(out.Result.Visualization), `"type":"none"`) || strings.Contains(out.ModelText, "visualization") {
		t.Fatalf("visualization for people only: viz=%s model=%s", out.Result.Visualization, out.ModelText)
	}

	// Outside the workspace the example asks (with no paths); a yes lets it read for this call.
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("a b c"), 0o644); err != nil {
		t.Fatal(err)
	}
	yes := &answerer{byTyp: map[string]string{"permission": "true"}}
	out = f.call("word-count", fmt.Sprintf(`{"path":%q}`, outside), func(c *host.Call) { c.Asker = yes })
	if got := result[map[string]int](t, out); got["words"] != 3 {
		t.Fatalf("outside after yes: %v", got)
	}
	no := &answerer{byTyp: map[string]string{"permission": "false"}}
	out = f.call("word-count", fmt.Sprintf(`{"path":%q}`, outside), func(c *host.Call) { c.Asker = no })
	if out.Result.Success || !strings.HasPrefix(out.Result.Error, "USER_REJECTION") {
		t.Fatalf("outside after no: %+v", out.Result)
	}
	// With no one to ask the ask fails and says so; the file is not read.
	out = f.call("word-count", fmt.Sprintf(`{"path":%q}`, outside))
	if out.Result.Success || !strings.Contains(out.Result.Error, "no person or client is attached") {
		t.Fatalf("no asker: %+v", out.Result)
	}
	// Blocked paths are refused by the tool's own check and by the host.
	out = f.call("word-count", `{"path":"/etc/passwd"}`)
	if out.Result.Success || out.Result.Error != "Cannot access: /etc/passwd" {
		t.Fatalf("blocked: %+v", out.Result)
	}
	// Arguments that do not match the schema never reach the tool.
	out = f.call("word-count", `{"file":"x"}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "invalid arguments for word-count: at (root): missing property 'path'") {
		t.Fatalf("invalid args: %+v", out.Result)
	}
}

type fakeLLM struct {
	mu    sync.Mutex
	calls []string
}

func (l *fakeLLM) GenerateText(_ context.Context, r tool.TextRequest) (string, error) {
	l.mu.Lock()
	l.calls = append(l.calls, "text:"+r.System+"|"+r.Prompt)
	l.mu.Unlock()
	return "hi there", nil
}
func (l *fakeLLM) GenerateStructured(_ context.Context, r tool.StructuredRequest) (json.RawMessage, error) {
	l.mu.Lock()
	l.calls = append(l.calls, "structured:"+r.Prompt)
	l.mu.Unlock()
	return json.RawMessage(`{"summary":"short"}`), nil
}

// Every member of the ToolContext, exercised by a real tool in a real worker, with the host
// deciding: on Node and on Bun.
func TestEveryContextMember(t *testing.T) {
	for _, runtime := range []string{"node", "bun"} {
		t.Run(runtime, func(t *testing.T) { testEveryContextMember(t, runtime) })
	}
}

func testEveryContextMember(t *testing.T, runtime string) {
	f := newFixture(t)
	f.copyTool("ctx-probe")
	f.opts.RuntimePreference = runtime
	if runtime == "bun" {
		f.opts.BunPath = bunPath(t)
	}
	llm := &fakeLLM{}
	f.opts.LLM = llm
	f.opts.ServerEnv = []string{"PATH=/usr/bin:/bin", "PROBE_FROM_SERVER=server-value", "PROBE_FROM_DOTENV=server-loses",
		"OPENAI_API_KEY=sk-secret", "PROBE_UNDECLARED=nope", "ANTHROPIC_API_KEY=sk-ant"}
	if err := os.WriteFile(f.layout.DotEnv, []byte("PROBE_FROM_DOTENV=dotenv-value\nUNDECLARED_DOTENV=hidden\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.start()
	if e := f.entry("ctx-probe"); e.Runtime != runtime || e.Status != host.StatusOK {
		t.Fatalf("entry %+v", e)
	}

	outside := filepath.Join(t.TempDir(), "outside.txt")
	_ = os.WriteFile(outside, []byte("outside content"), 0o644)
	extra := t.TempDir()
	_ = os.WriteFile(filepath.Join(extra, "note.txt"), []byte("extra note"), 0o644)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "fetched ok") }))
	defer srv.Close()

	asker := &answerer{byTyp: map[string]string{
		"permission": "true", "single_select": `"staging"`, "text": `"feature/x"`, "confirm": "true",
		"form": `{"type":"form","answers":[{"question":"Environment?","answer":"prod"},{"question":"Run migrations?","answer":false}]}`,
	}}
	ledger := tool.NewLedger()
	session := tool.NewSessionFacts()
	var progress []tool.Progress
	args := fmt.Sprintf(`{"outside":%q,"fetchUrl":%q,"extra":%q}`, outside, srv.URL, extra)
	out := f.call("ctx-probe", args, func(c *host.Call) {
		c.CallID = "call_probe_1"
		c.Asker, c.Ledger, c.Session = asker, ledger, session
		c.Progress = func(p tool.Progress) { progress = append(progress, p) }
	})
	var r map[string]json.RawMessage
	r = result[map[string]json.RawMessage](t, out)
	get := func(key string) string { return string(r[key]) }
	want := func(key, contains string) {
		t.Helper()
		if !strings.Contains(get(key), contains) {
			t.Errorf("%s = %s; want it to contain %s", key, get(key), contains)
		}
	}

	tempDir, _ := f.sessionTemp("s1")
	want("facts", fmt.Sprintf(`"sessionId":"s1","workspacePath":%q,"workspaceId":"w1","callId":"call_probe_1"`, f.ws))
	want("facts", `"signalIsAbortSignal":true,"signalAlias":true,"aborted":false`)
	want("facts", fmt.Sprintf(`"tempDir":%q`, tempDir))
	for _, k := range []string{"mkdir", "write", "append", "writeBytes", "rename", "rm", "tempWrite"} {
		want(k, `{"ok":true`)
	}
	want("read", `"value":"hello world"`)
	want("readBytes", `"value":[104,101,108,108,111]`)
	want("readDir", `{"name":"a.txt","isDirectory":false,"isFile":true}`)
	want("readDir", `{"name":"deeper","isDirectory":true,"isFile":false}`)
	want("exists", `"value":true`)
	want("existsMissing", `"value":false`)
	want("stat", `"size":11,"isFile":true,"isDirectory":false,"modifiedIsDate":true`)
	want("readMissing", `"code":"ENOENT"`)
	want("resolve", filepath.Join(f.ws, "x/y.ts"))
	want("detectLanguage", `["typescript","text"]`)
	// Policy: blocked always; outside refused naming the path, then allowed after a grant.
	want("blocked", `"ok":false`)
	want("blocked", `/etc/hostname`)
	want("outsideBefore", `"ok":false`)
	want("outsideBefore", outside)
	want("outsideAsk", `true`)
	want("outsideAfter", `"value":"outside content"`)
	want("paths", fmt.Sprintf(`"resolveRel":%q`, filepath.Join(f.ws, "src/index.ts")))
	want("paths", `"resolveAbs":"/abs/p"`)
	want("paths", `"withinSub":true,"withinSibling":false`)
	want("paths", `"sensitive":[true,false],"sensitivePatterns":12`)
	want("paths", `"blocked":[true,false]`)
	// Asks of every type reach the asker and their answers reach the tool.
	want("select", `"staging"`)
	want("text", `"feature/x"`)
	want("confirm", `true`)
	want("form", `{"type":"form","answers":[{"question":"Environment?","answer":"prod"},{"question":"Run migrations?","answer":false}]}`)
	want("badAsk", `"ok":false`)
	want("badAsk", `ask type \"nonsense\" is unknown`)
	// Env: declared only; .env before the server; provider keys withheld even when declared.
	want("env", `"dotenv":"dotenv-value","server":"server-value","missing":null,"providerKey":null,"undeclared":null`)
	want("env", `Required environment variable not set: PROBE_MISSING`)
	var env struct {
		ProcessEnvKeys []string `json:"processEnvKeys"`
		ChildEnv       []string `json:"childEnv"`
	}
	_ = json.Unmarshal(r["env"], &env)
	for _, keys := range [][]string{env.ProcessEnvKeys, env.ChildEnv} {
		for _, forbidden := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PROBE_UNDECLARED", "UNDECLARED_DOTENV"} {
			if slices.Contains(keys, forbidden) {
				t.Errorf("%s is visible to the tool's process: %v", forbidden, keys)
			}
		}
		if !slices.Contains(keys, "PROBE_FROM_DOTENV") || !slices.Contains(keys, "PATH") {
			t.Errorf("declared and base variables missing: %v", keys)
		}
	}
	// LLM, session facts, fetch, workspace paths.
	want("llmText", `"value":"hi there"`)
	want("llmStructured", `"value":{"summary":"short"}`)
	if len(llm.calls) != 2 || llm.calls[0] != "text:Be brief.|Say hi" {
		t.Errorf("llm calls %v", llm.calls)
	}
	want("session", `{"count":1}`)
	if v, ok := session.Get("seen"); !ok || string(v) != `{"count":1}` {
		t.Errorf("session fact not kept by the host: %s", v)
	}
	want("fetch", `"value":"fetched ok"`)
	want("addPathBefore", `"ok":false`)
	want("addPath", `"ok":true`)
	want("addPathAfter", `"value":"extra note"`)
	want("allowedAfterAdd", extra)
	if get("allowedAfterRemove") != "[]" {
		t.Errorf("allowedAfterRemove %s", get("allowedAfterRemove"))
	}
	// The host recorded every change with undo data; the tool's own record is there too.
	changes := ledger.Changes()
	ops := map[string]int{}
	for _, c := range changes {
		ops[c.Op]++
		if c.Op != "" && (c.Before == nil || c.Tool != "ctx-probe" || c.CallID != "call_probe_1" || !c.Disk) {
			t.Errorf("change without undo data or attribution: %+v", c)
		}
	}
	for _, op := range []string{"mkdir", "write", "append", "rename", "rm"} {
		if ops[op] == 0 {
			t.Errorf("no ledger entry for %s: %+v", op, ops)
		}
	}
	if ops[""] != 1 {
		t.Errorf("the tool's own ledger.record is missing: %+v", changes)
	}
	// Logger, progress, console output: attributed, and the protocol survived the console.
	// ctx.logger lines come over the protocol before the result; console output comes on
	// the worker's stdout, read by another goroutine, and may land just after the call.
	for _, line := range []string{"probe log line", "probe warning", "console output must not corrupt the protocol"} {
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(f.logs.all(), line) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(f.logs.all(), line) {
			t.Errorf("log line %q missing from:\n%s", line, f.logs.all())
		}
	}
	if len(progress) != 1 || progress[0].Message != "halfway" || progress[0].Total != 2 {
		t.Errorf("progress %+v", progress)
	}
	// The asker saw every person-facing ask once, and the permission for the extra path.
	var types []string
	for _, a := range asker.asked {
		types = append(types, a.Type)
	}
	if strings.Join(types, ",") != "permission,single_select,text,confirm,form,permission" {
		t.Errorf("asks seen %v", types)
	}
}
