package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawHTTP is a hand-written MCP client over streamable HTTP: the go-sdk's client cannot ask
// for tasks, and this one shows the wire as it is.
type rawHTTP struct {
	t       *testing.T
	url     string
	session string
	next    int
}

type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends one request (or a notification when method starts with notifications/) and
// returns its answer, from a JSON body or the SSE stream.
func (c *rawHTTP) post(method string, params any) rpcAnswer {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	notification := strings.HasPrefix(method, "notifications/")
	if !notification {
		c.next++
		msg["id"] = c.next
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	if notification {
		return rpcAnswer{}
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				data = []byte(d)
				break
			}
		}
	} else {
		data, _ = io.ReadAll(resp.Body)
	}
	var a rpcAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		c.t.Fatalf("%s: answer %q: %v", method, data, err)
	}
	return a
}

func (c *rawHTTP) ok(method string, params any, into any) {
	c.t.Helper()
	a := c.post(method, params)
	if a.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, a.Error.Code, a.Error.Message)
	}
	if err := json.Unmarshal(a.Result, into); err != nil {
		c.t.Fatalf("%s: result %s: %v", method, a.Result, err)
	}
}

func (c *rawHTTP) refused(method string, params any, want string) {
	c.t.Helper()
	a := c.post(method, params)
	if a.Error == nil || a.Error.Code != -32602 || !strings.Contains(a.Error.Message, want) {
		c.t.Fatalf("%s: want invalid params saying %q, got result %s error %+v", method, want, a.Result, a.Error)
	}
}

func rawConnect(t *testing.T, url string) *rawHTTP {
	c := &rawHTTP{t: t, url: url}
	var init struct {
		ProtocolVersion string
		Capabilities    map[string]json.RawMessage
	}
	c.ok("initialize", map[string]any{
		"protocolVersion": "2025-11-25", "clientInfo": map[string]string{"name": "raw", "version": "1"},
		"capabilities": map[string]any{"tasks": map[string]any{"list": map[string]any{}, "cancel": map[string]any{}}},
	}, &init)
	if init.ProtocolVersion != "2025-11-25" || string(init.Capabilities["tasks"]) != `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}` {
		t.Fatalf("initialize: %+v", init)
	}
	c.post("notifications/initialized", nil)
	return c
}

type taskWire struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

