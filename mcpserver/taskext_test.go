package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
)

// extPost sends one stateless request (2026-07-28) with the headers a client sends, its
// _meta declaring caps, and returns the HTTP status and the JSON-RPC answer.
func extPost(t *testing.T, url, method, name string, params map[string]any, caps string, headers ...string) (int, map[string]json.RawMessage) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest("POST", url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if i := strings.Index(string(data), "data: "); strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && i >= 0 {
		data = []byte(strings.TrimSpace(strings.SplitN(string(data[i+6:]), "\n", 2)[0]))
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

const withTasks = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// taskTools are tools that declare task support, as a tool author would.
func taskTools(r *rig) {
	optional := &tool.Execution{TaskSupport: tool.TaskOptional}
	r.src.tools = []tool.Tool{
		&tool.Func{Def: tool.Definition{Name: "job", Description: "Sleep ms, then answer or fail.", InputSchema: obj(`{"type":"object"}`), Execution: optional},
			Run: func(ctx context.Context, _ *tool.Context, args json.RawMessage) tool.Result {
				var in struct {
					Ms   int
					Fail bool
				}
				_ = json.Unmarshal(args, &in)
				select {
				case <-ctx.Done():
					return tool.Errorf("aborted")
				case <-time.After(time.Duration(in.Ms) * time.Millisecond):
				}
				if in.Fail {
					return tool.Errorf("the job failed")
				}
				return tool.Success("done")
			}},
		&tool.Func{Def: tool.Definition{Name: "must", Description: "Only as a task.", InputSchema: obj(`{"type":"object"}`), Execution: &tool.Execution{TaskSupport: tool.TaskRequired}},
			Run: func(context.Context, *tool.Context, json.RawMessage) tool.Result { return tool.Success("ran") }},
		&tool.Func{Def: tool.Definition{Name: "two-asks", Description: "Ask two things at once.", InputSchema: obj(`{"type":"object"}`), Execution: optional},
			Run: func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
				return askTogether(ctx, c, []tool.Ask{{Type: tool.AskText, Question: "Name?", Key: "name"}, {Type: tool.AskConfirm, Question: "Sure?"}})
			}},
		&tool.Func{Def: tool.Definition{Name: "ask-then-work", Description: "Ask a name, then work and confirm.", InputSchema: obj(`{"type":"object"}`),
			Execution: &tool.Execution{TaskSupport: tool.TaskRequired, TaskAfterInput: true}},
			Run: func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
				name, err := c.Asker.Ask(ctx, tool.Ask{Type: tool.AskText, Question: "Name?", Key: "user_name", Name: "name"})
				if err != nil {
					return tool.Errorf("%v", err)
				}
				sure, err := c.Asker.Ask(ctx, tool.Ask{Type: tool.AskConfirm, Question: "Sure?", Key: "sure"})
				if err != nil {
					return tool.Errorf("%v", err)
				}
				var who string
				_ = json.Unmarshal(name, &who)
				return tool.Success(fmt.Sprintf("Hello, %s! (%s)", who, sure))
			}},
		&tool.Func{Def: tool.Definition{Name: "refuse", Description: "Fail as a protocol error.", InputSchema: obj(`{"type":"object"}`), Execution: optional},
			Run: func(_ context.Context, _ *tool.Context, args json.RawMessage) tool.Result {
				var in struct{ Code int64 }
				_ = json.Unmarshal(args, &in)
				return tool.ProtocolErrorf(in.Code, "the backend is down")
			}},
	}
}

func newTaskRig(t *testing.T) (*rig, string) {
	r := newRig(t, taskTools)
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close)
	return r, ts.URL
}

func field[T any](t *testing.T, m map[string]json.RawMessage, key string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(m[key], &v); err != nil {
		t.Fatalf("%s of %s: %v", key, toJSON(m), err)
	}
	return v
}

