package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The io.modelcontextprotocol/tasks extension (SEP-2663), on the stateless wire (2026-07-28).
//
// The server decides which calls become tasks: a tool that declares
// execution.taskSupport "optional" or "required" (tool.Definition.Execution) runs as a task
// for a request whose _meta clientCapabilities declare the extension (each request speaks
// for itself: there is no session). Such a tools/call is answered at once with a flat
// CreateTaskResult (resultType "task", taskId, status, createdAt, lastUpdatedAt, ttlMs,
// pollIntervalMs) once the task can be got; the client polls tasks/get, whose answer
// inlines the tool's result when the task completed (a tool's error too: completed with
// isError), the JSON-RPC error when it failed (a protocol error), and the asks waiting for
// the client as inputRequests while it is input_required; tasks/update hands answers to
// any of them (the others keep waiting); tasks/cancel stops the call. Both answer an empty
// ack. Without the extension an optional tool's call is a plain call, and a required one's
// is refused with MissingRequiredClientCapability (-32021). tasks/get, tasks/update and
// tasks/cancel of a client that did not declare the extension are refused the same way.
//
// The go-sdk v1.8.0 has no tasks and refuses tasks/* before any middleware, so these are
// answered beside it, as the stateless fast path is (httpstateless.go), after the checks
// the go-sdk would make: _meta names 2026-07-28 as the header does and carries
// clientCapabilities, and Mcp-Method and Mcp-Name name the method and the task (SEP-2243:
// HeaderMismatch, -32020, otherwise). A request that fails the first is the go-sdk's to
// refuse. Tasks belong to no session: the taskId, random, names the task to whoever holds
// the server's token. tasks/result and tasks/list (2025-11-25) do not exist here: the
// go-sdk answers them as unknown methods.

// extTasks is the tasks extension's identifier.
const extTasks = "io.modelcontextprotocol/tasks"

// taskInputs are the asks of a task of the extension waiting for the client's answers,
// each under its key (the ask's own, else ask-N).
type taskInputs struct {
	t *task

	mu      sync.Mutex
	pending map[string]inputAsk
	next    int
}

// ask shows req on tasks/get until tasks/update answers it or ctx ends.
func (in *taskInputs) ask(ctx context.Context, key string, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := inputAsk{ctx: ctx, key: key, req: req, reply: make(chan inputReply, 1)}
	in.mu.Lock()
	for _, taken := in.pending[key]; key == "" || taken; _, taken = in.pending[key] {
		in.next++
		key = fmt.Sprintf("ask-%d", in.next)
	}
	in.pending[key] = a
	in.t.set(taskInputRequired, nil)
	in.mu.Unlock()
	select {
	case r := <-a.reply:
		return r.resp, r.err
	case <-ctx.Done():
		in.mu.Lock()
		if in.pending[key].reply == a.reply {
			delete(in.pending, key)
			in.settle()
		}
		in.mu.Unlock()
		return nil, ctx.Err()
	}
}

// settle makes the task working again once no ask waits (in.mu held).
func (in *taskInputs) settle() {
	if len(in.pending) == 0 {
		in.t.set(taskWorking, nil)
	}
}

// requests are the asks waiting, as inputRequests (nil when none).
func (in *taskInputs) requests() mcp.InputRequestMap {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.pending) == 0 {
		return nil
	}
	m := make(mcp.InputRequestMap, len(in.pending))
	for k, a := range in.pending {
		m[k] = a.req
	}
	return m
}

// answer hands the responses to the asks waiting under their keys; keys no ask waits
// under are ignored (SEP-2322: what a server does not recognize, it ignores).
func (in *taskInputs) answer(responses map[string]json.RawMessage) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	for key, raw := range responses {
		a, ok := in.pending[key]
		if !ok {
			continue
		}
		var one mcp.InputResponseMap
		if err := json.Unmarshal(fmt.Appendf(nil, `{%q:%s}`, key, raw), &one); err != nil {
			return invalidParams("tasks/update: inputResponses[%q] is not an answer to %s: %v", key, inputMethod(a.req), err)
		}
		delete(in.pending, key)
		a.reply <- inputReply{resp: one[key]}
	}
	in.settle()
	return nil
}

