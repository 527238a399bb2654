package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (protocol revision 2025-11-25, basic/utilities/tasks): a client that puts a `task`
// field in a tools/call's params gets a task at once (CreateTaskResult) instead of the
// result, while the call runs in the background; it then polls tasks/get, fetches the
// result with tasks/result (which waits for the end), stops it with tasks/cancel, and sees
// its tasks with tasks/list. The client decides: a call without `task` runs on its request
// however long it takes.
//
// The go-sdk v1.8.0 has no tasks (it cannot declare the capability, drops the `task`
// param, and refuses the tasks/* methods before any middleware sees them), so they are
// served beside it: the stdio and in-memory connections take these messages in fastConn,
// HTTP sessions in HTTPHandler, and a receiving middleware adds the capability to
// initialize's result and `execution.taskSupport` to each listed tool. Tasks belong to the
// MCP session that created them: another session's tasks/get, result or cancel of the
// same id is answered as if it did not exist. Clients on 2026-07-28 or later (where tasks
// became an extension) are not offered them.

// Task statuses (2025-11-25).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// metaRelatedTask is the _meta key that ties a message to its task.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

const (
	// DefaultTaskTTL is how long a task is kept from its creation when the client asks no
	// ttl; MaxTaskTTL bounds what it may ask. A task still running at the end of its ttl
	// is cancelled, and then forgotten with its result.
	DefaultTaskTTL = time.Hour
	MaxTaskTTL     = 24 * time.Hour
	// TaskPollInterval is the polling interval jean2 suggests to clients.
	TaskPollInterval = 250 * time.Millisecond
	// maxTasksPerSession bounds the tasks one session keeps at a time (running or
	// finished but within their ttl), so a client cannot pile up calls without end.
	maxTasksPerSession = 1000
)

// taskTable holds the tasks of every session of a Server.
type taskTable struct {
	mu        sync.Mutex
	bySession map[*mcp.ServerSession]map[string]*task
	closed    bool
}

func newTaskTable() *taskTable {
	return &taskTable{bySession: map[*mcp.ServerSession]map[string]*task{}}
}

// task is one task-augmented tools/call.
type task struct {
	id      string
	created time.Time
	ttl     time.Duration
	cancel  context.CancelFunc
	done    chan struct{} // closed when the call has ended and res/err are set
	expiry  *time.Timer

	// inputs are the asks of a task of the tasks extension (2026-07-28, taskext.go), which
	// wait for tasks/update; nil for a 2025-11-25 task, whose asks go to the client.
	inputs *taskInputs

	mu      sync.Mutex
	status  string
	message string
	updated time.Time
	res     *mcp.CallToolResult
	err     error
}

// taskWire is a task as MCP shows it (Task in the schema).
type taskWire struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

func (t *task) wire() taskWire {
	t.mu.Lock()
	defer t.mu.Unlock()
	return taskWire{
		TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt:     t.created.UTC().Format(time.RFC3339Nano),
		LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTL:           t.ttl.Milliseconds(), PollInterval: TaskPollInterval.Milliseconds(),
	}
}

func terminal(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}

// set changes the status (never out of a terminal one) and, when msg is not nil, the
// status message.
func (t *task) set(status string, msg *string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if terminal(t.status) {
		return
	}
	if status != "" {
		t.status = status
	}
	if msg != nil {
		t.message = *msg
	}
	t.updated = time.Now()
}

// taskKey is the context key of the task a handler runs for.
type taskKey struct{}

func taskOf(ctx context.Context) *task {
	t, _ := ctx.Value(taskKey{}).(*task)
	return t
}

// follow makes the call's progress the task's status message, and its asks waiting for the
// client its input_required status.
func (t *task) follow(call *host.Call) {
	progress := call.Progress
	call.Progress = func(p tool.Progress) {
		msg := p.Message
		if msg == "" && p.Total > 0 {
			msg = fmt.Sprintf("%g/%g", p.Current, p.Total)
		}
		if msg != "" {
			t.set("", &msg)
		}
		if progress != nil {
			progress(p)
		}
	}
	if asker := call.Asker; asker != nil && t.inputs == nil { // taskInputs keep the status of their own
		call.Asker = tool.AskerFunc(func(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
			t.set(taskInputRequired, nil)
			defer t.set(taskWorking, nil)
			return asker.Ask(ctx, a)
		})
	}
}

// offersTasks reports whether ss's client is offered tasks: initialized, on 2025-11-25 or
// later but before 2026-07-28.
func offersTasks(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= rev20251125 && p.ProtocolVersion < rev20260728
}

