package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Multi-round-trip requests (protocol revision 2026-07-28, SEP-2322): the server may not
// send requests to the client; a tool call that needs input returns an input-required
// result (inputRequests + requestState) and the client calls again with inputResponses.
//
// A jean2 tool is a running program awaiting ctx.ask, not a handler that can start over,
// so the call keeps running between rounds: it is parked under its requestState (a random
// token), and the client's retry hands the answers to the asks that wait and then waits
// for the next ask or the outcome. The go-sdk's own bridge for older clients reruns the
// handler once; jean2 sends those clients classic requests instead, which serve any number
// of asks.

// rounds holds the calls parked on a client's input.
type rounds struct {
	timeout time.Duration
	gather  time.Duration // how long a round waits for more asks (gatherWindow by default)

	mu     sync.Mutex
	parked map[string]*parkedCall
	closed bool
}

func newRounds(timeout, gather time.Duration) *rounds {
	if gather <= 0 {
		gather = gatherWindow
	}
	return &rounds{timeout: timeout, gather: gather, parked: map[string]*parkedCall{}}
}

// parkedCall is one call that may need rounds of input.
type parkedCall struct {
	id     string        // its requestState, a new one for each round
	window time.Duration // how long a round waits for more asks
	tool   string
	ch     *channel
	finish func(host.Outcome) (*mcp.CallToolResult, error)

	inputs chan inputAsk // the call's asks, waiting for a round to carry them
	// Answers the first request carried with no requestState, by key: a client that knows
	// a tool's keys (tool.Ask.Key) answers its asks in advance. Each is used once.
	suppliedMu sync.Mutex
	supplied   mcp.InputResponseMap
	outcome    chan host.Outcome // the call's end
	cancel     context.CancelFunc

	// Owned by the request being served (one at a time).
	waiting map[string]inputAsk // the asks sent in the last round, by key
	next    int                 // for naming input requests
	timer   *time.Timer         // cancels the call when the client does not come back
}

// inputAsk is one request for input and where its answer goes.
type inputAsk struct {
	ctx   context.Context
	key   string // the ask's own key, or "" for ask-N
	req   mcp.InputRequest
	reply chan inputReply
}

type inputReply struct {
	resp mcp.InputResponse
	err  error
}

var errRoundsClosed = errors.New("the MCP server is shutting down")

func (r *rounds) newCall(tool string, ch *channel, finish func(host.Outcome) (*mcp.CallToolResult, error), supplied mcp.InputResponseMap) *parkedCall {
	return &parkedCall{
		tool: tool, ch: ch, finish: finish, supplied: supplied, window: r.gather,
		inputs: make(chan inputAsk, 8), outcome: make(chan host.Outcome, 1),
	}
}

// start runs the call detached from the first request, which ends with the first round.
func (r *rounds) start(ctx context.Context, req *mcp.CallToolRequest, p *parkedCall, invoke func(context.Context) host.Outcome) (*mcp.CallToolResult, error) {
	callCtx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.outcome <- invoke(callCtx) }()
	return r.await(ctx, req, p)
}

// resume hands the client's answers to the asks of the call named by the retry's
// requestState and waits for what the call does next.
func (r *rounds) resume(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := r.take(req.Params.RequestState, req.Params.Name)
	if err != nil {
		return nil, err
	}
	p.answer(req.Params.InputResponses)
	return r.await(ctx, req, p)
}

// take unparks the call a retry's requestState names, which must be a call of toolName
// (a call of another tool is cancelled: its state was misused).
func (r *rounds) take(state, toolName string) (*parkedCall, error) {
	r.mu.Lock()
	p, ok := r.parked[state]
	if ok {
		delete(r.parked, state)
		p.timer.Stop()
	}
	r.mu.Unlock()
	if !ok {
		return nil, errUnknownState(state)
	}
	if toolName != p.tool {
		p.cancel()
		return nil, fmt.Errorf("requestState belongs to a call of %s, not %s", p.tool, toolName)
	}
	return p, nil
}

// answer hands a retry's responses to the asks the last round sent. Keys the round did not
// ask for are ignored (SEP-2322: a server ignores what it does not recognize).
func (p *parkedCall) answer(responses mcp.InputResponseMap) {
	for key, in := range p.waiting {
		resp, ok := responses[key]
		if !ok {
			in.reply <- inputReply{err: fmt.Errorf("the client's retry carried no answer to input request %q", key)}
			continue
		}
		in.reply <- inputReply{resp: resp}
	}
	p.waiting = nil
}

// followAsTask serves a call that became a task of the extension (TaskAfterInput) until it
// ends: its asks wait on the task's inputs (tasks/get, tasks/update), and ctx's end (the
// task cancelled) cancels it. It returns the call's answer.
func (p *parkedCall) followAsTask(ctx context.Context, inputs *taskInputs) (*mcp.CallToolResult, error) {
	for {
		select {
		case out := <-p.outcome:
			p.cancel()
			return p.finish(out)
		case in := <-p.inputs:
			go func() {
				resp, err := inputs.ask(in.ctx, in.key, in.req)
				in.reply <- inputReply{resp: resp, err: err}
			}()
		case <-ctx.Done():
			p.cancel() // the outcome follows
			ctx = context.Background()
		}
	}
}

