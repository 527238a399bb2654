package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server on 2025-11-25 may list a tool with execution.taskSupport "required": it runs
// only as a task (a tools/call carrying `task`, answered with a CreateTaskResult that the
// client polls with tasks/get and collects with tasks/result). The go-sdk v1.8.0 client
// knows nothing of tasks (it drops `execution` from the listed tools, cannot add `task` to
// a call, and would read a CreateTaskResult as an empty CallToolResult), so jean2 follows
// them beneath it, in the connection: a call of such a tool gets `task: {}` on its way out;
// the CreateTaskResult that answers it is kept from the go-sdk while jean2 polls the task
// with requests of its own (ids "jean2-task-N", never the go-sdk's numbers), and the
// go-sdk receives the task's result as the answer to its call. A cancellation of the call
// (the caller's Stop, the tool's timeout) becomes tasks/cancel. Tools whose taskSupport is
// "optional" are called plainly, on the request.
//
// Only stdio servers are followed so: the go-sdk's streamable HTTP connection learns the
// session's state (its protocol version header, the GET stream) through an unexported
// method (sessionUpdated) that a wrapping connection cannot pass on, so a wrapped HTTP
// connection would lose them. HTTP servers' tasks are followed from their http.Client
// instead (tasks_http.go).

// taskTransport wraps a transport so that its connection follows tasks.
type taskTransport struct{ inner mcp.Transport }

