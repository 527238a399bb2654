package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// writeAnswer writes one answer line of n bytes of result string to w in pieces, as a
// worker would, never holding it whole.
func writeAnswer(w io.Writer, head string, n int, tail string) error {
	if _, err := io.WriteString(w, head+`"`); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for n > 0 {
		k := min(n, len(chunk))
		if _, err := w.Write(chunk[:k]); err != nil {
			return err
		}
		n -= k
	}
	_, err := io.WriteString(w, `"`+tail+"\n")
	return err
}

// An answer over MaxResponseSize fails its request with a *ResponseTooLongError, is never
// held whole (the reader's allocations stay near the limit for a 60 MiB line), and the
// connection goes on: the next request is answered.
func TestResponseTooLongIsRefusedUnread(t *testing.T) {
	const limit = 1 << 20
	p := newRawPeer(t, nil, &Options{MaxResponseSize: limit})
	pend, err := p.conn.Start("big", nil)
	if err != nil {
		t.Fatal(err)
	}
	req := p.recv(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go writeAnswer(p.out, `{"jsonrpc":"2.0","id":`+jsonNumber(req["id"])+`,"result":`, 60<<20, "}")
	<-pend.Done()
	runtime.ReadMemStats(&after)
	_, err = pend.Result()
	var big *ResponseTooLongError
	if !errors.As(err, &big) || !big.Known || big.Size < 60<<20 || big.Limit != limit {
		t.Fatalf("error %v (%+v)", err, big)
	}
	if !strings.Contains(err.Error(), "over the 1048576-byte limit for an answer") {
		t.Fatalf("message: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*limit {
		t.Fatalf("reading a refused 60 MiB answer allocated %d bytes; the limit is %d", got, limit)
	}
	// The connection goes on.
	pend, err = p.conn.Start("small", nil)
	if err != nil {
		t.Fatal(err)
	}
	req = p.recv(t)
	p.send(t, `{"jsonrpc":"2.0","id":`+jsonNumber(req["id"])+`,"result":"ok"}`)
	if raw, err := pend.Result(); err != nil || string(raw) != `"ok"` {
		t.Fatalf("after the refused answer: %s %v", raw, err)
	}
}

// An answer whose id comes after its result cannot be told apart: the connection ends, with
// the same error, after reading no more than the limit; a short line over the limit is
// refused too (without the bufio buffer filling).
func TestResponseTooLongWithoutItsIDEndsTheConnection(t *testing.T) {
	const limit = 1 << 20
	p := newRawPeer(t, nil, &Options{MaxResponseSize: limit})
	pend, err := p.conn.Start("big", nil)
	if err != nil {
		t.Fatal(err)
	}
	req := p.recv(t)
	go writeAnswer(p.out, `{"jsonrpc":"2.0","result":`, 8<<20, `,"id":`+jsonNumber(req["id"]))
	_, err = pend.Result()
	var big *ResponseTooLongError
	if !errors.As(err, &big) || big.Known || !errors.Is(err, ErrClosed) {
		t.Fatalf("error %v", err)
	}
	<-p.conn.Done()

	small := newRawPeer(t, nil, &Options{MaxResponseSize: 100})
	pend, err = small.conn.Start("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	req = small.recv(t)
	small.send(t, `{"jsonrpc":"2.0","id":`+jsonNumber(req["id"])+`,"result":"`+strings.Repeat("y", 200)+`"}`)
	if _, err := pend.Result(); !errors.As(err, &big) || !big.Known || big.Size < 200 {
		t.Fatalf("short line over the limit: %v", err)
	}
}

// Requests and notifications keep MaxLineSize: a worker's request may be larger than an
// answer may.
func TestResponseLimitLeavesRequestsAlone(t *testing.T) {
	got := make(chan int, 1)
	h := HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		got <- len(req.Params)
		return "done", nil
	})
	p := newRawPeer(t, h, &Options{MaxResponseSize: 1 << 10})
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"write","params":{"content":"`+strings.Repeat("z", 200<<10)+`"}}`)
	if n := <-got; n < 200<<10 {
		t.Fatalf("params of %d bytes", n)
	}
	if m := p.recv(t); m["result"] != "done" {
		t.Fatalf("answer %v", m)
	}
}

// jsonNumber prints a request id decoded by recv.
func jsonNumber(v any) string {
	n, _ := v.(float64)
	return strconv.FormatInt(int64(n), 10)
}

// A line whose beginning passes for a request but whose later duplicate "method" makes it
// an answer is held to the answer limit once decoded.
func TestResponseLimitSeesThroughADuplicateMethod(t *testing.T) {
	p := newRawPeer(t, nil, &Options{MaxResponseSize: 1 << 10})
	pend, err := p.conn.Start("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	req := p.recv(t)
	p.send(t, `{"jsonrpc":"2.0","id":`+jsonNumber(req["id"])+`,"method":"x","params":"`+strings.Repeat("p", 100<<10)+`","method":"","result":"ok"}`)
	var big *ResponseTooLongError
	if _, err := pend.Result(); !errors.As(err, &big) || !big.Known {
		t.Fatalf("error %v", err)
	}
}