func inputMethod(req mcp.InputRequest) string {
	switch req.(type) {
	case *mcp.ElicitParams:
		return "elicitation/create"
	case *mcp.ListRootsParams:
		return "roots/list"
	}
	return "sampling/createMessage"
}

// taskExtWire is a task as the extension shows it: CreateTaskResult (resultType "task")
// or tasks/get's DetailedTask (resultType "complete", with result, error or inputRequests).
type taskExtWire struct {
	ResultType     string              `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          int64               `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
	Error          *taskError          `json:"error,omitempty"`
	InputRequests  mcp.InputRequestMap `json:"inputRequests,omitempty"`
	Meta           mcp.Meta            `json:"_meta,omitempty"`
}

// taskError is a failed task's JSON-RPC error.
type taskError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// extWire is the task as created (detailed false) or as tasks/get shows it.
func (t *task) extWire(detailed bool) taskExtWire {
	var requests mcp.InputRequestMap
	if detailed {
		requests = t.inputs.requests()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := taskExtWire{
		ResultType: "task", TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt:     t.created.UTC().Format(time.RFC3339Nano),
		LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTLMs:         t.ttl.Milliseconds(), PollIntervalMs: TaskPollInterval.Milliseconds(),
	}
	if !detailed {
		return w
	}
	w.ResultType = "complete"
	switch t.status {
	case taskInputRequired:
		w.InputRequests = requests
	case taskCompleted:
		res := *t.res
		if res.Content == nil {
			res.Content = []mcp.Content{}
		}
		w.Result = &res
	case taskFailed:
		w.Error = asTaskError(t.err)
	}
	return w
}

func asTaskError(err error) *taskError {
	if jerr, ok := err.(*jsonrpc.Error); ok {
		return &taskError{Code: jerr.Code, Message: jerr.Message, Data: jerr.Data}
	}
	return &taskError{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// declaresTasks reports whether a request's clientCapabilities declare the extension.
func declaresTasks(caps map[string]any) bool {
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[extTasks]
	return ok
}

// extRequest is the part of a stateless request the extension reads.
type extRequest struct {
	Name           string                     `json:"name"`
	RequestState   string                     `json:"requestState"`
	TaskID         *string                    `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	Arguments      json.RawMessage            `json:"arguments"`
	Meta           mcp.Meta                   `json:"_meta"`
}

// serveTaskExt answers a stateless POST of the extension (see the top of this file) and
// reports whether it did.
func (s *Server) serveTaskExt(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil || rebound(r) || !jsonContent(r) {
		return false
	}
	body, ok := peekBody(r)
	if !ok || !bytes.Contains(body, []byte(`"tasks/`)) && !bytes.Contains(body, []byte(`"tools/call"`)) {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() || len(req.Params) == 0 {
		return false
	}
	var p extRequest
	if json.Unmarshal(req.Params, &p) != nil {
		return false
	}
	version, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	caps, hasCaps := p.Meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	if version != rev20260728 || version != r.Header.Get("Mcp-Protocol-Version") || !hasCaps {
		return false // the go-sdk's to refuse
	}
	var res any
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		res, err = s.taskExtRequest(r, req.Method, p, declaresTasks(caps))
	case "tools/call":
		if !s.taskCall(r, p) || !declaresTasks(caps) && s.taskSupport(p.Name) != tool.TaskRequired {
			return false // a plain call, the go-sdk's
		}
		switch {
		case !declaresTasks(caps) || !s.asksFirst(p.Name):
			res, err = s.startTaskExt(p, declaresTasks(caps))
		case p.RequestState == "":
			return false // its first round: a plain call of the go-sdk's, which asks by rounds
		default:
			res, err = s.taskFromRounds(p)
		}
	default:
		return false
	}
	writeExtAnswer(w, req, res, err)
	return true
}

// taskCall reports whether a tools/call is the extension's: a tool that supports tasks,
// with headers that name it (a mismatch is the go-sdk's to refuse).
func (s *Server) taskCall(r *http.Request, p extRequest) bool {
	return s.taskSupport(p.Name) != tool.TaskForbidden &&
		r.Header.Get("Mcp-Method") == "tools/call" && strings.TrimSpace(r.Header.Get("Mcp-Name")) == p.Name
}

// taskSupport is a listed tool's task support (TaskForbidden for a name not listed).
func (s *Server) taskSupport(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ts := s.tasksOf[name]; ts != "" {
		return ts
	}
	return tool.TaskForbidden
}

// startTaskExt starts a task for a tools/call, or refuses a required one's call from a
// client that did not declare the extension. It answers once tasks/get can get the task.
func (s *Server) startTaskExt(p extRequest, negotiated bool) (any, error) {
	if !negotiated { // a tool that runs only as a task (serveTaskExt leaves the others to the go-sdk)
		return nil, missingTasks(fmt.Sprintf("tool %s runs only as a task: declare the %s extension in clientCapabilities", p.Name, extTasks))
	}
	h := s.toolHandler(p.Name)
	if h == nil {
		return nil, invalidParams("tools/call: unknown tool %.80q: tools/list names the tools", p.Name)
	}
	params := &mcp.CallToolParamsRaw{Name: p.Name, Meta: p.Meta}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		params.Arguments = p.Arguments
	}
	t, ctx, err := s.newExtTask()
	if err != nil {
		return nil, err
	}
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		res, err := h(ctx, &mcp.CallToolRequest{Params: params})
		if err == nil && res == nil {
			err = fmt.Errorf("tool %s: the handler returned no result", p.Name)
		}
		t.end(res, err)
	}()
	return s.created(t), nil
}

