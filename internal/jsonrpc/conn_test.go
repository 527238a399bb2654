package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/rawio"
)

// pipePair connects two Conns with OS pipes, as the host and a worker are connected.
func pipePair(t testing.TB, ha, hb Handler, opts *Options) (a, b *Conn) {
	t.Helper()
	ar, bw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	br, aw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	a = NewConn(ar, aw, ha, opts)
	b = NewConn(br, bw, hb, opts)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// rawPeer is a Conn on one side and raw lines on the other, for protocol-level checks.
type rawPeer struct {
	conn *Conn
	in   *bufio.Reader // what the Conn wrote
	out  *os.File      // what the Conn reads
}

func newRawPeer(t *testing.T, h Handler, opts *Options) *rawPeer {
	t.Helper()
	cr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(cr, cw, h, opts)
	t.Cleanup(func() { c.Close(); pw.Close(); pr.Close() })
	return &rawPeer{conn: c, in: bufio.NewReader(pr), out: pw}
}

func (p *rawPeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.out, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (p *rawPeer) recv(t *testing.T) map[string]any {
	t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := p.in.ReadString('\n')
		ch <- res{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read from conn: %v", r.err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.line), &m); err != nil {
			t.Fatalf("conn wrote invalid JSON %q: %v", r.line, err)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for a message from the conn")
		return nil
	}
}

func TestCallBothWays(t *testing.T) {
	echo := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		return map[string]any{"method": req.Method, "params": req.Params}, nil
	})
	a, b := pipePair(t, echo, echo, nil)
	ctx := context.Background()
	for _, c := range []*Conn{a, b} {
		var got struct {
			Method string         `json:"method"`
			Params map[string]int `json:"params"`
		}
		if err := c.Call(ctx, "sum", map[string]int{"x": 1}, &got); err != nil {
			t.Fatal(err)
		}
		if got.Method != "sum" || got.Params["x"] != 1 {
			t.Fatalf("got %+v", got)
		}
	}
}

func TestErrorCodeAndData(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "coded":
			return nil, NewError(-32003, "no such file", map[string]string{"code": "ENOENT"})
		case "plain":
			return nil, errors.New("plain failure")
		case "panics":
			panic("boom")
		case "unserializable":
			return func() {}, nil
		}
		return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + req.Method}
	})
	a, _ := pipePair(t, nil, h, nil)
	ctx := context.Background()

	err := a.Call(ctx, "coded", nil, nil)
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32003 || rpcErr.Message != "no such file" {
		t.Fatalf("coded: got %v", err)
	}
	var data struct{ Code string }
	if !rpcErr.DecodeData(&data) || data.Code != "ENOENT" {
		t.Fatalf("coded: data %s", rpcErr.Data)
	}
	for method, code := range map[string]int{"plain": CodeInternalError, "panics": CodeInternalError, "unserializable": CodeInternalError, "nope": CodeMethodNotFound} {
		err := a.Call(ctx, method, nil, nil)
		if !errors.As(err, &rpcErr) || rpcErr.Code != code {
			t.Fatalf("%s: got %v, want code %d", method, err, code)
		}
	}
	// The connection survives all of that.
	if err := a.Call(ctx, "coded", nil, nil); !errors.As(err, &rpcErr) {
		t.Fatalf("after failures: %v", err)
	}
}

// A request whose handler blocks must not block the handling of another request.
func TestRequestsAreServedConcurrently(t *testing.T) {
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "block" {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "unblocked", nil
		}
		close(release)
		return "released", nil
	})
	a, _ := pipePair(t, nil, h, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first, err := a.Start("block", nil)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := a.Call(ctx, "release", nil, &s); err != nil || s != "released" {
		t.Fatalf("release: %q %v", s, err)
	}
	raw, err := first.Result()
	if err != nil || string(raw) != `"unblocked"` {
		t.Fatalf("block: %s %v", raw, err)
	}
}

