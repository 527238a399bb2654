package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wire is one client session spoken as raw JSON-RPC lines over a StdioTransport.
type wire struct {
	t     *testing.T
	in    io.Writer
	lines chan string
}

// dialWire starts a session on r's server: through Run (the fast path for tools/call) when
// fast is set, else straight through the go-sdk (s.MCP().Connect), and initializes it on
// the classic revision.
func dialWire(t *testing.T, r *rig, fast bool) *wire {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	return dialWireOver(t, r, fast, inR, inW, outR, outW)
}

// dialWireOver is dialWire over the given pipes: the session reads inR and writes outW.
func dialWireOver(t *testing.T, r *rig, fast bool, inR io.Reader, inW io.WriteCloser, outR io.Reader, outW io.WriteCloser) *wire {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tr := &mcpserver.StdioTransport{Reader: inR, Writer: outW}
	done := make(chan struct{})
	if fast {
		go func() { defer close(done); _ = r.srv.Run(ctx, tr) }()
	} else {
		ss, err := r.srv.MCP().Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() { defer close(done); _ = ss.Wait() }()
	}
	w := &wire{t: t, in: inW, lines: make(chan string, 64)}
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the session did not end")
		}
		_ = outW.Close()
	})
	w.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + classic + `","capabilities":{},"clientInfo":{"name":"wire","version":"1"}}}`)
	w.response("init")
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w
}

func (w *wire) send(line string) {
	w.t.Helper()
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		w.t.Fatal(err)
	}
}

// response returns the response to request id (as its JSON text), passing notifications.
func (w *wire) response(id string) string {
	w.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				w.t.Fatalf("the session ended before the response to %s", id)
			}
			var m struct{ ID json.RawMessage }
			if json.Unmarshal([]byte(l), &m) == nil && strings.Trim(string(m.ID), `"`) == id {
				return l
			}
		case <-timeout:
			w.t.Fatalf("no response to %s", id)
		}
	}
}

// A fast call writes exactly what the go-sdk writes for the same call: results with text,
// structured content and _meta, failed results, empty arguments, an overflowing result,
// and the go-sdk's own errors for what the fast path leaves to it.
func TestFastCallAnswersAsTheGoSDK(t *testing.T) {
	r := newRig(t)
	fast, slow := dialWire(t, r, true), dialWire(t, r, false)
	calls := []string{
		`{"name":"greet","arguments":{"name":"ada"}}`,
		`{"name":"greet","arguments":{"name":"nobody"}}`,
		`{"name":"greet","arguments":{"name":"wrong"}}`,
		`{"name":"greet","arguments":{}}`,
		`{"name":"greet","arguments":null}`,
		`{"name":"greet"}`,
		`{"name":"count","arguments":{"n":2},"_meta":{"other":"x"}}`,
		`{"name":"no-such-tool","arguments":{}}`,
		`{"name":"greet","arguments":{"name":"<b>&</b>"}}`,
		`{"name":7}`,
		`[]`,
	}
	for i, params := range calls {
		id := string(rune('a' + i))
		line := `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":` + params + `}`
		fast.send(line)
		slow.send(line)
		if f, s := fast.response(id), slow.response(id); f != s {
			t.Errorf("%s\n fast path: %s\n   go-sdk: %s", params, f, s)
		}
	}
	// A result cut to a file names a file of its own on each side; the rest matches.
	fast.send(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"big"}}`)
	if f := fast.response("big"); !strings.Contains(f, `"jean2/overflow"`) || strings.Contains(f, strings.Repeat("x", 20_000)) {
		t.Errorf("overflow: %.300s", f)
	}
	// Before initialize, a call is refused by the go-sdk.
	early := &wire{t: t}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.srv.Run(ctx, &mcpserver.StdioTransport{Reader: inR, Writer: outW}) }()
	early.in, early.lines = inW, make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			early.lines <- sc.Text()
		}
	}()
	early.send(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"greet","arguments":{"name":"a"}}}`)
	if l := early.response("x"); !strings.Contains(l, `"error"`) || !strings.Contains(l, "initialization") {
		t.Errorf("a call before initialize: %s", l)
	}
	_ = inW.Close()
	cancel()
	<-done
	_ = outW.Close()
}