// A task-augmented tools/call over streamable HTTP: the task comes back at once, tasks/get
// follows it, tasks/result waits for the CallToolResult, tasks/cancel stops a running call
// through the host (the tool's signal aborts), tasks/list shows the session's tasks. Another
// session cannot see, read or cancel them.
func TestTasksOverHTTP(t *testing.T) {
	r := newRig(t)
	ts := httptest.NewServer(r.srv.HTTPHandler())
	defer ts.Close()
	c := rawConnect(t, ts.URL)

	var list struct {
		Tools []struct {
			Name      string
			Execution struct{ TaskSupport string }
		}
	}
	c.ok("tools/list", map[string]any{}, &list)
	if len(list.Tools) == 0 {
		t.Fatal("no tools listed")
	}
	for _, tl := range list.Tools {
		if tl.Execution.TaskSupport != "optional" {
			t.Fatalf("tool %s: execution.taskSupport %q, want optional", tl.Name, tl.Execution.TaskSupport)
		}
	}

	// A quick call as a task.
	var created struct{ Task taskWire }
	c.ok("tools/call", map[string]any{"name": "count", "arguments": map[string]int{"n": 3}, "task": map[string]any{"ttl": 60000}}, &created)
	if created.Task.TaskID == "" || created.Task.TTL != 60000 || created.Task.PollInterval <= 0 || created.Task.CreatedAt == "" {
		t.Fatalf("CreateTaskResult: %+v", created)
	}
	var result struct {
		Content           []struct{ Text string }
		StructuredContent json.RawMessage
		IsError           bool
		Meta              map[string]struct{ TaskID string } `json:"_meta"`
	}
	c.ok("tasks/result", map[string]string{"taskId": created.Task.TaskID}, &result)
	if result.IsError || len(result.Content) != 1 || result.Content[0].Text != `{"success":true,"result":[1,2,3]}` ||
		result.Meta["io.modelcontextprotocol/related-task"].TaskID != created.Task.TaskID {
		t.Fatalf("tasks/result: %+v", result)
	}
	var got taskWire
	c.ok("tasks/get", map[string]string{"taskId": created.Task.TaskID}, &got)
	if got.Status != "completed" || got.StatusMessage != "at 3" {
		t.Fatalf("tasks/get after the end: %+v", got)
	}

	// A call that fails is a failed task whose result says why.
	c.ok("tools/call", map[string]any{"name": "greet", "arguments": map[string]string{"name": "nobody"}, "task": map[string]any{}}, &created)
	failed := created.Task.TaskID
	c.ok("tasks/result", map[string]string{"taskId": failed}, &result)
	if !result.IsError || !strings.Contains(result.Content[0].Text, "no one to greet") {
		t.Fatalf("failing call's result: %+v", result)
	}
	c.ok("tasks/get", map[string]string{"taskId": failed}, &got)
	if got.Status != "failed" {
		t.Fatalf("failing call's task: %+v", got)
	}

	// A slow call: working until cancelled, and the cancel reaches the tool.
	c.ok("tools/call", map[string]any{"name": "slow", "task": map[string]any{}}, &created)
	slow := created.Task.TaskID
	select {
	case <-r.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow tool did not start")
	}
	c.ok("tasks/get", map[string]string{"taskId": slow}, &got)
	if got.Status != "working" {
		t.Fatalf("running task: %+v", got)
	}

	// Another session sees none of it.
	other := rawConnect(t, ts.URL)
	var otherList struct{ Tasks []taskWire }
	other.ok("tasks/list", map[string]any{}, &otherList)
	if len(otherList.Tasks) != 0 {
		t.Fatalf("another session lists this one's tasks: %+v", otherList)
	}
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		other.refused(m, map[string]string{"taskId": slow}, "no task")
	}

	var cancelled taskWire
	c.ok("tasks/cancel", map[string]string{"taskId": slow}, &cancelled)
	if cancelled.Status != "cancelled" {
		t.Fatalf("tasks/cancel: %+v", cancelled)
	}
	select {
	case err := <-r.aborted:
		if err == nil {
			t.Fatal("the slow tool's signal did not abort")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tasks/cancel did not stop the slow tool")
	}
	c.refused("tasks/cancel", map[string]string{"taskId": slow}, "already cancelled")
	c.refused("tasks/get", map[string]string{"taskId": "nope"}, "no task")
	c.refused("tools/call", map[string]any{"name": "count", "task": map[string]any{"ttl": -1}}, "ttl")

	var mine struct{ Tasks []taskWire }
	c.ok("tasks/list", map[string]any{}, &mine)
	var ids []string
	for _, tk := range mine.Tasks {
		ids = append(ids, tk.TaskID+":"+tk.Status)
	}
	want := fmt.Sprintf("[%s:completed %s:failed %s:cancelled]", mine.Tasks[0].TaskID, failed, slow)
	if fmt.Sprint(ids) != want {
		t.Fatalf("tasks/list: %v, want %v", ids, want)
	}

	// A call without task still answers on its request.
	var plain struct{ Content []struct{ Text string } }
	c.ok("tools/call", map[string]any{"name": "count", "arguments": map[string]int{"n": 1}}, &plain)
	if len(plain.Content) != 1 || plain.Content[0].Text != `{"success":true,"result":[1]}` {
		t.Fatalf("plain call: %+v", plain)
	}
}