func TestNotificationsArriveInOrderBeforeLaterResponses(t *testing.T) {
	var mu sync.Mutex
	var got []string
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.IsNotification() {
			var n int
			_ = json.Unmarshal(req.Params, &n)
			mu.Lock()
			got = append(got, fmt.Sprint(n))
			mu.Unlock()
		}
		return nil, nil
	})
	// b sends notifications and then answers a's request; a must have handled every
	// notification by the time the answer arrives.
	hb := HandlerFunc(func(ctx context.Context, req *Request) (any, error) { return "ok", nil })
	a, b := pipePair(t, h, hb, nil)
	ctx := context.Background()
	for i := range 100 {
		if err := b.Notify(ctx, "n", i); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Call(ctx, "x", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Call(ctx, "x", nil, nil); err != nil { // a round trip after the notifications
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 100 {
		t.Fatalf("got %d notifications", len(got))
	}
	for i, s := range got {
		if s != fmt.Sprint(i) {
			t.Fatalf("notification %d arrived as %s", i, s)
		}
	}
}

func TestCallContextAbandonsWait(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "slow" {
			time.Sleep(200 * time.Millisecond)
		}
		return "late", nil
	})
	a, _ := pipePair(t, nil, h, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stopped by test")
	time.AfterFunc(20*time.Millisecond, func() { cancel(stop) })
	err := a.Call(ctx, "slow", nil, nil)
	if !errors.Is(err, stop) {
		t.Fatalf("got %v, want the context's cause", err)
	}
	// The late answer is ignored and the connection still works.
	time.Sleep(250 * time.Millisecond)
	var s string
	if err := a.Call(context.Background(), "fast", nil, &s); err != nil || s != "late" {
		t.Fatalf("after abandon: %q %v", s, err)
	}
}

func TestLineTooLongClosesConnection(t *testing.T) {
	p := newRawPeer(t, nil, &Options{MaxLineSize: 1024})
	pending, err := p.conn.Start("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.recv(t) // the request
	go io.WriteString(p.out, `{"jsonrpc":"2.0","id":1,"result":"`+strings.Repeat("a", 5000)+"\"}\n")
	select {
	case <-p.conn.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("conn did not close on an oversized line")
	}
	var tooLong *LineTooLongError
	if !errors.As(p.conn.Err(), &tooLong) || tooLong.Limit != 1024 {
		t.Fatalf("Err() = %v", p.conn.Err())
	}
	_, err = pending.Result()
	if !errors.Is(err, ErrClosed) || !errors.As(err, &tooLong) {
		t.Fatalf("pending call got %v", err)
	}
	if !strings.Contains(err.Error(), "longer than the 1024-byte limit") {
		t.Fatalf("error text %q", err)
	}
}

func TestMalformedLines(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) { return "pong", nil })
	p := newRawPeer(t, h, nil)

	p.send(t, `{"jsonrpc":"2.0","id":7,"method":"x","params":{bad json`)
	m := p.recv(t)
	if m["id"] != float64(7) || m["error"].(map[string]any)["code"] != float64(CodeParseError) {
		t.Fatalf("parse error response: %v", m)
	}
	p.send(t, `{"jsonrpc":"1.0","id":"s","method":"x"}`)
	m = p.recv(t)
	if m["id"] != "s" || m["error"].(map[string]any)["code"] != float64(CodeInvalidRequest) {
		t.Fatalf("invalid request response: %v", m)
	}
	// No id to answer: logged and ignored. Neither kills the connection.
	p.send(t, `this is not json`)
	p.send(t, `[1,2,3]`)
	p.send(t, `{"jsonrpc":"2.0"}`)
	p.send(t, `{"jsonrpc":"2.0","id":999,"result":"nobody waits"}`)
	p.send(t, `{"jsonrpc":"2.0","id":"x-1","result":"not our id form"}`)
	p.send(t, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	m = p.recv(t)
	if m["id"] != float64(8) || m["result"] != "pong" {
		t.Fatalf("after malformed lines: %v", m)
	}
}

func TestPeerCloseFailsPendingCalls(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	pending, err := p.conn.Start("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.recv(t)
	p.out.Close()
	_, err = pending.Result()
	if !errors.Is(err, ErrClosed) || !errors.Is(err, io.EOF) {
		t.Fatalf("pending: %v", err)
	}
	<-p.conn.Done()
	if err := p.conn.Call(context.Background(), "y", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after close: %v", err)
	}
	if err := p.conn.Notify(context.Background(), "y", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("notify after close: %v", err)
	}
}

func TestCloseCancelsHandlers(t *testing.T) {
	started := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	a, b := pipePair(t, nil, h, nil)
	if _, err := a.Start("wait", nil); err != nil {
		t.Fatal(err)
	}
	<-started
	done := make(chan struct{})
	go func() { b.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if !errors.Is(b.Err(), ErrClosed) {
		t.Fatalf("Err = %v", b.Err())
	}
}

func TestLargeMessageSpanningBuffers(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) { return req.Params, nil })
	a, _ := pipePair(t, nil, h, nil)
	big := strings.Repeat("é\n\"x", 300_000) // multi-byte, escapes, far beyond one read buffer
	var got string
	if err := a.Call(context.Background(), "echo", big, &got); err != nil {
		t.Fatal(err)
	}
	if got != big {
		t.Fatalf("echo of %d bytes came back as %d bytes", len(big), len(got))
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) { return json.RawMessage(`{"ok":true}`), nil })
	a, _ := pipePair(b, nil, h, nil)
	ctx := context.Background()
	params := json.RawMessage(`{"callId":"c1","input":{}}`)
	b.ReportAllocs()
	for b.Loop() {
		var out json.RawMessage
		if err := a.Call(ctx, "execute", params, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// With AnswerPoll, the reader polls for the answer to a lone request instead of sleeping,
// and stops once the answer is in; without it, it never polls.
func TestAnswerPoll(t *testing.T) {
	for _, poll := range []time.Duration{0, 10 * time.Second} {
		t.Run(fmt.Sprint(poll), func(t *testing.T) {
			p := newRawPeer(t, nil, &Options{AnswerPoll: poll})
			pending, err := p.conn.Start("ping", map[string]int{"n": 1})
			if err != nil {
				t.Fatal(err)
			}
			req := p.recv(t)
			time.Sleep(20 * time.Millisecond) // the peer takes its time
			p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":"pong"}`, req["id"]))
			select {
			case <-pending.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("no answer")
			}
			if res, err := pending.Result(); err != nil || string(res) != `"pong"` {
				t.Fatalf("answer %s, %v", res, err)
			}
			polls := rawio.Polls(p.conn.rawR)
			if poll == 0 && polls != 0 {
				t.Fatalf("polled %d times with AnswerPoll 0", polls)
			}
			if poll > 0 && polls == 0 {
				t.Fatal("the reader slept through a lone request's wait")
			}
			time.Sleep(50 * time.Millisecond)
			if after := rawio.Polls(p.conn.rawR); after != polls {
				t.Fatalf("the reader polled %d more times after the answer came", after-polls)
			}
		})
	}
}

// A second request in flight ends the poll for the first one's answer: the reader will have
// answers to read, and polling would hold a CPU the peer and the callers need.
func TestAnswerPollStopsWithMoreInFlight(t *testing.T) {
	p := newRawPeer(t, nil, &Options{AnswerPoll: 10 * time.Second})
	first, err := p.conn.Start("a", nil)
	if err != nil {
		t.Fatal(err)
	}
	reqA := p.recv(t)
	deadline := time.Now().Add(5 * time.Second)
	for rawio.Polls(p.conn.rawR) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if rawio.Polls(p.conn.rawR) == 0 {
		t.Fatal("no poll for a lone request's answer")
	}
	second, err := p.conn.Start("b", nil)
	if err != nil {
		t.Fatal(err)
	}
	reqB := p.recv(t)
	time.Sleep(20 * time.Millisecond) // a poll in progress sees the end of its time
	before := rawio.Polls(p.conn.rawR)
	time.Sleep(50 * time.Millisecond)
	if after := rawio.Polls(p.conn.rawR); after != before {
		t.Fatalf("polled %d more times with two requests in flight", after-before)
	}
	p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":1}`, reqA["id"]))
	p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":2}`, reqB["id"]))
	for i, pend := range []*Pending{first, second} {
		if res, err := pend.Result(); err != nil || string(res) != fmt.Sprint(i+1) {
			t.Fatalf("answer %d: %s, %v", i+1, res, err)
		}
	}
}
