// Package jsonrpc owns line-delimited JSON-RPC 2.0 over an io.Reader and an io.Writer: one
// JSON object per line, requests, responses and notifications in both directions. The host
// uses it to talk to tool workers and a Go worker uses it to talk back, so nothing here
// knows which side it is on.
package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jean2/jean2/internal/rawio"
)

// ErrClosed is (wrapped in) the error of every call that could not finish because the
// connection ended.
var ErrClosed = errors.New("jsonrpc: connection closed")

// Handler serves the peer's requests and notifications. Requests are served concurrently,
// each on its own goroutine, and ctx is cancelled when the connection ends. Notifications
// are served one at a time on the read loop, in the order they arrived and before any
// message that followed them, so a notification handler must return quickly and must not
// call the peer. The result of a notification is ignored. Returning an *Error answers with
// its code; any other error answers CodeInternalError with its text.
type Handler interface {
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// Options tune a connection. The zero value (or nil) is ready to use.
type Options struct {
	// MaxLineSize bounds one incoming message; a longer line ends the connection with a
	// *LineTooLongError. Default DefaultMaxLineSize.
	MaxLineSize int
	// MaxResponseSize, when set below MaxLineSize, bounds one incoming answer (a line whose
	// beginning does not show a "method" member): a longer one is refused by its length,
	// before it is decoded and without being held whole, as a *ResponseTooLongError — the
	// error of the request it answers when its id comes before its result, else the end of
	// the connection. Requests and notifications keep MaxLineSize.
	MaxResponseSize int
	// Logger receives what the connection cannot tell the peer (malformed lines without an
	// id, responses nobody waits for). Default: discard.
	Logger *slog.Logger
	// AnswerPoll is how long the reader polls for the answer to a request that is alone in
	// flight before it sleeps until the answer comes (rawio.Expect): for a peer that
	// usually answers within that time, a round trip then saves a wake-up. Zero never
	// polls; so does a reader that is not a pollable file.
	AnswerPoll time.Duration
}

// Conn is one JSON-RPC connection. Close it when done; it also ends by itself when the
// reader fails (the peer closed its end), when the writer fails, or on a protocol error.
type Conn struct {
	r       io.Reader
	w       io.Writer
	handler Handler
	log     *slog.Logger
	lines   *lineReader
	rawR    io.Reader     // what lines reads from (rawio.Reader of r)
	poll    time.Duration // Options.AnswerPoll

	ctx    context.Context // handlers' context, cancelled when the connection ends
	cancel context.CancelCauseFunc

	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]*Pending
	waiting atomic.Int64 // len(pending), readable without the lock
	burst   atomic.Bool  // the last read brought several answers: their callers are sending too
	err     error        // why the connection ended; nil while it runs

	wmu     sync.Mutex
	wcond   *sync.Cond
	wbuf    []byte // messages waiting for the writer goroutine
	wclosed bool
	writing bool            // a write is in progress (caller's or the writer goroutine's)
	spare   []byte          // the caller-side write buffer, reused
	raw     syscall.RawConn // w as a pollable file, for non-blocking writes; nil otherwise
	rawW    io.Writer       // w, written raw when it is a pollable file (internal/rawio)

	writerDone chan struct{}
	done       chan struct{}
	handlers   sync.WaitGroup
}

