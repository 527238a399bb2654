package mcpserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// contentTypes records the Content-Type of each answer to a POSTed tools/call.
type contentTypes struct {
	mu    sync.Mutex
	types []string
}

func (c *contentTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	var isCall bool
	if req.Method == http.MethodPost && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			data, _ := io.ReadAll(b)
			isCall = strings.Contains(string(data), `"tools/call"`)
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && isCall {
		c.mu.Lock()
		c.types = append(c.types, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

func (c *contentTypes) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := strings.Join(c.types, ",")
	c.types = nil
	return out
}

// httpClient connects a Go SDK client over streamable HTTP on a 2025-11-25 session.
func httpClient(t *testing.T, url string, opts *mcp.ClientOptions, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fast-test", Version: "1"}, opts).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}},
			&mcp.ClientSessionOptions{ProtocolVersion: classic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A tools/call of a client that cannot be sent anything but the answer (no elicitation,
// no sampling, no progress token, no log level) is answered as one JSON object, with the
// same result the go-sdk gives over SSE; a call of a client that declared elicitation, one
// with a progress token and those of a client that set a log level go through the go-sdk
// (SSE), and their asks, progress and logs still reach the client.
func TestHTTPFastPathAnswersJSON(t *testing.T) {
	r := newRig(t)
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close) // after the clients' Close
	types := &contentTypes{}
	plain := httpClient(t, ts.URL, nil, types)
	fastRes := call(t, plain, "greet", map[string]string{"name": "web"})
	if got := types.take(); got != "application/json" {
		t.Fatalf("a plain client's call was answered as %q, want application/json", got)
	}
	defer func() {
		if got := types.take(); got != "" {
			t.Errorf("answers not checked: %s", got)
		}
	}()
	if j, s := mcpserver.HTTPFastServed(r.srv); j != 1 || s != 0 {
		t.Fatalf("fast path: %d JSON, %d SSE answers, want 1 and 0", j, s)
	}
	if res := call(t, plain, "greet", map[string]string{"name": "nobody"}); !res.IsError || !strings.Contains(text(res), "no one to greet") {
		t.Fatalf("a failing call on the fast path: %s", toJSON(res))
	}
	if _, err := plain.CallTool(context.Background(), &mcp.CallToolParams{Name: "no-such-tool"}); err == nil {
		t.Fatal("an unknown tool was answered")
	}
	if got := types.take(); got != "application/json,text/event-stream" {
		t.Fatalf("a failing call and an unknown tool's were answered as %q, want the fast path's JSON and the go-sdk's SSE", got)
	}

	var seen []string
	var mu sync.Mutex
	asking := httpClient(t, ts.URL, &mcp.ClientOptions{ElicitationHandler: answerer(t, &seen, &mu)}, types)
	slowRes := call(t, asking, "greet", map[string]string{"name": "web"})
	if got := types.take(); got != "text/event-stream" {
		t.Fatalf("the call of a client that declared elicitation was answered as %q, want the go-sdk's text/event-stream", got)
	}
	if toJSON(fastRes) != toJSON(slowRes) {
		t.Fatalf("the fast path's result differs from the go-sdk's:\n%s\n%s", toJSON(fastRes), toJSON(slowRes))
	}
	if res := call(t, asking, "asker", obj(`{"asks":[{"type":"text","question":"Name?"}]}`)); text(res) != `{"success":true,"result":["Ada"]}` {
		t.Fatalf("asks over HTTP: %s", text(res))
	}
	types.take()

	var progress, logs []string
	notified := httpClient(t, ts.URL, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params.Message)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprint(req.Params.Data))
		},
	}, types)
	params := &mcp.CallToolParams{Name: "count", Arguments: map[string]int{"n": 2}}
	params.SetProgressToken("tok")
	if res, err := notified.CallTool(context.Background(), params); err != nil || res.IsError {
		t.Fatalf("count with progress: %v %s", err, toJSON(res))
	}
	if got := types.take(); got != "text/event-stream" {
		t.Fatalf("a call with a progress token was answered as %q", got)
	}
	if err := notified.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	call(t, notified, "count", map[string]int{"n": 2})
	if got := types.take(); got != "text/event-stream" {
		t.Fatalf("a call of a client that set a log level was answered as %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n, m := len(progress), len(logs)
		mu.Unlock()
		if n == 2 && m == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress %q, logs %q: want 2 of each", progress, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if j, _ := mcpserver.HTTPFastServed(r.srv); j != 2 {
		t.Fatalf("%d calls answered as JSON, want the plain client's 2", j)
	}
}

// sseEvent reads one SSE event's fields.
func sseEvent(t *testing.T, br *bufio.Reader) map[string]string {
	t.Helper()
	ev := map[string]string{}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (so far %v)", err, ev)
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			return ev
		}
		k, v, _ := strings.Cut(line, ": ")
		ev[k] = v
	}
}

