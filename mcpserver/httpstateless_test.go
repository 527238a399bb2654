package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessClient connects a Go SDK client on 2026-07-28 (stateless over HTTP).
func statelessClient(t *testing.T, url string, opts *mcp.ClientOptions, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stateless-fast", Version: "1"}, opts).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A stateless tools/call of a client that declared neither elicitation nor sampling, with
// no progress token, is answered as JSON beside the go-sdk, with the result the go-sdk gives;
// an unknown tool, a call with a progress token and the calls of a client that declared
// elicitation go to the go-sdk (SSE), and their progress and asks still reach the client.
func TestHTTPStatelessFastPath(t *testing.T) {
	// At load 20 a greet took longer than the default 50 ms and was answered as SSE.
	r := newRig(t, func(r *rig) { r.opts.FastJSONWait = 2 * time.Second })
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close)
	types := &contentTypes{}
	plain := statelessClient(t, ts.URL, nil, types)
	fastRes := call(t, plain, "greet", map[string]string{"name": "web"})
	if got := types.take(); got != "application/json" {
		t.Fatalf("a plain stateless call was answered as %q, want application/json", got)
	}
	if j, s := mcpserver.HTTPStatelessServed(r.srv); j != 1 || s != 0 {
		t.Fatalf("stateless fast path: %d JSON, %d SSE answers, want 1 and 0", j, s)
	}
	if res := call(t, plain, "greet", map[string]string{"name": "nobody"}); !res.IsError || !strings.Contains(text(res), "no one to greet") {
		t.Fatalf("a failing call on the fast path: %s", toJSON(res))
	}
	if _, err := plain.CallTool(context.Background(), &mcp.CallToolParams{Name: "no-such-tool"}); err == nil {
		t.Fatal("an unknown tool was answered")
	}
	types.take()
	if j, _ := mcpserver.HTTPStatelessServed(r.srv); j != 2 {
		t.Fatalf("%d calls on the fast path, want the two greets (an unknown tool is the go-sdk's)", j)
	}

	var seen []string
	var mu sync.Mutex
	asking := statelessClient(t, ts.URL, &mcp.ClientOptions{ElicitationHandler: answerer(t, &seen, &mu)}, types)
	slowRes := call(t, asking, "greet", map[string]string{"name": "web"})
	if got := types.take(); got != "text/event-stream" {
		t.Fatalf("the call of a client that declared elicitation was answered as %q, want the go-sdk's", got)
	}
	if toJSON(fastRes) != toJSON(slowRes) {
		t.Fatalf("the fast path's result differs from the go-sdk's:\n%s\n%s", toJSON(fastRes), toJSON(slowRes))
	}
	if res := call(t, asking, "asker", obj(`{"asks":[{"type":"text","question":"Name?"}]}`)); text(res) != `{"success":true,"result":["Ada"]}` {
		t.Fatalf("asks by input requests: %s", text(res))
	}
	types.take()

	var progress []string
	notified := statelessClient(t, ts.URL, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params.Message)
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress %q: want 2", progress)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if j, s := mcpserver.HTTPStatelessServed(r.srv); j != 2 || s != 0 {
		t.Fatalf("%d JSON, %d SSE fast answers, want the plain client's 2 and 0", j, s)
	}
}

// A stateless fast call past FastJSONWait is answered over SSE (one event, the answer),
// and a client that drops the request cancels the call.
func TestHTTPStatelessFastPathStreamsAndCancels(t *testing.T) {
	r := newRig(t, func(r *rig) { r.opts.FastJSONWait = time.Millisecond })
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close)
	types := &contentTypes{}
	cs := statelessClient(t, ts.URL, nil, types)
	if res := call(t, cs, "nap", map[string]int{"ms": 50}); text(res) != "slept 50 ms" {
		t.Fatalf("over SSE: %s", toJSON(res))
	}
	if got := types.take(); got != "text/event-stream" {
		t.Fatalf("a long stateless call was answered as %q", got)
	}
	if j, s := mcpserver.HTTPStatelessServed(r.srv); j != 0 || s != 1 {
		t.Fatalf("stateless fast path: %d JSON, %d SSE answers, want 0 and 1", j, s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		done <- err
	}()
	<-r.started
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, s := mcpserver.HTTPStatelessServed(r.srv); s == 2 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the slow call did not take the fast path (%d SSE answers)", s)
		}
	}
	cancel()
	select {
	case err := <-r.aborted:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("aborted with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dropping the request did not cancel the stateless fast call")
	}
	<-done
}

