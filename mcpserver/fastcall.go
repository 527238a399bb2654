package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk's way to a tool handler costs more than the tool call it leads to, when the
// tool is quick: it decodes a request's params twice, each time into a fresh 32 KB buffer,
// and hands the request through three goroutines. On `jean2 mcp` (bench/mcp) that was
// ~30 µs of CPU and ~72 KB of garbage per tools/call. So a session connected through
// Server.Connect or Server.Run answers the common tools/call itself: a call of a listed
// tool, from a client on a classic protocol revision (before 2026-07-28), that is not a
// multi-round-trip retry. It decodes the params once, runs the same handler the go-sdk
// would, and writes the same response. Everything else — initialize, tools/list, pings,
// the client's answers to elicitation and sampling, cancellations, and any call that does
// not fit — goes to the go-sdk as before, so the session's state (its initialize
// parameters, log level, the requests jean2 sends) stays the go-sdk's.
//
// What the go-sdk does for a call that this path does too: drop a call whose request id is
// in use, unanswered; run calls concurrently; cancel a call on notifications/cancelled naming it and
// when the client goes away; answer an empty content list as [] rather than null.
//
// The calls' goroutines belong to the Server: closing the connection cancels them (it
// cannot wait for them, since the go-sdk closes it holding a lock their notifications
// need), Run waits for its session's once the session has ended, and Server.Close cancels
// and waits for any still running.

var errServerClosed = errors.New("mcp server: closed")

// DefaultNextCallPoll is how long a stdio session polls for the client's next message after
// the answer to its only call in flight, before it sleeps (internal/rawio.Expect). A client
// calling tools back to back (bench/mcp) sends it within that time, and then jean2 is not
// asleep when it comes: on a virtual machine, waking a CPU that went idle costs tens of
// microseconds, a sizeable part of a quick call. A client that takes longer costs this much
// CPU per call (the poll lets jean2's other goroutines run meanwhile).
const DefaultNextCallPoll = 200 * time.Microsecond

// fastTransport wraps a transport so that its connection serves fast calls.
type fastTransport struct {
	inner mcp.Transport
	srv   *Server
	conn  *fastConn // set by Connect
}

func (t *fastTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	// Calls outlive neither the session nor a cancellation, but not the ctx of Connect
	// either: the go-sdk's own calls are cancelled only by the client or the session's end.
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &fastConn{srv: t.srv, base: base, cancelAll: cancel, calls: map[jsonrpc.ID]context.CancelFunc{}, ready: make(chan struct{}), spare: make(chan func())}
	if st, ok := t.inner.(*StdioTransport); ok {
		// Fast calls start on the transport's reading goroutine and their answers are
		// written as encoded here.
		sc := st.connect(c.take)
		c.inner, c.taking, c.lines, c.expect = sc, true, sc, sc.expectMessage
	} else {
		inner, err := t.inner.Connect(ctx)
		if err != nil {
			cancel()
			return nil, err
		}
		c.inner = inner
	}
	if !t.srv.addConn(c) {
		cancel()
		_ = c.inner.Close()
		return nil, errServerClosed
	}
	t.conn = c
	return c, nil
}

// fastConn is a connection whose Read serves fast calls on the way.
type fastConn struct {
	inner   mcp.Connection
	taking  bool                // inner hands each message to take first (a StdioTransport)
	lines   lineWriter          // inner's raw writer, when it has one
	expect  func(time.Duration) // stdioConn.expectMessage, when inner is one
	srv     *Server
	session atomic.Pointer[mcp.ServerSession] // set once Connect returns
	// ready is closed once session is set (or Connect failed): the reading goroutine can
	// take a call before the goroutine that called Connect has stored the session.
	ready chan struct{}
	// spare hands a call to a goroutine whose call ended and that waits for another (run).
	spare chan func()

	base      context.Context
	cancelAll context.CancelFunc

	mu     sync.Mutex
	calls  map[jsonrpc.ID]context.CancelFunc // fast calls running, by request id
	closed bool
	wg     sync.WaitGroup // the fast calls' goroutines
}

// lineWriter writes one encoded message, newline included (stdioConn.writeLine).
type lineWriter interface {
	writeLine(data []byte) error
}