// A fast call that runs past FastJSONWait is answered on an SSE stream like the go-sdk's:
// a priming event with an id and a retry field, then the answer. A client that dropped the
// stream after the priming event resumes it with Last-Event-ID and gets the answer; the
// call went on meanwhile. A Last-Event-ID of another session, or unknown, is a 404.
func TestHTTPFastPathStreamsAndResumes(t *testing.T) {
	r := newRig(t, func(r *rig) { r.opts.FastJSONWait = time.Millisecond })
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close) // after the clients' Close
	cs := httpClient(t, ts.URL, nil, http.DefaultTransport)
	if res := call(t, cs, "nap", map[string]int{"ms": 50}); text(res) != "slept 50 ms" {
		t.Fatalf("over SSE: %s", toJSON(res))
	}
	if j, s := mcpserver.HTTPFastServed(r.srv); j != 0 || s != 1 {
		t.Fatalf("fast path: %d JSON, %d SSE answers, want 0 and 1", j, s)
	}

	post := func(body string) *http.Response {
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", classic)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":"nap-1","method":"tools/call","params":{"name":"nap","arguments":{"ms":300}}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("a long call answered as %q", ct)
	}
	prime := sseEvent(t, bufio.NewReader(resp.Body))
	resp.Body.Close() // the stream drops before the answer
	if prime["retry"] != "1000" || prime["data"] != "" || !strings.HasSuffix(prime["id"], "_0") {
		t.Fatalf("priming event %v", prime)
	}

	resume := func(session, last string) *http.Response {
		req, _ := http.NewRequest("GET", ts.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", classic)
		req.Header.Set("Last-Event-ID", last)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, c := range []struct{ session, last string }{{"other-session", prime["id"]}, {cs.ID(), "f-nosuchstream_0"}} {
		bad := resume(c.session, c.last)
		body, _ := io.ReadAll(bad.Body)
		bad.Body.Close()
		if bad.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "call the tool again") {
			t.Fatalf("resume %v: %d %s", c, bad.StatusCode, body)
		}
	}
	again := resume(cs.ID(), prime["id"])
	defer again.Body.Close()
	if again.StatusCode != 200 || again.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("resume: %d %s", again.StatusCode, again.Header.Get("Content-Type"))
	}
	ev := sseEvent(t, bufio.NewReader(again.Body))
	if ev["event"] != "message" || !strings.HasSuffix(ev["id"], "_1") || !strings.Contains(ev["data"], `"id":"nap-1"`) ||
		!strings.Contains(ev["data"], `slept 300 ms`) {
		t.Fatalf("resumed answer %v", ev)
	}
}

// notifications/cancelled naming a running fast call cancels it, and so does the end of
// its session (DELETE).
func TestHTTPFastPathCancels(t *testing.T) {
	r := newRig(t, func(r *rig) { r.opts.FastJSONWait = time.Millisecond })
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close) // after the clients' Close
	cs := httpClient(t, ts.URL, nil, http.DefaultTransport)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		done <- err
	}()
	<-r.started
	// Its stream opens once it ran FastJSONWait.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, s := mcpserver.HTTPFastServed(r.srv); s == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the slow call did not take the fast path (%d SSE answers)", s)
		}
	}
	cancel() // the client sends notifications/cancelled
	select {
	case err := <-r.aborted:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("aborted with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancellation did not reach the fast call")
	}
	<-done

	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		done <- err
	}()
	<-r.started
	// The session ends (DELETE, sent by hand: the go-sdk client's Close waits for its
	// calls' streams first).
	del, _ := http.NewRequest("DELETE", ts.URL, nil)
	del.Header.Set("Mcp-Session-Id", cs.ID())
	del.Header.Set("Mcp-Protocol-Version", classic)
	if resp, err := http.DefaultClient.Do(del); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	select {
	case <-r.aborted:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's end did not cancel its fast call")
	}
}

// An HTTP session is closed once it had no request in flight for HTTPSessionTimeout, and
// not before (2 s here: a machine at load 20 left more than 500 ms between a client's
// initialize and its call, and the session was gone): a fast call running longer than the timeout keeps it (the go-sdk's own
// timeout counts only the requests it serves, so it would have closed it under the call).
func TestHTTPSessionIdleTimeout(t *testing.T) {
	r := newRig(t, func(r *rig) { r.opts.HTTPSessionTimeout = 2 * time.Second })
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close)
	cs := httpClient(t, ts.URL, nil, http.DefaultTransport)
	if res := call(t, cs, "nap", map[string]int{"ms": 2500}); text(res) != "slept 2500 ms" {
		t.Fatalf("a fast call longer than the idle timeout: %s", toJSON(res))
	}
	if _, s := mcpserver.HTTPFastServed(r.srv); s != 1 {
		t.Fatalf("the call did not take the fast path (%d SSE answers)", s)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet", Arguments: map[string]string{"name": "x"}})
		if err != nil {
			break // the session was closed: the server answers 404
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle session was never closed")
		}
		time.Sleep(3 * time.Second)
	}
}

// sessionFolders are the temporary folders of MCP sessions under the host's temp folder.
func sessionFolders(t *testing.T, temp string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(temp, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "mcp-") {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// An HTTP session that ends (its client closes it, DELETE) has the host let go of what it
// kept for it: its temporary folder is removed (before, every session's folder stayed until
// jean2 stopped).
func TestHTTPSessionEndFreesItsKeep(t *testing.T) {
	r := newRig(t)
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close)
	cs := httpClient(t, ts.URL, nil, http.DefaultTransport)
	if res := call(t, cs, "nap", map[string]int{"ms": 1}); text(res) != "slept 1 ms" {
		t.Fatalf("call: %s", toJSON(res))
	}
	if got := sessionFolders(t, r.temp); len(got) != 1 {
		t.Fatalf("the session's folders under %s: %v, want one", r.temp, got)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got := sessionFolders(t, r.temp); len(got) == 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the ended session's folder is still there: %v", got)
		}
	}
}