// newExtTask makes a working task of the extension, which tasks/get can get, and the
// context its call runs with (cancelled by tasks/cancel and when the call ends).
func (s *Server) newExtTask() (*task, context.Context, error) {
	now := time.Now()
	t := &task{id: randomID(), created: now, updated: now, ttl: DefaultTaskTTL, status: taskWorking, done: make(chan struct{})}
	t.inputs = &taskInputs{t: t, pending: map[string]inputAsk{}}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), taskKey{}, t))
	t.cancel = cancel
	t.expiry = time.AfterFunc(t.ttl, func() { s.tasks.expire(nil, t) })
	if err := s.tasks.add(nil, t); err != nil {
		t.stop()
		return nil, nil, err
	}
	return t, ctx, nil
}

// created is the CreateTaskResult of t.
func (s *Server) created(t *task) taskExtWire {
	w := t.extWire(false)
	w.Meta = mcp.Meta{mcp.MetaKeyServerInfo: s.impl}
	return w
}

// end records the call's outcome: completed with its result (a tool's own error is a
// result, isError), failed with a protocol error; a task cancelled meanwhile stays so.
func (t *task) end(res *mcp.CallToolResult, err error) {
	t.mu.Lock()
	t.res, t.err = res, err
	if !terminal(t.status) {
		t.status = taskCompleted
		if err != nil {
			t.status = taskFailed
		}
	}
	t.updated = time.Now()
	t.mu.Unlock()
	t.cancel()
	close(t.done)
}

// asksFirst reports whether a tool's calls become tasks only once their first answers
// come (tool.Execution.TaskAfterInput).
func (s *Server) asksFirst(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.afterInput[name]
}

// taskFromRounds answers the retry of a call that asked by input-required rounds
// (TaskAfterInput) with a task: the retry's answers go to the asks that wait, and the call
// goes on as a task of the extension, its later asks waiting on tasks/get and its outcome
// the task's.
func (s *Server) taskFromRounds(p extRequest) (any, error) {
	pc, err := s.rounds.take(p.RequestState, p.Name)
	if err != nil {
		return nil, err
	}
	var responses mcp.InputResponseMap
	if len(p.InputResponses) > 0 {
		raw, _ := json.Marshal(p.InputResponses)
		if err := json.Unmarshal(raw, &responses); err != nil {
			pc.cancel()
			return nil, invalidParams("tools/call: inputResponses do not decode: %v", err)
		}
	}
	t, ctx, err := s.newExtTask()
	if err != nil {
		pc.cancel()
		return nil, err
	}
	pc.answer(responses)
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		t.end(pc.followAsTask(ctx, t.inputs))
	}()
	return s.created(t), nil
}