func (t *taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inner, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &taskConn{
		inner: inner, in: make(chan readResult), out: make(chan jsonrpc.Message), done: make(chan struct{}),
		listIDs: map[jsonrpc.ID]bool{}, required: map[string]bool{}, taskCalls: map[jsonrpc.ID]bool{},
		following: map[jsonrpc.ID]context.CancelFunc{}, ours: map[jsonrpc.ID]chan *jsonrpc.Response{},
	}
	go c.pump()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type taskConn struct {
	inner mcp.Connection
	in    chan readResult      // what inner read, from pump
	out   chan jsonrpc.Message // answers jean2 makes for the go-sdk's task calls
	done  chan struct{}
	once  sync.Once
	next  atomic.Int64

	mu        sync.Mutex
	initID    jsonrpc.ID
	offers    bool                                  // the server declared tasks.requests.tools.call
	listIDs   map[jsonrpc.ID]bool                   // tools/list requests in flight
	required  map[string]bool                       // tool name → listed with taskSupport "required"
	taskCalls map[jsonrpc.ID]bool                   // tools/call requests sent with `task`
	following map[jsonrpc.ID]context.CancelFunc     // call id → stops following its task
	ours      map[jsonrpc.ID]chan *jsonrpc.Response // jean2's own requests in flight
}

// pump reads inner for Read, so that Read can also hand out the answers jean2 makes.
func (c *taskConn) pump() {
	for {
		msg, err := c.inner.Read(context.Background())
		select {
		case c.in <- readResult{msg, err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case m := <-c.out:
			return m, nil
		case r := <-c.in:
			if r.err != nil {
				return nil, r.err
			}
			if c.consume(r.msg) {
				continue
			}
			return r.msg, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, fmt.Errorf("mcp connection closed")
		}
	}
}

// consume notes what jean2 needs of msg and reports whether it is jean2's own (an answer
// to its requests, or a CreateTaskResult it follows) rather than the go-sdk's.
func (c *taskConn) consume(msg jsonrpc.Message) bool {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return false
	}
	c.mu.Lock()
	if ch, ok := c.ours[resp.ID]; ok {
		delete(c.ours, resp.ID)
		c.mu.Unlock()
		ch <- resp
		return true
	}
	isInit := c.initID.IsValid() && resp.ID == c.initID
	isList := c.listIDs[resp.ID]
	delete(c.listIDs, resp.ID)
	isTaskCall := c.taskCalls[resp.ID]
	delete(c.taskCalls, resp.ID)
	c.mu.Unlock()
	if resp.Error != nil || len(resp.Result) == 0 {
		return false
	}
	switch {
	case isInit:
		var r struct {
			Capabilities struct {
				Tasks struct {
					Requests struct {
						Tools struct {
							Call json.RawMessage `json:"call"`
						} `json:"tools"`
					} `json:"requests"`
				} `json:"tasks"`
			} `json:"capabilities"`
		}
		if json.Unmarshal(resp.Result, &r) == nil && len(r.Capabilities.Tasks.Requests.Tools.Call) > 0 {
			c.mu.Lock()
			c.offers = true
			c.mu.Unlock()
		}
	case isList:
		var r struct {
			Tools []struct {
				Name      string `json:"name"`
				Execution struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
		}
		if json.Unmarshal(resp.Result, &r) == nil {
			c.mu.Lock()
			for _, t := range r.Tools {
				c.required[t.Name] = t.Execution.TaskSupport == "required"
			}
			c.mu.Unlock()
		}
	case isTaskCall:
		var r struct {
			Task *struct {
				TaskID       string  `json:"taskId"`
				PollInterval float64 `json:"pollInterval"`
			} `json:"task"`
		}
		if json.Unmarshal(resp.Result, &r) != nil || r.Task == nil || r.Task.TaskID == "" {
			return false // the server answered the call itself
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.mu.Lock()
		c.following[resp.ID] = cancel
		c.mu.Unlock()
		go c.follow(ctx, resp.ID, r.Task.TaskID, time.Duration(r.Task.PollInterval)*time.Millisecond)
		return true
	}
	return false
}

func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		switch req.Method {
		case "initialize":
			c.mu.Lock()
			c.initID = req.ID
			c.mu.Unlock()
		case "tools/list":
			c.mu.Lock()
			c.listIDs[req.ID] = true
			c.mu.Unlock()
		case "tools/call":
			if p := c.asTask(req); p != nil {
				copied := *req
				copied.Params = p
				msg = &copied
			}
		case "notifications/cancelled":
			c.cancelled(req.Params)
		}
	}
	return c.inner.Write(ctx, msg)
}

// asTask returns a call's params with `task` added when the tool runs only as a task, and
// records the call; nil leaves it as it is.
func (c *taskConn) asTask(req *jsonrpc.Request) json.RawMessage {
	var p map[string]json.RawMessage
	if !req.ID.IsValid() || json.Unmarshal(req.Params, &p) != nil || p == nil {
		return nil
	}
	var name string
	if json.Unmarshal(p["name"], &name) != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, has := p["task"]; has || !c.offers || !c.required[name] {
		return nil
	}
	p["task"] = json.RawMessage(`{}`)
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	c.taskCalls[req.ID] = true
	return b
}

// cancelled stops following the task of a call the go-sdk gave up on, and cancels it.
func (c *taskConn) cancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	stop := c.following[id]
	delete(c.following, id)
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// follow polls a task until it ends (or waits for input), then hands its result to the
// go-sdk as the answer to call. Stopped (the call was cancelled), it cancels the task.
func (c *taskConn) follow(ctx context.Context, call jsonrpc.ID, taskID string, poll time.Duration) {
	defer func() {
		c.mu.Lock()
		delete(c.following, call)
		c.mu.Unlock()
	}()
	poll = min(max(poll, 50*time.Millisecond), 5*time.Second)
	params, _ := json.Marshal(map[string]string{"taskId": taskID})
	answer := func(resp *jsonrpc.Response) {
		if ctx.Err() != nil {
			return // the go-sdk no longer waits for it
		}
		select {
		case c.out <- &jsonrpc.Response{ID: call, Result: resp.Result, Error: resp.Error}:
		case <-c.done:
		}
	}
	failed := func(format string, args ...any) *jsonrpc.Response {
		return &jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...)}}
	}
	for {
		resp, err := c.request(ctx, "tasks/get", params)
		if err != nil {
			if ctx.Err() != nil {
				c.cancelTask(params)
				return
			}
			answer(failed("following task %s: tasks/get: %v", taskID, err))
			return
		}
		if resp.Error != nil {
			answer(resp)
			return
		}
		var t struct {
			Status       string  `json:"status"`
			PollInterval float64 `json:"pollInterval"`
		}
		_ = json.Unmarshal(resp.Result, &t)
		if t.Status != "working" {
			break // ended, or waits for input: tasks/result waits for the end
		}
		if t.PollInterval > 0 {
			poll = min(max(time.Duration(t.PollInterval)*time.Millisecond, 50*time.Millisecond), 5*time.Second)
		}
		select {
		case <-time.After(poll):
		case <-ctx.Done():
			c.cancelTask(params)
			return
		case <-c.done:
			return
		}
	}
	resp, err := c.request(ctx, "tasks/result", params)
	if err != nil {
		if ctx.Err() != nil {
			c.cancelTask(params)
			return
		}
		answer(failed("following task %s: tasks/result: %v", taskID, err))
		return
	}
	answer(resp)
}

// cancelTask tells the server to cancel a task nobody waits for any more.
func (c *taskConn) cancelTask(params json.RawMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = c.request(ctx, "tasks/cancel", params)
}

// request sends a request of jean2's own and waits for its answer.
func (c *taskConn) request(ctx context.Context, method string, params json.RawMessage) (*jsonrpc.Response, error) {
	id, err := jsonrpc.MakeID(fmt.Sprintf("jean2-task-%d", c.next.Add(1)))
	if err != nil {
		return nil, err
	}
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	c.ours[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.ours, id)
		c.mu.Unlock()
	}()
	if err := c.inner.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, fmt.Errorf("the connection closed")
	}
}

func (c *taskConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.mu.Lock()
		for _, stop := range c.following {
			stop()
		}
		c.mu.Unlock()
	})
	return c.inner.Close()
}

func (c *taskConn) SessionID() string { return c.inner.SessionID() }