// isTaskMessage reports whether req is one jean2 answers beside the go-sdk: a tasks/*
// request, or a tools/call asking for a task.
func isTaskMessage(req *jsonrpc.Request) bool {
	switch req.Method {
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/list":
		return req.ID.IsValid()
	case "tools/call":
		if !req.ID.IsValid() || !bytes.Contains(req.Params, []byte(`"task"`)) {
			return false
		}
		var p struct {
			Task json.RawMessage `json:"task"`
		}
		return json.Unmarshal(req.Params, &p) == nil && len(p.Task) > 0 && string(p.Task) != "null"
	}
	return false
}

// taskRequest answers a message isTaskMessage accepted, from session ss. tasks/result
// waits for the task to end (or ctx, the request's, to be done).
func (s *Server) taskRequest(ctx context.Context, ss *mcp.ServerSession, req *jsonrpc.Request) (any, error) {
	if req.Method == "tools/call" {
		return s.startTask(ss, req.Params)
	}
	var p struct {
		TaskID string `json:"taskId"`
		Cursor string `json:"cursor"`
	}
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, invalidParams("%s: params are not an object with a taskId string: %v", req.Method, err)
		}
	}
	if req.Method == "tasks/list" {
		if p.Cursor != "" {
			return nil, invalidParams("tasks/list: cursor %.40q is not one jean2 gave (it lists all tasks of the session in one page)", p.Cursor)
		}
		return map[string]any{"tasks": s.tasks.list(ss)}, nil
	}
	if p.TaskID == "" {
		return nil, invalidParams("%s: params.taskId is missing: give the taskId that tools/call returned", req.Method)
	}
	t := s.tasks.get(ss, p.TaskID)
	if t == nil {
		return nil, invalidParams("%s: no task %.40q in this session (it expired, or was never created here): call the tool again", req.Method, p.TaskID)
	}
	switch req.Method {
	case "tasks/get":
		return t.wire(), nil
	case "tasks/cancel":
		t.mu.Lock()
		status := t.status
		if !terminal(status) {
			t.status, t.updated = taskCancelled, time.Now()
			t.message = "cancelled by the client"
		}
		t.mu.Unlock()
		if terminal(status) {
			return nil, invalidParams("tasks/cancel: task %s is already %s; only a working task can be cancelled", t.id, status)
		}
		t.cancel() // the host's Stop: the tool's signal aborts, its worker is told
		return t.wire(), nil
	default: // tasks/result
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if t.err != nil {
			return nil, t.err
		}
		res := *t.res
		meta := mcp.Meta{}
		for k, v := range t.res.Meta {
			meta[k] = v
		}
		meta[metaRelatedTask] = map[string]string{"taskId": t.id}
		res.Meta = meta
		if res.Content == nil {
			res.Content = []mcp.Content{}
		}
		return &res, nil
	}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// startTask starts a task-augmented tools/call and answers its CreateTaskResult.
func (s *Server) startTask(ss *mcp.ServerSession, raw json.RawMessage) (any, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      mcp.Meta        `json:"_meta"`
		Task      struct {
			TTL *float64 `json:"ttl"`
		} `json:"task"`
		RequestState   json.RawMessage `json:"requestState"`
		InputResponses json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("tools/call: params: %v", err)
	}
	if len(p.RequestState) > 0 || len(p.InputResponses) > 0 {
		return nil, invalidParams("tools/call %s: a task cannot carry requestState or inputResponses", p.Name)
	}
	h := s.toolHandler(p.Name)
	if h == nil {
		return nil, invalidParams("tools/call: unknown tool %.80q: tools/list names the tools", p.Name)
	}
	ttl := DefaultTaskTTL
	if p.Task.TTL != nil {
		if *p.Task.TTL <= 0 {
			return nil, invalidParams("tools/call %s: task.ttl must be a positive number of milliseconds, not %g", p.Name, *p.Task.TTL)
		}
		ttl = min(time.Duration(*p.Task.TTL)*time.Millisecond, MaxTaskTTL)
	}
	params := &mcp.CallToolParamsRaw{Name: p.Name, Meta: p.Meta}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		params.Arguments = p.Arguments
	}

	now := time.Now()
	t := &task{id: randomID(), created: now, updated: now, ttl: ttl, status: taskWorking, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), taskKey{}, t))
	t.cancel = cancel
	t.expiry = time.AfterFunc(ttl, func() { s.tasks.expire(ss, t) })
	if err := s.tasks.add(ss, t); err != nil {
		t.stop()
		return nil, err
	}
	// The creation is answered with the task as it was created, working (every task
	// starts so), before the tool runs: a fast tool would otherwise have the answer say
	// working or completed as the scheduler goes.
	created := map[string]any{"task": t.wire()}
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		res, err := h(ctx, &mcp.CallToolRequest{Session: ss, Params: params})
		if err == nil && res == nil {
			err = fmt.Errorf("tool %s: the handler returned no result", p.Name)
		}
		t.mu.Lock()
		t.res, t.err = res, err
		if !terminal(t.status) {
			t.status = taskCompleted
			if err != nil || res.IsError {
				// 2025-11-25: a tool result with isError set fails the task too.
				t.status = taskFailed
			}
		}
		t.updated = time.Now()
		t.mu.Unlock()
		cancel()
		close(t.done)
	}()
	return created, nil
}