// Read hands the go-sdk every message but the fast calls, which it starts (unless inner
// handed them to take already).
func (c *fastConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.inner.Read(ctx)
		if err != nil {
			// The client is gone (or sent what cannot be read): its calls are over.
			c.cancelAll()
			return nil, err
		}
		if c.taking || !c.take(msg) {
			return msg, nil
		}
	}
}

// take starts msg as a fast call and reports true, or notes a cancellation and reports
// false: every other message is the go-sdk's.
func (c *fastConn) take(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	if isTaskMessage(req) {
		if ss := c.session.Load(); offersTasks(ss) {
			c.startTaskRequest(ss, req)
			return true
		}
		return false // the go-sdk refuses it, or runs the call without a task
	}
	switch req.Method {
	case "tools/call":
		return c.tryFast(req)
	case "notifications/cancelled":
		c.cancelled(req.Params) // and on to the go-sdk, which cancels its own calls
	}
	return false
}

// callParams are tools/call params decoded by exact key, as the go-sdk decodes them.
type callParams map[string]json.RawMessage

// fastParams decodes a tools/call's params for a fast call, or reports !ok for params the
// go-sdk must see: ones that do not decode (it says what is wrong), a multi-round-trip
// retry, or the newer protocol's per-request form (it checks them). raw is every key.
func fastParams(p json.RawMessage) (params *mcp.CallToolParamsRaw, raw callParams, ok bool) {
	if err := json.Unmarshal(p, &raw); err != nil || raw == nil {
		return nil, nil, false
	}
	if _, ok := raw["requestState"]; ok {
		return nil, nil, false
	}
	if _, ok := raw["inputResponses"]; ok {
		return nil, nil, false
	}
	params = &mcp.CallToolParamsRaw{}
	if err := json.Unmarshal(raw["name"], &params.Name); err != nil {
		return nil, nil, false
	}
	if m, ok := raw["_meta"]; ok {
		if err := json.Unmarshal(m, &params.Meta); err != nil {
			return nil, nil, false
		}
		if _, perRequest := params.Meta["io.modelcontextprotocol/protocolVersion"]; perRequest {
			return nil, nil, false
		}
	}
	if a, ok := raw["arguments"]; ok && !bytes.Equal(bytes.TrimSpace(a), []byte("null")) {
		params.Arguments = a
	}
	return params, raw, true
}

// tryFast starts req as a fast call when it fits, and reports whether it did.
func (c *fastConn) tryFast(req *jsonrpc.Request) bool {
	if !req.ID.IsValid() || len(req.Params) == 0 {
		return false
	}
	ss := c.session.Load()
	if ss == nil {
		// The session is being stored (connect): wait for it rather than leave the call
		// to the slow path for want of a pointer.
		select {
		case <-c.ready:
		case <-c.base.Done():
		}
		ss = c.session.Load()
	}
	if ss == nil {
		return false
	}
	if ss.InitializeParams() == nil || usesRounds(ss) {
		return false // not initialized yet (the go-sdk refuses it), or a 2026-07-28 client
	}
	params, _, ok := fastParams(req.Params)
	if !ok {
		return false
	}
	h := c.srv.toolHandler(params.Name)
	if h == nil {
		return false // an unknown tool: the go-sdk's error
	}

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if _, taken := c.calls[req.ID]; taken {
		c.mu.Unlock()
		// As the go-sdk: no answer, since one under that id would read as the running
		// call's.
		c.srv.log.Warn("tools/call refused: its request id is in use by a running call", "id", req.ID.Raw())
		return true
	}
	ctx, cancel := context.WithCancel(c.base)
	c.calls[req.ID] = cancel
	alone := len(c.calls) == 1
	c.wg.Add(1)
	c.srv.calls.Add(1)
	c.mu.Unlock()

	c.run(func() {
		defer c.srv.calls.Done()
		defer c.wg.Done()
		res, err := h(ctx, &mcp.CallToolRequest{Session: ss, Params: params})
		c.mu.Lock()
		delete(c.calls, req.ID)
		idle := len(c.calls) == 0
		c.mu.Unlock()
		cancel()
		if err == nil && res == nil {
			err = fmt.Errorf("tool %s: the handler returned no result", params.Name)
		}
		if err == nil && res.Content == nil {
			res.Content = []mcp.Content{} // as the go-sdk: [] rather than null
		}
		c.respond(req.ID, res, err)
		if idle && c.expect != nil && c.srv.opts.NextCallPoll > 0 {
			// A client that calls tools one after another sends its next call soon.
			c.expect(c.srv.opts.NextCallPoll)
		}
	})
	if alone {
		// Let the call run up to its first wait (the request written to the tool's
		// worker) before this goroutine reads stdin again: that read almost always finds
		// nothing and parks, and done first it sits on the call's path (bench/mcp: ~9 µs
		// p50). With other calls in flight the client is busy and the read finds work.
		runtime.Gosched()
	}
	return true
}