// Raw stateless POSTs: one that fits is answered as JSON with no session id; one whose _meta
// names another revision than its header, one that sets a log level and one whose client
// declared sampling are the go-sdk's (its error, or its SSE answer), never the fast path's.
func TestHTTPStatelessFastPathRules(t *testing.T) {
	r := newRig(t)
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close)
	post := func(header, name, meta string) (*http.Response, string) {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"greet","arguments":{"name":"raw"},"_meta":` + meta + `}}`
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", header)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	const v = "2026-07-28"
	resp, body := post(v, "greet", `{"io.modelcontextprotocol/protocolVersion":"`+v+`","io.modelcontextprotocol/clientCapabilities":{}}`)
	if resp.Header.Get("Content-Type") != "application/json" || len(resp.Header.Values("Mcp-Session-Id")) != 0 ||
		!strings.Contains(body, `"id":7`) || !strings.Contains(body, `hello raw`) || !strings.Contains(body, `"resultType":"complete"`) {
		t.Fatalf("a fitting call: %s %v %s", resp.Header.Get("Content-Type"), resp.Header, body)
	}
	for _, c := range []struct{ name, header, mcpName, meta, want string }{
		{"another Mcp-Name", v, "count", `{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}`, "does not match"},
		{"mismatched revision", "2026-08-01", "greet", `{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}`, "does not match"},
		{"an unknown revision", "2027-01-01", "greet", `{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}`, "error"},
		{"no capabilities", v, "greet", `{"io.modelcontextprotocol/protocolVersion":"` + v + `"}`, "clientCapabilities"},
		{"a log level", v, "greet", `{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}`, "hello raw"},
		{"sampling", v, "greet", `{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`, "hello raw"},
	} {
		_, body := post(c.header, c.mcpName, c.meta)
		if !strings.Contains(body, c.want) {
			t.Errorf("%s: %s, want %q", c.name, body, c.want)
		}
	}
	if j, s := mcpserver.HTTPStatelessServed(r.srv); j != 1 || s != 0 {
		t.Fatalf("stateless fast path: %d JSON, %d SSE answers, want only the fitting call's", j, s)
	}
}

// A stateless call that needs the client's model, from a client that declared no sampling,
// is answered with MissingRequiredClientCapabilityError and HTTP 400 (SEP-2575), whether
// it ends within FastJSONWait or after (when the answer used to stream over SSE with 200).
func TestHTTPStatelessMissingSamplingIs400(t *testing.T) {
	// 20 ms was too short at load 20 for the call meant to end within it.
	r := newRig(t, func(r *rig) { r.opts.FastJSONWait = 250 * time.Millisecond })
	r.src.mu.Lock()
	r.src.tools = []tool.Tool{&tool.Func{Def: tool.Definition{Name: "slow-think", Description: "Wait, then ask the model.", InputSchema: obj(`{"type":"object"}`)},
		Run: func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
			time.Sleep(1500 * time.Millisecond)
			text, err := c.LLM.GenerateText(ctx, tool.TextRequest{Prompt: "2+2?"})
			if err != nil {
				return tool.Errorf("%v", err)
			}
			return tool.Success(text)
		}}}
	r.src.mu.Unlock()
	if err := r.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close)
	const v = "2026-07-28"
	for _, toolName := range []string{"think", "slow-think"} {
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + toolName + `","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", v)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", toolName)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.Contains(string(data), `"code":-32021`) || !strings.Contains(string(data), `"requiredCapabilities":{"sampling":{}}`) {
			t.Errorf("%s: %d %s %s, want 400 and MissingRequiredClientCapabilityError naming sampling", toolName, resp.StatusCode, resp.Header.Get("Content-Type"), data)
		}
	}
	if j, s := mcpserver.HTTPStatelessServed(r.srv); j != 1 || s != 1 {
		t.Fatalf("stateless fast path: %d within the wait, %d past it; want 1 and 1", j, s)
	}
}

// Stateless calls (2026-07-28) are sessionless calls: each is on its own (no session id,
// so no session grant, refusal or background command carries over to another), and they
// share one temporary folder, as a workspace's sessionless calls do, so they share its
// workers too (a confined worker's start per call was 300 ms) and leave no folder behind
// per call. Before, each call got a session of its own, whose folder (and tmpfs mount)
// stayed until the host closed. Through the fast path and through the go-sdk alike.
func TestStatelessCallsAreSessionless(t *testing.T) {
	r := newRig(t)
	ts := httptest.NewServer(r.srv.HTTPHandler())
	t.Cleanup(ts.Close)
	var seen []string
	var mu sync.Mutex
	clients := []*mcp.ClientSession{
		statelessClient(t, ts.URL, nil, http.DefaultTransport),                                                             // the fast path
		statelessClient(t, ts.URL, &mcp.ClientOptions{ElicitationHandler: answerer(t, &seen, &mu)}, http.DefaultTransport), // the go-sdk's
	}
	temps := map[string]bool{}
	for _, cs := range clients {
		for range 3 {
			var got struct {
				Result struct{ Session, Temp string }
			}
			if err := json.Unmarshal([]byte(text(call(t, cs, "whoami", nil))), &got); err != nil {
				t.Fatal(err)
			}
			if got.Result.Session != "" {
				t.Fatalf("a stateless call ran in session %q, want none", got.Result.Session)
			}
			temps[got.Result.Temp] = true
		}
	}
	if len(temps) != 1 {
		t.Fatalf("6 stateless calls had %d temporary folders, want one shared: %v", len(temps), temps)
	}
	sessions, _ := filepath.Glob(filepath.Join(r.temp, "sessions", "*"))
	if len(sessions) != 0 {
		t.Fatalf("stateless calls left session folders behind: %v", sessions)
	}
	// The shared folder (workspaces/mcp-stateless-…/.runs) goes with the server.
	var shared string
	for dir := range temps {
		shared = filepath.Dir(dir)
	}
	if filepath.Base(filepath.Dir(shared)) != "workspaces" {
		t.Fatalf("the stateless calls' folder %s is not a workspace-like scope", shared)
	}
	_ = r.srv.Close()
	if _, err := os.Stat(shared); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Close, the stateless calls' folder %s: %v, want it removed", shared, err)
	}
}