// NewConn starts a connection: a reader goroutine and a writer goroutine. If r or w
// implement io.Closer they are closed when the connection ends; a reader that cannot be
// closed keeps the read loop (and so Done and Close) waiting until it returns an error.
func NewConn(r io.Reader, w io.Writer, h Handler, opts *Options) *Conn {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxLineSize <= 0 {
		o.MaxLineSize = DefaultMaxLineSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	rawR := rawio.Reader(r)
	c := &Conn{
		r: r, w: w, handler: h, log: o.Logger,
		rawR: rawR, poll: o.AnswerPoll,
		lines:      newLineReader(rawR, o.MaxLineSize, o.MaxResponseSize),
		pending:    make(map[int64]*Pending),
		writerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
	c.wcond = sync.NewCond(&c.wmu)
	c.raw = rawio.Conn(w)
	c.rawW = rawio.Writer(w)
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	go c.writeLoop()
	go c.readLoop()
	return c
}

// Done is closed when the connection has ended and its read and write loops have stopped.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err reports why the connection ended: nil while it runs, ErrClosed after Close, or the
// read, write or protocol error that ended it.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection: calls waiting for an answer fail, messages not yet written are
// dropped, handlers' contexts are cancelled. Close waits for the connection's goroutines,
// handlers included, so it must not be called from a handler.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	<-c.done
	c.handlers.Wait()
	return nil
}

// Pending is a request sent and not yet answered.
type Pending struct {
	conn   *Conn
	id     int64
	done   chan struct{}
	result json.RawMessage
	err    error
}

// Done is closed when the answer has arrived or the connection ended.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Result is the answer once Done is closed: the raw result, or an *Error from the peer, or
// an error wrapping ErrClosed.
func (p *Pending) Result() (json.RawMessage, error) {
	<-p.done
	return p.result, p.err
}

// Abandon stops waiting for the answer; a late answer is ignored.
func (p *Pending) Abandon() {
	p.conn.mu.Lock()
	if _, ok := p.conn.pending[p.id]; ok {
		delete(p.conn.pending, p.id)
		p.conn.waiting.Add(-1)
	}
	p.conn.mu.Unlock()
}

// Start sends a request and returns at once; wait on the Pending for the answer. Params
// that implement Appender are written straight into the outgoing buffer.
func (c *Conn) Start(method string, params any) (*Pending, error) {
	app, direct := params.(Appender)
	var raw []byte
	if !direct {
		var err error
		if raw, err = marshalValue(params); err != nil {
			return nil, fmt.Errorf("jsonrpc: %s: params cannot be serialized: %w", method, err)
		}
	}
	p := &Pending{conn: c, id: c.nextID.Add(1), done: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil {
		err := c.closedError()
		c.mu.Unlock()
		return nil, err
	}
	c.pending[p.id] = p
	c.waiting.Add(1)
	c.mu.Unlock()
	var appendErr error
	err := c.write(func(b []byte) []byte {
		if !direct {
			return appendRequest(b, p.id, method, raw)
		}
		start := len(b)
		b = appendRequestHead(b, p.id, method)
		if b, appendErr = app.AppendJSON(b); appendErr != nil {
			return b[:start]
		}
		return append(b, "}\n"...)
	})
	if err == nil && appendErr != nil {
		err = fmt.Errorf("jsonrpc: %s: params cannot be serialized: %w", method, appendErr)
	}
	if err != nil {
		p.Abandon()
		return nil, err
	}
	if c.poll > 0 {
		// Poll only for a lone request's answer: with more in flight, or right after a
		// read that brought several answers (whose callers are sending again), the reader
		// will have answers to read, and a poll would hold a CPU that the peer and the
		// other callers need.
		if c.waiting.Load() == 1 && !c.burst.Load() {
			rawio.Expect(c.rawR, c.poll)
		} else {
			rawio.Expect(c.rawR, 0)
		}
	}
	return p, nil
}

// Call sends a request and waits for its answer, which is unmarshalled into result (a
// *json.RawMessage receives it as is; nil discards it). When ctx is done first the answer is
// abandoned and the context's cause returned.
func (c *Conn) Call(ctx context.Context, method string, params any, result any) error {
	p, err := c.Start(method, params)
	if err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Abandon()
		return fmt.Errorf("jsonrpc: %s: %w", method, context.Cause(ctx))
	}
	if p.err != nil {
		return p.err
	}
	switch r := result.(type) {
	case nil:
		return nil
	case *json.RawMessage:
		*r = p.result
		return nil
	default:
		if err := json.Unmarshal(p.result, result); err != nil {
			return fmt.Errorf("jsonrpc: %s: result does not fit %T: %w", method, result, err)
		}
		return nil
	}
}

// Notify sends a notification.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := marshalValue(params)
	if err != nil {
		return fmt.Errorf("jsonrpc: %s: params cannot be serialized: %w", method, err)
	}
	return c.write(func(b []byte) []byte { return appendNotification(b, method, raw) })
}