// pollTask gets the task until its status is one of want, and returns it.
func pollTask(t *testing.T, url, id string, want ...string) map[string]json.RawMessage {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, resp := extPost(t, url, "tasks/get", id, map[string]any{"taskId": id}, withTasks)
		got := field[map[string]json.RawMessage](t, resp, "result")
		status := field[string](t, got, "status")
		for _, w := range want {
			if status == w {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s, want one of %v: %s", id, status, want, toJSON(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The server declares the extension and makes a task of a call of a tool that supports
// tasks from a client that declared it: a flat CreateTaskResult the client can get at once,
// then the result inlined (a tool's error as completed with isError). Without the
// extension the same call is a plain call, and a required tool's call is refused.
func TestTasksExtensionLifecycle(t *testing.T) {
	_, url := newTaskRig(t)
	_, disc := extPost(t, url, "server/discover", "", nil, withTasks)
	if !strings.Contains(string(disc["result"]), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Fatalf("server/discover: %s", disc["result"])
	}

	_, created := extPost(t, url, "tools/call", "job", map[string]any{"name": "job", "arguments": map[string]any{"ms": 300}}, withTasks)
	task := field[map[string]json.RawMessage](t, created, "result")
	id := field[string](t, task, "taskId")
	for _, k := range []string{"requestState", "result", "task", "ttl", "pollInterval"} {
		if _, ok := task[k]; ok {
			t.Errorf("CreateTaskResult carries %s: %s", k, toJSON(task))
		}
	}
	if field[string](t, task, "resultType") != "task" || field[string](t, task, "status") != "working" || field[int64](t, task, "ttlMs") <= 0 {
		t.Fatalf("CreateTaskResult: %s", toJSON(task))
	}
	if got := pollTask(t, url, id, "working", "completed"); field[string](t, got, "taskId") != id {
		t.Fatalf("tasks/get at once: %s", toJSON(got))
	}
	done := pollTask(t, url, id, "completed")
	if field[string](t, done, "resultType") != "complete" || !strings.Contains(string(done["result"]), `"text":"done"`) {
		t.Fatalf("completed: %s", toJSON(done))
	}

	_, failing := extPost(t, url, "tools/call", "job", map[string]any{"name": "job", "arguments": map[string]any{"fail": true}}, withTasks)
	failed := pollTask(t, url, field[string](t, field[map[string]json.RawMessage](t, failing, "result"), "taskId"), "completed", "failed")
	if field[string](t, failed, "status") != "completed" || !strings.Contains(string(failed["result"]), `"isError":true`) {
		t.Fatalf("a tool's error: %s", toJSON(failed))
	}

	_, plain := extPost(t, url, "tools/call", "job", map[string]any{"name": "job", "arguments": map[string]any{}}, `{}`)
	if res := string(plain["result"]); !strings.Contains(res, `"resultType":"complete"`) || strings.Contains(res, "taskId") {
		t.Fatalf("without the extension: %s", toJSON(plain))
	}
	status, refused := extPost(t, url, "tools/call", "must", map[string]any{"name": "must"}, `{}`)
	if status != http.StatusBadRequest || !strings.Contains(string(refused["error"]), `"code":-32021`) ||
		!strings.Contains(string(refused["error"]), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Fatalf("a required tool without the extension: %d %s", status, toJSON(refused))
	}
}

// tasks/get, tasks/update and tasks/cancel check the client declared the extension, the
// headers name the task, and the task exists; cancel acks with nothing, twice.
func TestTasksExtensionMethods(t *testing.T) {
	_, url := newTaskRig(t)
	_, created := extPost(t, url, "tools/call", "job", map[string]any{"name": "job", "arguments": map[string]any{"ms": 10000}}, withTasks)
	id := field[string](t, field[map[string]json.RawMessage](t, created, "result"), "taskId")
	cases := []struct {
		method, name, caps string
		status             int
		code               string
	}{
		{"tasks/get", id, `{}`, 400, `"code":-32021`},
		{"tasks/get", "another", withTasks, 400, `"code":-32020`},
		{"tasks/get", "no-such-task", withTasks, 400, `"code":-32602`},
	}
	for _, c := range cases {
		taskID := id
		if c.name == "no-such-task" {
			taskID = c.name
		}
		status, resp := extPost(t, url, c.method, c.name, map[string]any{"taskId": taskID}, c.caps)
		if status != c.status || !strings.Contains(string(resp["error"]), c.code) {
			t.Errorf("%s named %s with caps %s: %d %s, want %d %s", c.method, c.name, c.caps, status, toJSON(resp), c.status, c.code)
		}
	}
	for range 2 {
		_, ack := extPost(t, url, "tasks/cancel", id, map[string]any{"taskId": id}, withTasks)
		if res := string(ack["result"]); !strings.Contains(res, `"resultType":"complete"`) || strings.Contains(res, "taskId") || strings.Contains(res, "status") {
			t.Fatalf("cancel ack: %s", toJSON(ack))
		}
		pollTask(t, url, id, "cancelled")
	}
}

// A task's asks wait as inputRequests under their keys; tasks/update answers any of
// them, the others still wait, and the task goes on once none does.
func TestTasksExtensionInput(t *testing.T) {
	_, url := newTaskRig(t)
	_, created := extPost(t, url, "tools/call", "two-asks", map[string]any{"name": "two-asks"}, withTasks)
	id := field[string](t, field[map[string]json.RawMessage](t, created, "result"), "taskId")
	var waiting map[string]json.RawMessage
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		waiting = field[map[string]json.RawMessage](t, pollTask(t, url, id, "input_required"), "inputRequests")
		if len(waiting) == 2 || time.Now().After(deadline) {
			break
		}
	}
	if waiting["name"] == nil || waiting["ask-1"] == nil || !strings.Contains(string(waiting["name"]), `"method":"elicitation/create"`) {
		t.Fatalf("inputRequests: %s", toJSON(waiting))
	}
	_, ack := extPost(t, url, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
		"name": map[string]any{"action": "accept", "content": map[string]any{"answer": "Ada"}}, "unknown": map[string]any{"ignored": true}}}, withTasks)
	if !strings.Contains(string(ack["result"]), `"resultType":"complete"`) {
		t.Fatalf("update ack: %s", toJSON(ack))
	}
	left := field[map[string]json.RawMessage](t, pollTask(t, url, id, "input_required"), "inputRequests")
	if len(left) != 1 || left["ask-1"] == nil {
		t.Fatalf("after answering one: %s", toJSON(left))
	}
	extPost(t, url, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
		"ask-1": map[string]any{"action": "accept", "content": map[string]any{"answer": true}}}}, withTasks)
	done := pollTask(t, url, id, "completed", "failed")
	if !strings.Contains(string(done["result"]), `[\"Ada\",true]`) {
		t.Fatalf("completed: %s", toJSON(done))
	}
}