// The same through Server.Connect (the path of jean2 mcp's stdio), with messages written by
// hand on an in-memory transport: a task runs and is collected, a task-augmented call of an
// unknown tool is refused, and a session's end cancels its running tasks (the tool's signal
// aborts).
func TestTasksOnConnect(t *testing.T) {
	r := newRig(t)
	open := func(version string) (mcp.Connection, func(method string, params any) *jsonrpc.Response) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := r.srv.Connect(context.Background(), st); err != nil {
			t.Fatal(err)
		}
		conn, err := ct.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		next := 0
		send := func(method string, params any) *jsonrpc.Response {
			t.Helper()
			raw, _ := json.Marshal(params)
			if strings.HasPrefix(method, "notifications/") {
				if err := conn.Write(context.Background(), &jsonrpc.Request{Method: method, Params: raw}); err != nil {
					t.Fatal(err)
				}
				return nil
			}
			next++
			id, _ := jsonrpc.MakeID(float64(next))
			if err := conn.Write(context.Background(), &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
				t.Fatal(err)
			}
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				msg, err := conn.Read(ctx)
				cancel()
				if err != nil {
					t.Fatalf("%s: %v", method, err)
				}
				if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == id {
					return resp
				}
			}
		}
		init := send("initialize", map[string]any{"protocolVersion": version, "clientInfo": map[string]string{"name": "raw", "version": "1"}, "capabilities": map[string]any{}})
		if init.Error != nil {
			t.Fatal(init.Error)
		}
		if !strings.Contains(string(init.Result), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
			t.Fatalf("%s: initialize's result %s", version, init.Result)
		}
		send("notifications/initialized", map[string]any{})
		return conn, send
	}

	_, send := open(classic)
	// greet ends at once, often before its creation is answered: the answer still says
	// working, the task as it was created (a few calls, so that one of them loses the race).
	var resp *jsonrpc.Response
	for range 20 {
		resp = send("tools/call", map[string]any{"name": "greet", "arguments": map[string]string{"name": "ada"}, "task": map[string]any{}})
		var created struct{ Task taskWire }
		if resp.Error != nil || json.Unmarshal(resp.Result, &created) != nil || created.Task.Status != "working" || created.Task.LastUpdatedAt != created.Task.CreatedAt {
			t.Fatalf("task-augmented call: %s %v", resp.Result, resp.Error)
		}
		resp = send("tasks/result", map[string]string{"taskId": created.Task.TaskID})
		if resp.Error != nil || !strings.Contains(string(resp.Result), `"structuredContent":{"greeting":"hello ada"}`) {
			t.Fatalf("tasks/result: %s %v", resp.Result, resp.Error)
		}
	}
	if resp = send("tools/call", map[string]any{"name": "nosuch", "task": map[string]any{}}); resp.Error == nil || !strings.Contains(resp.Error.Error(), `unknown tool "nosuch"`) {
		t.Fatalf("unknown tool as a task: %s %v", resp.Result, resp.Error)
	}

	conn, send := open(classic)
	resp = send("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	if resp.Error != nil {
		t.Fatal(resp.Error)
	}
	select {
	case <-r.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow tool did not start")
	}
	_ = conn.Close()
	select {
	case <-r.aborted:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's end did not cancel its task")
	}
}

// The task messages answered beside the go-sdk keep its DNS-rebinding protection: a POST
// through the loopback address whose Host header names another host is refused, even with
// a valid session id. So is one that is not application/json (what a page can send without
// asking first).
func TestTasksKeepRebindingProtection(t *testing.T) {
	r := newRig(t)
	ts := httptest.NewServer(r.srv.HTTPHandler())
	defer ts.Close()
	c := rawConnect(t, ts.URL)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tasks/list","params":{}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"count","arguments":{"n":1},"task":{}}}`,
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Host = "evil.example:80"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", c.session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s with Host evil.example: HTTP %d %s, want 403", body, resp.StatusCode, b)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tasks/list","params":{}}`))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("tasks/list as text/plain: HTTP %d %s, want 415", resp.StatusCode, b)
	}
}
