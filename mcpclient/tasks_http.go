package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTasks follows the tasks of an HTTP server's tools that run only as tasks (see
// tasks.go for stdio). The go-sdk's HTTP connection cannot be wrapped (it learns its
// session's state through an unexported method), so this sits in its http.Client instead:
// it reads what the go-sdk's initialize and tools/list brought back (the tasks capability,
// each tool's execution.taskSupport) and the headers of its last POST (the session id, the
// protocol version, the credentials), and a call of a tool that requires tasks is made by
// remoteTool with POSTs of its own: tools/call with `task`, tasks/get until the task leaves
// `working`, tasks/result; tasks/cancel when the call is cancelled. The server's requests
// during the task (elicitation, sampling) reach the go-sdk on the session's GET stream.
type httpTasks struct {
	next http.RoundTripper
	ids  atomic.Int64

	mu       sync.Mutex
	url      string
	header   http.Header // the go-sdk's last POST within the session
	offers   bool
	required map[string]bool
}

func newHTTPTasks(next http.RoundTripper) *httpTasks {
	return &httpTasks{next: next, required: map[string]bool{}}
}

// maxSniff bounds the bodies read to learn from (initialize and tools/list answers).
const maxSniff = 8 << 20

func (h *httpTasks) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return h.next.RoundTrip(r)
	}
	var method string
	if b, err := r.GetBody(); err == nil {
		var m struct {
			Method string `json:"method"`
		}
		data, _ := io.ReadAll(io.LimitReader(b, maxSniff))
		_ = b.Close()
		// Only two methods matter; a call's arguments are not decoded for nothing.
		if bytes.Contains(data, []byte(`"initialize"`)) || bytes.Contains(data, []byte(`"tools/list"`)) {
			_ = json.Unmarshal(data, &m)
			method = m.Method
		}
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		h.mu.Lock()
		h.url, h.header = r.URL.String(), r.Header.Clone()
		h.mu.Unlock()
	}
	resp, err := h.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK || (method != "initialize" && method != "tools/list") {
		return resp, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSniff))
	if err != nil || len(data) == maxSniff {
		// The go-sdk reads on what was sniffed, then the rest of the body or the read's
		// error (a message over the server's cap, limit.go), never a silently cut body.
		rest := resp.Body
		if err != nil {
			rest = io.NopCloser(errReader{err})
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(data), rest), resp.Body}
		return resp, nil
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	for _, msg := range messages(resp.Header.Get("Content-Type"), data) {
		res, ok := msg.(*jsonrpc.Response)
		if !ok || res.Error != nil {
			continue
		}
		h.learn(method, res.Result)
	}
	return resp, nil
}

// learn notes the tasks capability from initialize's result, the tools' task support from
// tools/list's.
func (h *httpTasks) learn(method string, result json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if method == "initialize" {
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
		h.offers = json.Unmarshal(result, &r) == nil && len(r.Capabilities.Tasks.Requests.Tools.Call) > 0
		return
	}
	var r struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) == nil {
		for _, t := range r.Tools {
			h.required[t.Name] = t.Execution.TaskSupport == "required"
		}
	}
}

// requires reports whether name runs only as a task on this server.
func (h *httpTasks) requires(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.offers && h.required[name] && h.header != nil
}