// A tool that fails with tool.ProtocolErrorf fails the call as a JSON-RPC error with its
// code and message, and its task as failed with that error and no result; a code that is
// the server's own (-32601) makes it a tool error saying so instead.
func TestToolProtocolError(t *testing.T) {
	_, url := newTaskRig(t)
	_, plain := extPost(t, url, "tools/call", "refuse", map[string]any{"name": "refuse", "arguments": map[string]any{"code": -32603}}, `{}`)
	if e := string(plain["error"]); !strings.Contains(e, `"code":-32603`) || !strings.Contains(e, `"message":"the backend is down"`) || plain["result"] != nil {
		t.Fatalf("a plain call: %s", toJSON(plain))
	}
	_, created := extPost(t, url, "tools/call", "refuse", map[string]any{"name": "refuse", "arguments": map[string]any{"code": 1234}}, withTasks)
	id := field[string](t, field[map[string]json.RawMessage](t, created, "result"), "taskId")
	failed := pollTask(t, url, id, "completed", "failed")
	if field[string](t, failed, "status") != "failed" || failed["result"] != nil ||
		!strings.Contains(string(failed["error"]), `"code":1234`) || !strings.Contains(string(failed["error"]), `"message":"the backend is down"`) {
		t.Fatalf("as a task: %s", toJSON(failed))
	}
	_, reserved := extPost(t, url, "tools/call", "refuse", map[string]any{"name": "refuse", "arguments": map[string]any{"code": -32601}}, `{}`)
	if res := string(reserved["result"]); reserved["error"] != nil || !strings.Contains(res, `"isError":true`) || !strings.Contains(res, "is the server's to give") {
		t.Fatalf("a reserved code: %s", toJSON(reserved))
	}
}

// A tool with TaskAfterInput asks its first question by an input-required round (no
// task), becomes a task at the retry that answers it (a CreateTaskResult with no
// requestState), asks its next on tasks/get, and the task's result holds both answers.
func TestTasksExtensionAfterInput(t *testing.T) {
	_, url := newTaskRig(t)
	_, first := extPost(t, url, "tools/call", "ask-then-work", map[string]any{"name": "ask-then-work"}, withTasks)
	round := field[map[string]json.RawMessage](t, first, "result")
	if field[string](t, round, "resultType") != "input_required" || round["taskId"] != nil ||
		field[map[string]json.RawMessage](t, round, "inputRequests")["user_name"] == nil {
		t.Fatalf("round 1: %s", toJSON(first))
	}
	_, second := extPost(t, url, "tools/call", "ask-then-work", map[string]any{"name": "ask-then-work",
		"requestState":   field[string](t, round, "requestState"),
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}}}, withTasks)
	task := field[map[string]json.RawMessage](t, second, "result")
	if field[string](t, task, "resultType") != "task" || task["requestState"] != nil || task["inputRequests"] != nil {
		t.Fatalf("round 2: %s", toJSON(second))
	}
	id := field[string](t, task, "taskId")
	asking := pollTask(t, url, id, "input_required", "completed", "failed")
	if field[map[string]json.RawMessage](t, asking, "inputRequests")["sure"] == nil {
		t.Fatalf("the ask after the task began: %s", toJSON(asking))
	}
	extPost(t, url, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
		"sure": map[string]any{"action": "accept", "content": map[string]any{"answer": true}}}}, withTasks)
	done := pollTask(t, url, id, "completed", "failed")
	if field[string](t, done, "status") != "completed" || !strings.Contains(string(done["result"]), `Hello, Alice! (true)`) {
		t.Fatalf("completed: %s", toJSON(done))
	}

	// The same tool from a client without the extension: refused (it is required).
	status, refused := extPost(t, url, "tools/call", "ask-then-work", map[string]any{"name": "ask-then-work"}, `{"elicitation":{}}`)
	if status != http.StatusBadRequest || !strings.Contains(string(refused["error"]), `"code":-32021`) {
		t.Fatalf("without the extension: %d %s", status, toJSON(refused))
	}
}