// add records t under ss; the first task of a session has the session's end cancel and
// forget its tasks.
func (tt *taskTable) add(ss *mcp.ServerSession, t *task) error {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.closed {
		return errServerClosed
	}
	m := tt.bySession[ss]
	if m == nil {
		m = map[string]*task{}
		tt.bySession[ss] = m
		if ss != nil { // the stateless wire's tasks (ss nil, taskext.go) have no session to end
			go tt.forgetAtEnd(ss)
		}
	}
	if len(m) >= maxTasksPerSession {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("jean2 keeps %d tasks of this client already: wait for some to expire, or cancel them, before starting more", len(m))}
	}
	m[t.id] = t
	return nil
}

// forgetAtEnd cancels and forgets a session's tasks when it ends.
func (tt *taskTable) forgetAtEnd(ss *mcp.ServerSession) {
	_ = ss.Wait()
	tt.mu.Lock()
	gone := tt.bySession[ss]
	delete(tt.bySession, ss)
	tt.mu.Unlock()
	for _, t := range gone {
		t.stop()
	}
}

func (tt *taskTable) get(ss *mcp.ServerSession, id string) *task {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.bySession[ss][id]
}

// list is the session's tasks, oldest first.
func (tt *taskTable) list(ss *mcp.ServerSession) []taskWire {
	tt.mu.Lock()
	ts := make([]*task, 0, len(tt.bySession[ss]))
	for _, t := range tt.bySession[ss] {
		ts = append(ts, t)
	}
	tt.mu.Unlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].created.Before(ts[j].created) })
	out := make([]taskWire, len(ts))
	for i, t := range ts {
		out[i] = t.wire()
	}
	return out
}

// expire forgets t at the end of its ttl, cancelling it if it still runs.
func (tt *taskTable) expire(ss *mcp.ServerSession, t *task) {
	tt.mu.Lock()
	if m := tt.bySession[ss]; m[t.id] == t {
		delete(m, t.id)
	}
	tt.mu.Unlock()
	t.cancel()
}

// stop cancels t's call and its expiry.
func (t *task) stop() {
	if t.expiry != nil {
		t.expiry.Stop()
	}
	t.cancel()
}

// close cancels every task and takes no more.
func (tt *taskTable) close() {
	tt.mu.Lock()
	tt.closed = true
	all := tt.bySession
	tt.bySession = map[*mcp.ServerSession]map[string]*task{}
	tt.mu.Unlock()
	for _, m := range all {
		for _, t := range m {
			t.stop()
		}
	}
}

// tasksMiddleware declares tasks to the clients offered them: capabilities.tasks in
// initialize's result and execution.taskSupport "optional" on every listed tool.
func tasksMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			if r.ProtocolVersion >= rev20251125 && r.ProtocolVersion < rev20260728 {
				return initializeWithTasks{r}, nil
			}
		case *mcp.ListToolsResult:
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && offersTasks(ss) {
				return toolsWithTasks{r}, nil
			}
		}
		return res, err
	}
}

// initializeWithTasks is initialize's result with capabilities.tasks, which the go-sdk's
// ServerCapabilities has no field for.
type initializeWithTasks struct{ *mcp.InitializeResult }

var tasksCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

func (r initializeWithTasks) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	var caps map[string]json.RawMessage
	if len(m["capabilities"]) > 0 {
		if err := json.Unmarshal(m["capabilities"], &caps); err != nil {
			return nil, err
		}
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	caps["tasks"] = tasksCapability
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// toolsWithTasks is tools/list's result with execution.taskSupport on each tool, which the
// go-sdk's Tool has no field for. Every jean2 tool may run as a task or not.
type toolsWithTasks struct{ *mcp.ListToolsResult }

var taskSupportOptional = json.RawMessage(`{"taskSupport":"optional"}`)

func (r toolsWithTasks) MarshalJSON() ([]byte, error) {
	return listWithExecution(r.ListToolsResult, func(string) json.RawMessage { return taskSupportOptional })
}

// listWithExecution encodes a tools/list result with each tool's execution object as
// executionOf gives it (none for nil).
func listWithExecution(res *mcp.ListToolsResult, executionOf func(name string) json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(m["tools"], &tools); err != nil {
		return nil, err
	}
	for _, t := range tools {
		var name string
		_ = json.Unmarshal(t["name"], &name)
		if e := executionOf(name); e != nil {
			t["execution"] = e
		}
	}
	if m["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