// call runs a tool as a task and returns its result.
func (h *httpTasks) call(ctx context.Context, name string, args json.RawMessage, progressToken string) (*mcp.CallToolResult, error) {
	params := map[string]any{"name": name, "arguments": args, "task": map[string]any{}}
	if progressToken != "" {
		params["_meta"] = map[string]any{"progressToken": progressToken}
	}
	raw, err := h.post(ctx, "tools/call", params)
	if err != nil {
		return nil, err
	}
	var created struct {
		Task *struct {
			TaskID       string  `json:"taskId"`
			PollInterval float64 `json:"pollInterval"`
		} `json:"task"`
	}
	if err := json.Unmarshal(raw, &created); err != nil || created.Task == nil || created.Task.TaskID == "" {
		// The server answered the call itself.
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("tools/call's answer is neither a task nor a result: %v", err)
		}
		return &res, nil
	}
	id := map[string]string{"taskId": created.Task.TaskID}
	cancelTask := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = h.post(cctx, "tasks/cancel", id)
	}
	poll := time.Duration(created.Task.PollInterval) * time.Millisecond
	for {
		raw, err := h.post(ctx, "tasks/get", id)
		if ctx.Err() != nil {
			cancelTask()
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("following task %s: %w", created.Task.TaskID, err)
		}
		var t struct {
			Status       string  `json:"status"`
			PollInterval float64 `json:"pollInterval"`
		}
		_ = json.Unmarshal(raw, &t)
		if t.Status != "working" {
			break // ended, or waits for input: tasks/result waits for the end
		}
		if t.PollInterval > 0 {
			poll = time.Duration(t.PollInterval) * time.Millisecond
		}
		select {
		case <-time.After(min(max(poll, 50*time.Millisecond), 5*time.Second)):
		case <-ctx.Done():
			cancelTask()
			return nil, ctx.Err()
		}
	}
	raw, err = h.post(ctx, "tasks/result", id)
	if ctx.Err() != nil {
		cancelTask()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", created.Task.TaskID, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("task %s: tasks/result is not a CallToolResult: %v", created.Task.TaskID, err)
	}
	return &res, nil
}

// post sends one request of jean2's own within the go-sdk's session and returns its result.
func (h *httpTasks) post(ctx context.Context, method string, params any) (json.RawMessage, error) {
	h.mu.Lock()
	url, header := h.url, h.header.Clone()
	h.mu.Unlock()
	if header == nil {
		return nil, fmt.Errorf("%s: no session with the server yet", method)
	}
	id, err := jsonrpc.MakeID(fmt.Sprintf("jean2-task-%d", h.ids.Add(1)))
	if err != nil {
		return nil, err
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: method, Params: p})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	header.Del("Content-Length")
	header.Del("Last-Event-Id")
	req.Header = header
	resp, err := h.next.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: HTTP %s: %s", method, resp.Status, strings.TrimSpace(string(b)))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Read events until the answer: the stream may carry the server's notifications
		// first, and stay open after.
		var data bytes.Buffer
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), maxSniff)
		for sc.Scan() {
			line := sc.Text()
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				data.WriteString(strings.TrimPrefix(d, " "))
				continue
			}
			if line != "" || data.Len() == 0 {
				continue
			}
			if res, done, err := answerTo(id, data.Bytes()); done {
				return res, err
			}
			data.Reset()
		}
		return nil, fmt.Errorf("%s: the stream ended without an answer", method)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSniff))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if res, done, err := answerTo(id, data); done {
		return res, err
	}
	return nil, fmt.Errorf("%s: the answer %.200q is not a response to it", method, data)
}

// answerTo reports whether data is the response to id, and its result or error.
func answerTo(id jsonrpc.ID, data []byte) (json.RawMessage, bool, error) {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, false, nil
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.ID != id {
		return nil, false, nil
	}
	if resp.Error != nil {
		return nil, true, resp.Error
	}
	return resp.Result, true, nil
}

// messages are the JSON-RPC messages of a POST's answer, JSON or an event stream.
func messages(contentType string, data []byte) []jsonrpc.Message {
	var out []jsonrpc.Message
	if !strings.HasPrefix(contentType, "text/event-stream") {
		if m, err := jsonrpc.DecodeMessage(data); err == nil {
			out = append(out, m)
		}
		return out
	}
	for _, event := range bytes.Split(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
		var payload bytes.Buffer
		for _, line := range bytes.Split(event, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				payload.Write(bytes.TrimPrefix(d, []byte(" ")))
			}
		}
		if payload.Len() > 0 {
			if m, err := jsonrpc.DecodeMessage(payload.Bytes()); err == nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