// taskExtRequest answers tasks/get, tasks/update and tasks/cancel.
func (s *Server) taskExtRequest(r *http.Request, method string, p extRequest, negotiated bool) (any, error) {
	if r.Header.Get("Mcp-Method") != method {
		return nil, headerMismatch("the Mcp-Method header %.40q does not name the request's method %s", r.Header.Get("Mcp-Method"), method)
	}
	if p.TaskID == nil || *p.TaskID == "" {
		return nil, invalidParams("%s: params.taskId is missing: give the taskId that tools/call returned", method)
	}
	if name := strings.TrimSpace(r.Header.Get("Mcp-Name")); name != *p.TaskID {
		return nil, headerMismatch("the Mcp-Name header %.40q does not name the request's task %.40q", name, *p.TaskID)
	}
	if !negotiated {
		return nil, missingTasks(fmt.Sprintf("%s is a method of the %s extension: declare it in clientCapabilities", method, extTasks))
	}
	t := s.tasks.get(nil, *p.TaskID)
	if t == nil {
		return nil, invalidParams("%s: no task %.40q (it expired, or was never created): call the tool again", method, *p.TaskID)
	}
	ack := map[string]any{"resultType": "complete", "_meta": mcp.Meta{mcp.MetaKeyServerInfo: s.impl}}
	switch method {
	case "tasks/get":
		w := t.extWire(true)
		w.Meta = mcp.Meta{mcp.MetaKeyServerInfo: s.impl}
		return w, nil
	case "tasks/update":
		if err := t.inputs.answer(p.InputResponses); err != nil {
			return nil, err
		}
		return ack, nil
	}
	// tasks/cancel: the host's Stop, as for a 2025-11-25 task; a task that already ended
	// is acked all the same (only an unknown taskId is an error).
	t.mu.Lock()
	cancelled := !terminal(t.status)
	if cancelled {
		t.status, t.updated = taskCancelled, time.Now()
		t.message = "cancelled by the client"
	}
	t.mu.Unlock()
	if cancelled {
		t.cancel()
	}
	return ack, nil
}

func headerMismatch(format string, args ...any) error {
	return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf(format, args...)}
}

// missingTasks is MissingRequiredClientCapability naming the extension (SEP-2575).
func missingTasks(msg string) error {
	return &jsonrpc.Error{
		Code: mcp.CodeMissingRequiredClientCapabilities, Message: msg,
		Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + extTasks + `":{}}}}`),
	}
}

// writeExtAnswer writes the extension's answer as JSON; errors with the status the
// stateless wire gives them (400 for invalid params, a header mismatch, a missing
// capability).
func writeExtAnswer(w http.ResponseWriter, req *jsonrpc.Request, res any, err error) {
	resp := &jsonrpc.Response{ID: req.ID, Error: err}
	status := 0
	if err != nil {
		status = errorStatus(err)
		if jerr, ok := err.(*jsonrpc.Error); ok && jerr.Code == mcp.CodeHeaderMismatch {
			status = http.StatusBadRequest
		}
	} else if resp.Result, err = json.Marshal(res); err != nil {
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: encoding the result: %v", req.Method, err)}
	}
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: encoding the answer: %v", req.Method, err), http.StatusInternalServerError)
		return
	}
	statelessAnswer{out: out, status: status}.write(w)
}

// extMiddleware declares the extension on the stateless wire: in server/discover's
// capabilities, and as execution.taskSupport on the tools that support tasks.
func (s *Server) extMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.DiscoverResult:
			if r.Capabilities != nil {
				caps := *r.Capabilities
				caps.Extensions = maps.Clone(caps.Extensions)
				caps.AddExtension(extTasks, nil)
				r.Capabilities = &caps
			}
		case *mcp.ListToolsResult:
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && usesRounds(ss) {
				s.mu.Lock()
				support := maps.Clone(s.tasksOf)
				s.mu.Unlock()
				if len(support) > 0 {
					return toolsWithExecution{r, support}, nil
				}
			}
		}
		return res, nil
	}
}

// toolsWithExecution is tools/list's result with execution.taskSupport on the tools that
// declare it, which the go-sdk's Tool has no field for.
type toolsWithExecution struct {
	*mcp.ListToolsResult
	support map[string]string // tool name → optional or required
}

func (r toolsWithExecution) MarshalJSON() ([]byte, error) {
	return listWithExecution(r.ListToolsResult, func(name string) json.RawMessage {
		if ts := r.support[name]; ts != "" {
			b, _ := json.Marshal(tool.Execution{TaskSupport: ts})
			return b
		}
		return nil
	})
}