// respond writes the answer to a fast call as the go-sdk would encode it: the result with
// HTML characters unescaped, in {"jsonrpc":"2.0","id":…,"result":…}.
func (c *fastConn) respond(id jsonrpc.ID, res *mcp.CallToolResult, err error) {
	// The client may be gone; then there is no one to tell, so write errors are dropped.
	if err == nil && c.lines != nil {
		buf := bytes.NewBufferString(`{"jsonrpc":"2.0","id":`)
		idJSON, ierr := json.Marshal(id.Raw())
		if ierr == nil {
			buf.Write(idJSON)
			buf.WriteString(`,"result":`)
			enc := json.NewEncoder(buf) // Encode ends the value with a newline
			enc.SetEscapeHTML(false)
			if err = enc.Encode(res); err == nil {
				line := buf.Bytes()
				line[len(line)-1] = '}'
				_ = c.lines.writeLine(append(line, '\n'))
				return
			}
			err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("encoding the result: %v", err)}
		}
	}
	resp := callResponse(id, res, err, "")
	_ = c.inner.Write(context.Background(), resp)
}

// run runs a fast call on a goroutine whose call ended, when one waits, else on a new one.
// A new goroutine starts on a small stack, which a call through the host grows (copying it)
// twice or more: runtime.copystack was ~7 % of jean2's CPU under bench/mcp. A goroutine
// that waits after its call keeps the stack it grew. Those that wait end with the
// connection (cancelAll). A call read before the goroutine of the one just answered waits
// again takes a new goroutine, so there are about as many as calls ran at once.
func (c *fastConn) run(call func()) {
	select {
	case c.spare <- call:
	default:
		go c.serveCalls(call)
	}
}

// serveCalls runs call, then each call run hands it, until the connection ends.
func (c *fastConn) serveCalls(call func()) {
	c.srv.callGoroutines.Add(1)
	defer c.srv.callGoroutines.Add(-1)
	for {
		call()
		select {
		case call = <-c.spare:
		case <-c.base.Done():
			return
		}
	}
}

// startTaskRequest answers a task message (tasks.go) on its own goroutine, since
// tasks/result waits for the task's end. Closing the connection cancels the wait.
func (c *fastConn) startTaskRequest(ss *mcp.ServerSession, req *jsonrpc.Request) {
	c.srv.calls.Add(1)
	go func() {
		defer c.srv.calls.Done()
		res, err := c.srv.taskRequest(c.base, ss, req)
		resp := &jsonrpc.Response{ID: req.ID, Error: err}
		if err == nil {
			resp.Result, err = json.Marshal(res)
			if err != nil {
				resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: encoding the result: %v", req.Method, err)}
			}
		}
		_ = c.inner.Write(context.Background(), resp)
	}()
}

// cancelled cancels the fast call a notifications/cancelled names, if it is one.
func (c *fastConn) cancelled(params json.RawMessage) {
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
	cancel := c.calls[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (c *fastConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	return c.inner.Write(ctx, msg)
}

// Close cancels the fast calls still running and closes the connection; their goroutines
// end on their own (see wait).
func (c *fastConn) Close() error {
	c.stop()
	c.srv.removeConn(c)
	return c.inner.Close()
}

// stop takes no more fast calls and cancels those running.
func (c *fastConn) stop() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancelAll()
}

// wait waits for the fast calls' goroutines; after Close, or once cancelAll, they end soon.
func (c *fastConn) wait() { c.wg.Wait() }

func (c *fastConn) SessionID() string { return c.inner.SessionID() }