// await serves one round: the call ends (its result), asks for input (an input-required
// result, the call parked), or the client cancels the request (the call is cancelled).
func (r *rounds) await(ctx context.Context, req *mcp.CallToolRequest, p *parkedCall) (*mcp.CallToolResult, error) {
	p.ch.enter(ctx, req)
	defer p.ch.leave()
	select {
	case out := <-p.outcome:
		p.cancel()
		return p.finish(out)
	case in := <-p.inputs:
		requests := p.gather(in)
		if len(requests) == 0 {
			return r.await(ctx, req, p)
		}
		if err := r.park(p); err != nil {
			p.cancel()
			return nil, err
		}
		return &mcp.CallToolResult{InputRequests: requests, RequestState: p.id}, nil
	case <-ctx.Done():
		p.cancel()
		return nil, ctx.Err()
	}
}

// gatherWindow is how long a round waits for more asks after one arrives: asks made
// together (Promise.all) reach the host one by one, a little apart, and travel in one round.
const gatherWindow = 20 * time.Millisecond

// gather collects the asks of one round, starting with first, each under its own key (the
// ask's, else ask-N; a key taken in the round makes the later ask an ask-N).
func (p *parkedCall) gather(first inputAsk) mcp.InputRequestMap {
	requests := mcp.InputRequestMap{}
	p.waiting = map[string]inputAsk{}
	add := func(in inputAsk) {
		if in.ctx.Err() != nil {
			return // the ask was given up (the call's own timeout); no one waits for it
		}
		key := in.key
		for _, taken := requests[key]; key == "" || taken; _, taken = requests[key] {
			p.next++
			key = fmt.Sprintf("ask-%d", p.next)
		}
		requests[key] = in.req
		p.waiting[key] = in
	}
	add(first)
	window := time.NewTimer(p.window)
	defer window.Stop()
	for {
		select {
		case in := <-p.inputs:
			add(in)
		case <-window.C:
			return requests
		}
	}
}

// park keeps the call until the client's retry, or cancels it after the input timeout.
// Each round gets a requestState of its own (SEP-2322's evolving state): the previous
// round's, once answered, names nothing, so an answer cannot be replayed into a later round.
func (r *rounds) park(p *parkedCall) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errRoundsClosed
	}
	id := randomID() + randomID()
	p.id = id
	r.parked[id] = p
	p.timer = time.AfterFunc(r.timeout, func() {
		r.mu.Lock()
		_, still := r.parked[id]
		delete(r.parked, id)
		r.mu.Unlock()
		if still {
			p.abandon(fmt.Errorf("the MCP client did not come back with the input within %s", r.timeout))
		}
	})
	return nil
}

// abandon fails the asks that wait and cancels the call.
func (p *parkedCall) abandon(err error) {
	for _, in := range p.waiting {
		in.reply <- inputReply{err: err}
	}
	p.cancel()
}

// close cancels every parked call.
func (r *rounds) close() {
	r.mu.Lock()
	r.closed = true
	parked := r.parked
	r.parked = map[string]*parkedCall{}
	r.mu.Unlock()
	for _, p := range parked {
		p.timer.Stop()
		p.abandon(errRoundsClosed)
	}
}

// ask queues an input request for the next round and waits for its answer, unless the
// call's first request answered it in advance under its key.
func (p *parkedCall) ask(ctx context.Context, key string, req mcp.InputRequest) (mcp.InputResponse, error) {
	if resp, ok := p.takeSupplied(key); ok {
		return resp, nil
	}
	in := inputAsk{ctx: ctx, key: key, req: req, reply: make(chan inputReply, 1)}
	select {
	case p.inputs <- in:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-in.reply:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// takeSupplied returns (once) the answer the call's first request carried under key.
func (p *parkedCall) takeSupplied(key string) (mcp.InputResponse, bool) {
	if key == "" {
		return nil, false // jean2's own ask-N keys are not for a client to guess
	}
	p.suppliedMu.Lock()
	defer p.suppliedMu.Unlock()
	resp, ok := p.supplied[key]
	delete(p.supplied, key)
	return resp, ok
}

// inputPeer reaches the client through input requests: a parked call's rounds, or a
// task's tasks/update (taskext.go). ask sends one and waits for its answer.
type inputPeer struct {
	ask func(ctx context.Context, key string, req mcp.InputRequest) (mcp.InputResponse, error)
}

var _ peer = inputPeer{}

func (p inputPeer) elicit(ctx context.Context, key string, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	resp, err := p.ask(ctx, key, params)
	if err != nil {
		return nil, err
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("the client answered an elicitation with a %T", resp)
	}
	return res, nil
}

func (p inputPeer) sample(ctx context.Context, params *mcp.CreateMessageParams) ([]mcp.Content, string, error) {
	resp, err := p.ask(ctx, "", params)
	if err != nil {
		return nil, "", err
	}
	switch res := resp.(type) {
	case *mcp.CreateMessageWithToolsResult:
		return res.Content, res.Model, nil
	case *mcp.CreateMessageResult:
		return []mcp.Content{res.Content}, res.Model, nil
	}
	return nil, "", fmt.Errorf("the client answered a sampling request with a %T", resp)
}

func (p inputPeer) listRoots(ctx context.Context, key string) (*mcp.ListRootsResult, error) {
	resp, err := p.ask(ctx, key, &mcp.ListRootsParams{})
	if err != nil {
		return nil, err
	}
	res, ok := resp.(*mcp.ListRootsResult)
	if !ok {
		return nil, fmt.Errorf("the client answered a roots/list request with a %T", resp)
	}
	return res, nil
}