// closedError is the error for work that cannot proceed; c.mu must be held.
func (c *Conn) closedError() error {
	if c.err == nil || errors.Is(c.err, ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: %w", ErrClosed, c.err)
}

// fail ends the connection with cause (the first cause wins).
func (c *Conn) fail(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = cause
	pending := c.pending
	c.pending = nil
	c.waiting.Store(0)
	err := c.closedError()
	c.mu.Unlock()

	for _, p := range pending {
		p.err = err
		close(p.done)
	}
	c.cancel(err)
	c.wmu.Lock()
	c.wclosed = true
	c.wbuf = nil
	c.wcond.Broadcast()
	c.wmu.Unlock()
	// Closing unblocks a reader or writer stuck in a system call.
	if cl, ok := c.r.(io.Closer); ok {
		_ = cl.Close()
	}
	if cl, ok := c.w.(io.Closer); ok && any(c.w) != any(c.r) {
		_ = cl.Close()
	}
}

// write sends one message. When nothing else is being written, the caller writes it itself
// with a single non-blocking attempt, which saves waking the writer goroutine on the common
// path; whatever does not fit (the peer is not reading) and whatever is queued meanwhile is
// left to the writer goroutine, so a caller never blocks on a full pipe.
func (c *Conn) write(build func([]byte) []byte) error {
	c.wmu.Lock()
	if c.wclosed {
		c.wmu.Unlock()
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.closedError()
	}
	c.wbuf = build(c.wbuf)
	// Only an otherwise idle connection writes on the caller's goroutine: there latency is
	// what counts. With several requests in flight, or while the callers of a batch of
	// answers are sending their next requests, queueing lets the writer goroutine batch them
	// into one system call, which is what throughput needs: on a VM each write to a pipe
	// costs the cross-CPU wake-up of the peer, tens of microseconds.
	if c.writing || c.raw == nil || c.waiting.Load() > 1 || c.burst.Load() {
		c.wcond.Signal()
		c.wmu.Unlock()
		return nil
	}
	c.writing = true
	out := c.wbuf
	c.wbuf = c.spare[:0]
	c.wmu.Unlock()

	n, err := rawio.TryWrite(c.raw, out)

	c.wmu.Lock()
	c.writing = false
	if err != nil {
		c.wmu.Unlock()
		c.fail(fmt.Errorf("jsonrpc: write: %w", err))
		return nil
	}
	if n < len(out) {
		// The rest goes first, before what was queued while this write ran.
		c.wbuf = append(append(make([]byte, 0, len(out)-n+len(c.wbuf)), out[n:]...), c.wbuf...)
	} else {
		c.spare = out[:0]
	}
	if len(c.wbuf) > 0 {
		c.wcond.Signal()
	}
	c.wmu.Unlock()
	return nil
}

// writeLoop writes whatever has queued up since its last write in one system call, so
// messages sent while a write is in progress are batched.
func (c *Conn) writeLoop() {
	defer close(c.writerDone)
	var out []byte
	for {
		c.wmu.Lock()
		if len(c.wbuf) == 0 && !c.wclosed {
			for (len(c.wbuf) == 0 || c.writing) && !c.wclosed {
				c.wcond.Wait()
			}
			// Woken by the first message of a burst: let the goroutines that are ready to
			// run queue theirs too, so the burst leaves in one system call. (The goroutine
			// that wakes the writer usually hands it the processor next, with the rest of
			// the burst still waiting to run.)
			c.wmu.Unlock()
			runtime.Gosched()
			c.wmu.Lock()
		}
		for (len(c.wbuf) == 0 || c.writing) && !c.wclosed {
			c.wcond.Wait()
		}
		if c.wclosed {
			c.wmu.Unlock()
			return
		}
		c.writing = true
		out, c.wbuf = c.wbuf, out[:0]
		c.wmu.Unlock()

		_, err := c.rawW.Write(out)

		c.wmu.Lock()
		c.writing = false
		if len(c.wbuf) > 0 {
			c.wcond.Signal()
		}
		c.wmu.Unlock()
		if err != nil {
			c.fail(fmt.Errorf("jsonrpc: write: %w", err))
			return
		}
		if cap(out) > 1<<20 {
			out = nil // a huge message passed; do not keep its buffer
		}
	}
}

func (c *Conn) readLoop() {
	defer func() {
		<-c.writerDone
		close(c.done)
	}()
	answered := 0 // answers delivered since the last read that emptied the buffer
	for {
		line, err := c.lines.next()
		var big *ResponseTooLongError
		if errors.As(err, &big) && big.Known {
			c.refused(big)
			continue
		}
		if err != nil {
			var tooLong *LineTooLongError
			switch {
			case errors.As(err, &tooLong), big != nil:
				c.log.Error("jsonrpc: closing connection", "err", err)
			case errors.Is(err, io.EOF):
				err = fmt.Errorf("jsonrpc: peer closed the connection: %w", err)
			default:
				err = fmt.Errorf("jsonrpc: read: %w", err)
			}
			c.fail(err)
			return
		}
		more := c.lines.br.Buffered() > 0
		if c.dispatch(line) {
			answered++
			if !more && answered == 1 && c.waiting.Load() == 0 {
				// The only caller, just woken, goes first: the read this loop would do
				// next almost always finds nothing and parks, and done first it delays
				// the answer (bench/mcp: ~9 µs p50 with the MCP side's yield). With
				// more calls in flight the yield would only cost (-8% calls/s at 32).
				runtime.Gosched()
			}
		}
		if !more {
			// The end of what one read brought. Answers that came together wake their callers
			// together, and whatever they send next is best sent together too (see write).
			c.burst.Store(answered > 1)
			answered = 0
		}
	}
}

// dispatch handles one incoming line; it reports whether it answered one of our requests.
func (c *Conn) dispatch(line []byte) bool {
	// The line's buffer is reused by the next read, and what is decoded from it (params,
	// results) lives on with handlers and callers: one copy serves them all.
	line = append([]byte(nil), line...)
	m, k, err := decodeMessage(line)
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) && de.ID != nil {
			_ = c.write(func(b []byte) []byte {
				return appendError(b, de.ID, &Error{Code: de.Code, Message: de.Error()})
			})
			return false
		}
		c.log.Warn("jsonrpc: ignoring malformed message", "err", err, "line", truncate(line, 200))
		return false
	}
	switch k {
	case kindResponse:
		if max := c.lines.maxResp; max > 0 && len(line) > max {
			// Its beginning passed it off as a request (a duplicate "method" further on):
			// held to the answer limit all the same.
			if id, err := strconv.ParseInt(string(m.ID), 10, 64); err == nil {
				c.refused(&ResponseTooLongError{ID: id, Known: true, Limit: max, Size: int64(len(line))})
			}
			return false
		}
		c.deliver(&m)
		return true
	case kindNotification:
		req := &Request{Method: m.Method, Params: m.Params}
		if _, err := c.invoke(req); err != nil {
			c.log.Debug("jsonrpc: notification handler failed", "method", m.Method, "err", err)
		}
	case kindRequest:
		req := &Request{ID: m.ID, Method: m.Method, Params: m.Params}
		c.handlers.Add(1)
		go c.serve(req)
	}
	return false
}