// A fast call runs concurrently with others, a second call under its id is dropped, and
// notifications/cancelled naming it aborts the tool's signal.
func TestFastCallCancellationAndDuplicateIDs(t *testing.T) {
	r := newRig(t)
	w := dialWire(t, r, true)
	w.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	select {
	case <-r.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow tool did not start")
	}
	if ids := mcpserver.FastCallsRunning(r.srv); !slices.Equal(ids, []string{"5"}) {
		t.Fatalf("fast calls running: %v, want [5] (the call did not take the fast path)", ids)
	}
	// Another call meanwhile is answered at once.
	w.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"greet","arguments":{"name":"b"}}}`)
	if l := w.response("6"); !strings.Contains(l, "hello b") {
		t.Fatalf("a call beside a running one: %s", l)
	}
	// A second call under the running call's id is dropped unanswered, as the go-sdk does
	// (an answer would read as the running call's): the next answer under 5 is the running
	// call's, once cancelled.
	w.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"greet","arguments":{"name":"c"}}}`)
	w.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"enough"}}`)
	select {
	case err := <-r.aborted:
		if err == nil {
			t.Fatal("aborted with no error")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("cancellation did not abort the tool's signal")
	}
	if l := w.response("5"); !strings.Contains(l, `"isError":true`) || !strings.Contains(l, "aborted") {
		t.Fatalf("the cancelled call's answer: %s", l)
	}
	if ids := mcpserver.FastCallsRunning(r.srv); len(ids) != 0 {
		t.Fatalf("fast calls still running: %v", ids)
	}
}

// When the client goes away, its running calls are aborted, and Run returns only after
// they have ended.
func TestFastCallEndsWithTheClient(t *testing.T) {
	r := newRig(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	ran := make(chan error, 1)
	go func() { ran <- r.srv.Run(context.Background(), &mcpserver.StdioTransport{Reader: inR, Writer: outW}) }()
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + classic + `","capabilities":{},"clientInfo":{"name":"w","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
	} {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-r.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow tool did not start")
	}
	_ = inW.Close()
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the client went away")
	}
	select {
	case <-r.aborted:
	default:
		t.Fatal("Run returned before the running call was aborted")
	}
	_ = outW.Close()
}

// Fast calls one after another reuse a goroutine, which keeps the stack the first grew
// (a new goroutine's stack was grown, by copying, in every call); when the client goes, no
// such goroutine is left.
func TestFastCallGoroutineReusedAndEnds(t *testing.T) {
	r := newRig(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ran := make(chan error, 1)
	go func() { ran <- r.srv.Run(context.Background(), &mcpserver.StdioTransport{Reader: inR, Writer: outW}) }()
	answers := bufio.NewReader(outR)
	send := func(l string) {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + classic + `","capabilities":{},"clientInfo":{"name":"w","version":"1"}}}`)
	if _, err := answers.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const calls = 10
	for i := 1; i <= calls; i++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"greet","arguments":{"name":"n%d"}}}`, i, i))
		line, err := answers.ReadString('\n')
		if err != nil || !strings.Contains(line, fmt.Sprintf("hello n%d", i)) {
			t.Fatalf("call %d: %q, %v", i, line, err)
		}
	}
	// Usually one; a next call read before the goroutine of the one answered waits again
	// takes another.
	if n := mcpserver.FastCallGoroutines(r.srv); n < 1 || n >= calls {
		t.Errorf("after %d calls one after another: %d goroutines serve fast calls, want from 1 to %d", calls, n, calls-1)
	}
	_ = inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the client went away")
	}
	deadline := time.Now().Add(10 * time.Second)
	for mcpserver.FastCallGoroutines(r.srv) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still serve fast calls after the session ended", mcpserver.FastCallGoroutines(r.srv))
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = outW.Close()
}

// A client on the newest revision does not take the fast path (its calls may need input
// rounds), and still gets its answers.
func TestNewestRevisionSkipsFastPath(t *testing.T) {
	r := newRig(t)
	cs := r.connect(newest, nil)
	res := call(t, cs, "greet", map[string]any{"name": "z"})
	if !strings.Contains(text(res), "hello z") {
		t.Fatalf("%#v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}) }()
	<-r.started
	if ids := mcpserver.FastCallsRunning(r.srv); len(ids) != 0 {
		t.Fatalf("a 2026-07-28 call took the fast path: %v", ids)
	}
	cancel()
	<-r.aborted
}

// Over OS pipes (as a client starts jean2 mcp), a session that answered its only call polls
// stdin for the next one, and serves it; with NextCallPoll negative it never polls.
func TestStdioPollsForTheNextCall(t *testing.T) {
	for _, poll := range []time.Duration{-1, time.Hour} {
		t.Run(poll.String(), func(t *testing.T) {
			r := newRig(t, func(r *rig) { r.opts.NextCallPoll = poll })
			inR, inW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inR.Close(); _ = outR.Close() })
			w := dialWireOver(t, r, true, inR, inW, outR, outW)
			if polls := mcpserver.StdioPolls(r.srv); polls != 0 {
				t.Fatalf("polled %d times before any call", polls)
			}
			for i := range 2 {
				id := fmt.Sprint("c", i)
				w.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"greet","arguments":{"name":"ann"}}}`)
				if resp := w.response(id); !strings.Contains(resp, "hello ann") {
					t.Fatalf("call %s: %s", id, resp)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for poll > 0 && mcpserver.StdioPolls(r.srv) == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			polls := mcpserver.StdioPolls(r.srv)
			if poll > 0 && polls == 0 {
				t.Fatal("the session slept right after answering its only call")
			}
			if poll < 0 && polls != 0 {
				t.Fatalf("polled %d times with NextCallPoll off", polls)
			}
		})
	}
}