// refused fails the request whose answer was too long to read; the connection goes on.
func (c *Conn) refused(big *ResponseTooLongError) {
	c.mu.Lock()
	p := c.pending[big.ID]
	if p != nil {
		delete(c.pending, big.ID)
		c.waiting.Add(-1)
	}
	c.mu.Unlock()
	if p == nil {
		c.log.Warn("jsonrpc: dropped an oversized answer nobody waits for", "err", big)
		return
	}
	p.err = big
	close(p.done)
}

func (c *Conn) deliver(m *message) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		c.log.Debug("jsonrpc: ignoring response to an id this side never sent", "id", string(m.ID))
		return
	}
	c.mu.Lock()
	p := c.pending[id]
	if p != nil {
		delete(c.pending, id)
		c.waiting.Add(-1)
	}
	c.mu.Unlock()
	if p == nil {
		c.log.Debug("jsonrpc: ignoring response nobody waits for", "id", id)
		return
	}
	if m.Error != nil {
		p.err = m.Error
	} else {
		p.result = m.Result
	}
	close(p.done)
}

func (c *Conn) serve(req *Request) {
	defer c.handlers.Done()
	result, err := c.invoke(req)
	if err != nil {
		rpcErr := AsError(err)
		_ = c.write(func(b []byte) []byte { return appendError(b, req.ID, rpcErr) })
		return
	}
	raw, err := marshalValue(result)
	if err != nil {
		rpcErr := &Error{Code: CodeInternalError, Message: fmt.Sprintf("%s: result cannot be serialized: %v", req.Method, err)}
		_ = c.write(func(b []byte) []byte { return appendError(b, req.ID, rpcErr) })
		return
	}
	_ = c.write(func(b []byte) []byte { return appendResult(b, req.ID, raw) })
}

// invoke runs the handler, turning a panic into an error so one bad handler cannot take the
// connection (or the process) down.
func (c *Conn) invoke(req *Request) (result any, err error) {
	if c.handler == nil {
		return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + req.Method}
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("jsonrpc: handler panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			err = &Error{Code: CodeInternalError, Message: fmt.Sprintf("%s: internal error: %v", req.Method, p)}
		}
	}()
	return c.handler.Handle(c.ctx, req)
}

// AsError returns err as a JSON-RPC error: the *Error it wraps, or CodeInternalError with
// its text.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}
