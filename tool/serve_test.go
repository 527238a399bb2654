package tool_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
	"github.com/jean2/jean2/tool"
)

// These tests run tool.ServeContext in process over pipes and play the host with the same
// JSON-RPC connection the real host uses. runtime/gotool tests the same through real
// processes started by the host's worker pool.

// hostMsg is one message a worker sent to the host.
type hostMsg struct {
	Method string
	Params json.RawMessage
	Notify bool
}

// fakeHost answers a worker's requests and records everything it sends. Every message is
// decoded into the host's own types (internal/workerproto) with unknown fields refused, so
// the worker's wire shapes cannot drift from the host's.
type fakeHost struct {
	t      *testing.T
	mu     sync.Mutex
	got    []hostMsg
	answer func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

var wireTypes = map[string]func() any{
	workerproto.MethodFSReadFile:       func() any { return new(workerproto.FSPathParams) },
	workerproto.MethodFSWriteFile:      func() any { return new(workerproto.FSWriteParams) },
	workerproto.MethodFSAppendFile:     func() any { return new(workerproto.FSWriteParams) },
	workerproto.MethodFSReadDir:        func() any { return new(workerproto.FSPathParams) },
	workerproto.MethodFSExists:         func() any { return new(workerproto.FSPathParams) },
	workerproto.MethodFSStat:           func() any { return new(workerproto.FSPathParams) },
	workerproto.MethodFSMkdir:          func() any { return new(workerproto.FSPathParams) },
	workerproto.MethodFSRm:             func() any { return new(workerproto.FSPathParams) },
	workerproto.MethodFSRename:         func() any { return new(workerproto.FSRenameParams) },
	workerproto.MethodAsk:              func() any { return new(workerproto.AskParams) },
	workerproto.MethodLLMText:          func() any { return new(workerproto.LLMParams) },
	workerproto.MethodLLMStructured:    func() any { return new(workerproto.LLMParams) },
	workerproto.MethodSessionGet:       func() any { return new(workerproto.SessionParams) },
	workerproto.MethodSessionSet:       func() any { return new(workerproto.SessionParams) },
	workerproto.MethodWorkspaceAddPath: func() any { return new(workerproto.FSPathParams) },
	workerproto.MethodWorkspaceRmPath:  func() any { return new(workerproto.FSPathParams) },
	workerproto.MethodLog:              func() any { return new(workerproto.LogParams) },
	workerproto.MethodProgress:         func() any { return new(workerproto.ProgressParams) },
	workerproto.MethodLedgerRecord:     func() any { return new(workerproto.LedgerParams) },
}

func (h *fakeHost) Handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	mk, ok := wireTypes[req.Method]
	if !ok {
		h.t.Errorf("worker sent unknown method %q", req.Method)
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "unknown", nil)
	}
	dec := json.NewDecoder(bytes.NewReader(req.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(mk()); err != nil {
		h.t.Errorf("%s params %s do not fit the host's type: %v", req.Method, req.Params, err)
	}
	if !bytes.HasPrefix(req.Params, []byte(`{"callId":"`)) && req.Method != workerproto.MethodLog {
		h.t.Errorf("%s params do not start with callId: %s", req.Method, req.Params)
	}
	h.mu.Lock()
	h.got = append(h.got, hostMsg{Method: req.Method, Params: append(json.RawMessage(nil), req.Params...), Notify: req.IsNotification()})
	answer := h.answer
	h.mu.Unlock()
	if req.IsNotification() || answer == nil {
		return nil, nil
	}
	return answer(ctx, req.Method, req.Params)
}

func (h *fakeHost) messages() []hostMsg {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hostMsg(nil), h.got...)
}

func (h *fakeHost) methods() []string {
	var out []string
	for _, m := range h.messages() {
		out = append(out, m.Method)
	}
	return out
}

// worker is a tool served in process, with the host's end of its connection.
type worker struct {
	conn   *jsonrpc.Conn
	host   *fakeHost
	done   chan error
	cancel context.CancelFunc
}

func startWorker(t *testing.T, tl tool.Tool, answer func(ctx context.Context, method string, params json.RawMessage) (any, error)) *worker {
	t.Helper()
	toWorkerR, toWorkerW := io.Pipe()
	toHostR, toHostW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{host: &fakeHost{t: t, answer: answer}, done: make(chan error, 1), cancel: cancel}
	go func() {
		w.done <- tool.ServeContext(ctx, tl, &tool.ServeOptions{In: toWorkerR, Out: toHostW, Logger: slog.New(slog.DiscardHandler)})
	}()
	w.conn = jsonrpc.NewConn(toHostR, toWorkerW, w.host, nil)
	t.Cleanup(func() {
		cancel()
		w.conn.Close()
		select {
		case <-w.done:
		case <-time.After(5 * time.Second):
			t.Error("ServeContext did not return after its context ended")
		}
	})
	return w
}

func (w *worker) initialize(t *testing.T) workerproto.InitializeResult {
	t.Helper()
	var res workerproto.InitializeResult
	err := w.call(workerproto.MethodInitialize, workerproto.InitializeParams{
		ProtocolVersion: workerproto.Version, Bundle: "/tools/x/tool", ToolDir: "/tools/x",
		Rules: workerproto.Rules{Home: "/home/tester"},
	}, &res)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return res
}

func (w *worker) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.conn.Call(ctx, method, params, result)
}

func (w *worker) execute(t *testing.T, id string, input string, cc workerproto.CallContext) tool.Result {
	t.Helper()
	var raw json.RawMessage
	if err := w.call(workerproto.MethodExecute, workerproto.ExecuteParams{CallID: id, Input: json.RawMessage(input), Context: cc}, &raw); err != nil {
		t.Fatalf("execute %s: %v", id, err)
	}
	var r tool.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

func serveTestTool(name string, run func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result) tool.Tool {
	return tool.Func{
		Def: tool.Definition{Name: name, Description: "a test tool", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: run,
	}
}

func TestServeInitialize(t *testing.T) {
	tl := serveTestTool("echo", func(context.Context, *tool.Context, json.RawMessage) tool.Result { return tool.Success("ok") })
	w := startWorker(t, tl, nil)
	res := w.initialize(t)
	if res.Definition.Name != "echo" || res.Shape != "jean2" {
		t.Errorf("definition %q, shape %q", res.Definition.Name, res.Shape)
	}
	if res.Runtime.Name != "go" || res.Runtime.Version != runtime.Version() {
		t.Errorf("runtime %+v, want go %s", res.Runtime, runtime.Version())
	}
	err := w.call(workerproto.MethodInitialize, workerproto.InitializeParams{ProtocolVersion: workerproto.Version}, nil)
	wantRPCError(t, err, workerproto.CodeInvalidRequest, "initialize was already called")
	err = w.call("frobnicate", nil, nil)
	wantRPCError(t, err, workerproto.CodeMethodNotFound, "method not found: frobnicate")
}

func TestServeRefusesOtherProtocolVersionsAndExecuteBeforeInitialize(t *testing.T) {
	tl := serveTestTool("echo", func(context.Context, *tool.Context, json.RawMessage) tool.Result { return tool.Success("ok") })
	w := startWorker(t, tl, nil)
	err := w.call(workerproto.MethodExecute, workerproto.ExecuteParams{CallID: "c1"}, nil)
	wantRPCError(t, err, workerproto.CodeInvalidRequest, "execute before initialize")
	err = w.call(workerproto.MethodInitialize, workerproto.InitializeParams{ProtocolVersion: 99}, nil)
	wantRPCError(t, err, workerproto.CodeInvalidParams, "protocol version 99 is not supported: this worker speaks version 1")
	err = w.call(workerproto.MethodInitialize, json.RawMessage(`[1,2]`), nil)
	wantRPCError(t, err, workerproto.CodeInvalidParams, "initialize needs params")
	w.initialize(t)
	err = w.call(workerproto.MethodExecute, json.RawMessage(`{"input":{}}`), nil)
	wantRPCError(t, err, workerproto.CodeInvalidParams, "execute needs params {callId, input, context}")
}

func TestServeLoadErrorForABadDefinition(t *testing.T) {
	tl := tool.Func{Def: tool.Definition{Name: "bad tool!", Description: "x", InputSchema: json.RawMessage(`{}`)}}
	w := startWorker(t, tl, nil)
	err := w.call(workerproto.MethodInitialize, workerproto.InitializeParams{ProtocolVersion: 1, ToolDir: "/tools/bad"}, nil)
	rpcErr := wantRPCError(t, err, workerproto.CodeLoadError, `definition.name "bad tool!" is not a valid tool name`)
	var d workerproto.LoadErrorData
	if rpcErr == nil || !rpcErr.DecodeData(&d) || d.File != "/tools/bad/tool.go" {
		t.Errorf("load error data: %+v", d)
	}
}

func wantRPCError(t *testing.T, err error, code int, text string) *jsonrpc.Error {
	t.Helper()
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		t.Errorf("error %v, want a JSON-RPC error %d", err, code)
		return nil
	}
	if rpcErr.Code != code || !strings.Contains(rpcErr.Message, text) {
		t.Errorf("error %d %q, want %d containing %q", rpcErr.Code, rpcErr.Message, code, text)
	}
	return rpcErr
}

// powersTool uses every power of its Context and reports what it saw.
func powersTool() tool.Tool {
	return serveTestTool("powers", func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
		seen := map[string]any{}
		fail := func(step string, err error) tool.Result { return tool.Errorf("%s: %v", step, err) }

		text, err := c.FS.ReadFile(ctx, "notes.txt")
		if err != nil {
			return fail("readFile", err)
		}
		seen["read"] = string(text)
		bin, err := c.FS.ReadFile(ctx, "blob.bin")
		if err != nil {
			return fail("readFile blob", err)
		}
		seen["blob"] = bin
		if err := c.FS.WriteFile(ctx, "out.txt", []byte("héllo\n")); err != nil {
			return fail("writeFile", err)
		}
		if err := c.FS.WriteFile(ctx, "out.bin", []byte{0xff, 0x00, 0xfe}); err != nil {
			return fail("writeFile bin", err)
		}
		if err := c.FS.AppendFile(ctx, "out.txt", []byte("more")); err != nil {
			return fail("appendFile", err)
		}
		entries, err := c.FS.ReadDir(ctx, ".")
		if err != nil {
			return fail("readDir", err)
		}
		seen["entries"] = entries
		ok, err := c.FS.Exists(ctx, "out.txt")
		if err != nil {
			return fail("exists", err)
		}
		seen["exists"] = ok
		st, err := c.FS.Stat(ctx, "out.txt")
		if err != nil {
			return fail("stat", err)
		}
		seen["size"] = st.Size
		seen["mtime"] = st.ModifiedAt.UnixMilli()
		if err := c.FS.Mkdir(ctx, "sub/dir", true); err != nil {
			return fail("mkdir", err)
		}
		if err := c.FS.Rename(ctx, "out.bin", "sub/out.bin"); err != nil {
			return fail("rename", err)
		}
		if err := c.FS.Remove(ctx, "sub", true); err != nil {
			return fail("rm", err)
		}
		_, err = c.FS.ReadFile(ctx, "missing.txt")
		var he *tool.HostError
		if !errors.As(err, &he) || !errors.Is(err, fs.ErrNotExist) || he.Code != "ENOENT" || he.Path != "/ws/missing.txt" {
			return tool.Errorf("missing file: got %#v", err)
		}
		seen["missing"] = err.Error()
		err = c.FS.WriteFile(ctx, "/etc/passwd", []byte("x"))
		if !errors.As(err, &he) || !he.Denied || !errors.Is(err, fs.ErrPermission) {
			return tool.Errorf("denied write: got %#v", err)
		}
		seen["denied"] = err.Error()

		answer, err := c.Asker.Ask(ctx, tool.Ask{Type: tool.AskConfirm, Question: "Go on?"})
		if err != nil {
			return fail("ask", err)
		}
		seen["ask"] = answer
		reply, err := c.LLM.GenerateText(ctx, tool.TextRequest{Prompt: "hi", MaxTokens: 5})
		if err != nil {
			return fail("llm text", err)
		}
		seen["text"] = reply
		obj, err := c.LLM.GenerateStructured(ctx, tool.StructuredRequest{TextRequest: tool.TextRequest{Prompt: "obj"}, Schema: json.RawMessage(`{"type":"object"}`)})
		if err != nil {
			return fail("llm structured", err)
		}
		seen["structured"] = obj

		if err := c.Session.Set("local", json.RawMessage(`{"n":1}`)); err != nil {
			return fail("session local set", err)
		}
		store := c.SessionStore()
		v, found, err := store.Get(ctx, "color")
		if err != nil {
			return fail("session get", err)
		}
		seen["color"] = v
		seen["colorFound"] = found
		if _, found, _ := store.Get(ctx, "absent"); found {
			return tool.Errorf("absent fact found")
		}
		if err := store.Set(ctx, "shape", json.RawMessage(`"round"`)); err != nil {
			return fail("session set", err)
		}
		if v, ok := c.Session.Get("shape"); !ok || string(v) != `"round"` {
			return tool.Errorf("c.Session after store.Set: %s %v", v, ok)
		}

		c.Ledger.Record(tool.Change{Path: "external.db", Tool: "powers", Disk: true, OK: true})
		c.Progress(tool.Progress{Message: "half", Current: 1, Total: 2})
		c.Logger.With("a", 1).WithGroup("g").Info("counted", "words", 3, slog.Group("h", "c", true), "err", errors.New("oops"))
		c.Logger.Debug("quiet")

		key, err := c.Env.Require("API_KEY")
		if err != nil {
			return fail("env", err)
		}
		seen["env"] = key
		if _, err := c.Env.Require("OTHER"); err == nil || err.Error() != "Required environment variable not set: OTHER" {
			return tool.Errorf("env OTHER: %v", err)
		}
		if err := c.Workspaces.AddWorkspacePath(ctx, "/data"); err != nil {
			return fail("addWorkspacePath", err)
		}
		seen["allowedAfterAdd"] = append([]string(nil), c.AllowedPaths...)
		if err := c.Workspaces.RemoveWorkspacePath(ctx, "/data"); err != nil {
			return fail("removeWorkspacePath", err)
		}
		seen["allowedAfterRemove"] = c.AllowedPaths
		seen["ids"] = []string{c.CallID, c.SessionID, c.WorkspaceID, c.Workspace, c.TempDir, c.Home, c.Tool}
		seen["resolved"] = c.ResolvePath("~/x")
		seen["within"] = c.IsWithinWorkspace("/ws/a")
		return tool.Success(seen)
	})
}

func powersHost(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p struct {
		Path string `json:"path"`
		Key  string `json:"key"`
	}
	_ = json.Unmarshal(params, &p)
	switch method {
	case workerproto.MethodFSReadFile:
		switch p.Path {
		case "notes.txt":
			return workerproto.FSData{Data: base64.StdEncoding.EncodeToString([]byte("line one\n")), Encoding: "base64"}, nil
		case "blob.bin":
			return workerproto.FSData{Data: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), Encoding: "base64"}, nil
		}
		return nil, jsonrpc.NewError(workerproto.CodeFailed, "ENOENT: no such file or directory, open '/ws/"+p.Path+"'",
			workerproto.ErrorData{Code: "ENOENT", Path: "/ws/" + p.Path})
	case workerproto.MethodFSWriteFile:
		if p.Path == "/etc/passwd" {
			return nil, jsonrpc.NewError(workerproto.CodeDenied, "Access denied: /etc/passwd is a system path", workerproto.ErrorData{Code: "EACCES", Path: "/etc/passwd"})
		}
		return nil, nil
	case workerproto.MethodFSReadDir:
		return []tool.DirEntry{{Name: "notes.txt", IsFile: true}, {Name: "sub", IsDirectory: true}}, nil
	case workerproto.MethodFSExists:
		return true, nil
	case workerproto.MethodFSStat:
		return workerproto.FSStat{Size: 11, IsFile: true, ModifiedAt: 1700000000123}, nil
	case workerproto.MethodAsk:
		return true, nil
	case workerproto.MethodLLMText:
		return "hello from the model", nil
	case workerproto.MethodLLMStructured:
		return map[string]int{"x": 1}, nil
	case workerproto.MethodSessionGet:
		if p.Key == "color" {
			return "blue", nil
		}
		return nil, nil
	case workerproto.MethodWorkspaceAddPath:
		return workerproto.WorkspaceResult{AllowedPaths: []string{"/extra", "/data"}}, nil
	case workerproto.MethodWorkspaceRmPath:
		return workerproto.WorkspaceResult{AllowedPaths: []string{"/extra"}}, nil
	}
	return nil, nil
}

func TestServeEveryContextPower(t *testing.T) {
	w := startWorker(t, powersTool(), powersHost)
	w.initialize(t)
	r := w.execute(t, "call-7", `{}`, workerproto.CallContext{
		SessionID: "s1", WorkspacePath: "/ws", WorkspaceID: "w1", AllowedPaths: []string{"/extra"},
		TempDir: "/tmp/s1", Env: map[string]string{"API_KEY": "k-123"},
	})
	if !r.Success {
		t.Fatalf("call failed: %s", r.Error)
	}
	var seen map[string]any
	if err := json.Unmarshal(r.Result, &seen); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"read": "line one\n", "blob": base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}),
		"exists": true, "size": 11.0, "mtime": 1700000000123.0,
		"entries": []any{
			map[string]any{"name": "notes.txt", "isDirectory": false, "isFile": true},
			map[string]any{"name": "sub", "isDirectory": true, "isFile": false},
		},
		"missing": "ENOENT: no such file or directory, open '/ws/missing.txt'",
		"denied":  "Access denied: /etc/passwd is a system path",
		"ask":     true, "text": "hello from the model", "structured": map[string]any{"x": 1.0},
		"color": "blue", "colorFound": true, "env": "k-123",
		"allowedAfterAdd": []any{"/extra", "/data"}, "allowedAfterRemove": []any{"/extra"},
		"ids":      []any{"call-7", "s1", "w1", "/ws", "/tmp/s1", "/home/tester", "powers"},
		"resolved": "/home/tester/x", "within": true,
	}
	for k, v := range want {
		if !reflect.DeepEqual(seen[k], v) {
			t.Errorf("%s = %#v, want %#v", k, seen[k], v)
		}
	}

	msgs := w.host.messages()
	for _, m := range msgs {
		var p struct {
			CallID string `json:"callId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.CallID != "call-7" {
			t.Errorf("%s carries callId %q", m.Method, p.CallID)
		}
	}
	find := func(method string, match func(json.RawMessage) bool) json.RawMessage {
		for _, m := range msgs {
			if m.Method == method && (match == nil || match(m.Params)) {
				return m.Params
			}
		}
		t.Errorf("no %s among %v", method, w.host.methods())
		return nil
	}
	has := func(s string) func(json.RawMessage) bool {
		return func(p json.RawMessage) bool { return strings.Contains(string(p), s) }
	}
	wantJSON := func(what string, got json.RawMessage, want string) {
		t.Helper()
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	wantJSON("text write", find(workerproto.MethodFSWriteFile, has("out.txt")), `{"callId":"call-7","path":"out.txt","data":"héllo\n","encoding":"utf-8"}`)
	wantJSON("binary write", find(workerproto.MethodFSWriteFile, has("out.bin")), `{"callId":"call-7","path":"out.bin","data":"/wD+","encoding":"base64"}`)
	wantJSON("append", find(workerproto.MethodFSAppendFile, nil), `{"callId":"call-7","path":"out.txt","data":"more","encoding":"utf-8"}`)
	wantJSON("read", find(workerproto.MethodFSReadFile, has("notes")), `{"callId":"call-7","path":"notes.txt","encoding":"base64"}`)
	wantJSON("mkdir", find(workerproto.MethodFSMkdir, nil), `{"callId":"call-7","path":"sub/dir","recursive":true}`)
	wantJSON("rename", find(workerproto.MethodFSRename, nil), `{"callId":"call-7","from":"out.bin","to":"sub/out.bin"}`)
	wantJSON("rm", find(workerproto.MethodFSRm, nil), `{"callId":"call-7","path":"sub","recursive":true}`)
	wantJSON("ask", find(workerproto.MethodAsk, nil), `{"callId":"call-7","ask":{"type":"confirm","question":"Go on?"}}`)
	wantJSON("llm", find(workerproto.MethodLLMText, nil), `{"callId":"call-7","request":{"prompt":"hi","maxTokens":5,"schema":null}}`)
	wantJSON("local fact", find(workerproto.MethodSessionSet, has("local")), `{"callId":"call-7","key":"local","value":{"n":1}}`)
	wantJSON("stored fact", find(workerproto.MethodSessionSet, has("shape")), `{"callId":"call-7","key":"shape","value":"round"}`)
	wantJSON("ledger", find(workerproto.MethodLedgerRecord, nil), `{"callId":"call-7","path":"external.db","tool":"powers","disk":true,"ok":true}`)
	wantJSON("progress", find(workerproto.MethodProgress, nil), `{"callId":"call-7","message":"half","current":1,"total":2}`)
	wantJSON("log", find(workerproto.MethodLog, has("counted")), `{"callId":"call-7","level":"info","message":"counted","data":{"a":1,"g":{"err":"oops","h":{"c":true},"words":3}}}`)
	wantJSON("debug log", find(workerproto.MethodLog, has("quiet")), `{"callId":"call-7","level":"debug","message":"quiet"}`)
	wantJSON("addPath", find(workerproto.MethodWorkspaceAddPath, nil), `{"callId":"call-7","path":"/data"}`)
	if n := len(w.host.messages()); n != len(msgs) {
		t.Errorf("%d messages arrived after the result", n-len(msgs))
	}
	// The local fact is sent once, before the first request after it was set.
	count := 0
	for _, m := range msgs {
		if m.Method == workerproto.MethodSessionSet && strings.Contains(string(m.Params), `"local"`) {
			count++
		}
	}
	if count != 1 {
		t.Errorf("the local fact was sent %d times", count)
	}
}

func TestServeLedgerAndSessionReachTheHostBeforeTheResult(t *testing.T) {
	tl := serveTestTool("recorder", func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
		c.Ledger.Record(tool.Change{Path: "a.txt", Disk: true, OK: true})
		c.Ledger.Record(tool.Change{Path: "b.txt", OK: false, Error: "refused"})
		_ = c.Session.Set("k", json.RawMessage(`[1,2]`))
		return tool.Success("done")
	})
	w := startWorker(t, tl, nil)
	w.initialize(t)
	r := w.execute(t, "c1", `{}`, workerproto.CallContext{WorkspacePath: "/ws"})
	if !r.Success {
		t.Fatal(r.Error)
	}
	got := w.host.methods()
	want := []string{workerproto.MethodLedgerRecord, workerproto.MethodLedgerRecord, workerproto.MethodSessionSet}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("host got %v before the result, want %v", got, want)
	}
	msgs := w.host.messages()
	if len(msgs) == 3 && string(msgs[1].Params) != `{"callId":"c1","path":"b.txt","tool":"","disk":false,"ok":false,"error":"refused"}` {
		t.Errorf("second ledger entry: %s", msgs[1].Params)
	}
}

func TestServePanicFailsOnlyThatCall(t *testing.T) {
	release := make(chan struct{})
	tl := serveTestTool("fragile", func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
		var in struct{ Panic bool }
		_ = json.Unmarshal(args, &in)
		if in.Panic {
			panic("boom")
		}
		<-release
		return tool.Success("survived")
	})
	w := startWorker(t, tl, nil)
	w.initialize(t)
	slow := make(chan tool.Result, 1)
	go func() { slow <- w.execute(t, "slow", `{}`, workerproto.CallContext{WorkspacePath: "/ws"}) }()
	r := w.execute(t, "bad", `{"panic":true}`, workerproto.CallContext{WorkspacePath: "/ws"})
	if r.Success || !strings.HasPrefix(r.Error, "tool fragile panicked: boom") {
		t.Errorf("panicking call: %+v", r)
	}
	close(release)
	if r := <-slow; !r.Success || string(r.Result) != `"survived"` {
		t.Errorf("the other call: %+v", r)
	}
	if r := w.execute(t, "after", `{}`, workerproto.CallContext{WorkspacePath: "/ws"}); !r.Success {
		t.Errorf("a call after the panic: %+v", r)
	}
}

func TestServeCancelReachesTheCallsContext(t *testing.T) {
	started := make(chan struct{})
	tl := serveTestTool("waiter", func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
		close(started)
		<-ctx.Done()
		return tool.Errorf("stopped: %v (canceled=%v)", context.Cause(ctx), errors.Is(ctx.Err(), context.Canceled))
	})
	w := startWorker(t, tl, nil)
	w.initialize(t)
	res := make(chan tool.Result, 1)
	go func() { res <- w.execute(t, "c1", `{}`, workerproto.CallContext{WorkspacePath: "/ws"}) }()
	<-started
	if err := w.conn.Notify(context.Background(), workerproto.MethodCancel, workerproto.CancelParams{CallID: "c1", Reason: "The call timed out"}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.Error != "stopped: The call timed out (canceled=true)" {
			t.Errorf("result: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not see its cancel")
	}
}

func TestServeValidatesArguments(t *testing.T) {
	type in struct {
		Path string `json:"path"`
	}
	typed, err := tool.NewTyped(tool.Definition{Name: "typed", Description: "d"}, func(ctx context.Context, c *tool.Context, i in) (string, error) {
		return "got " + i.Path, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, typed, nil)
	w.initialize(t)
	if r := w.execute(t, "c1", `{"path":"a"}`, workerproto.CallContext{}); !r.Success || string(r.Result) != `"got a"` {
		t.Errorf("valid call: %+v", r)
	}
	r := w.execute(t, "c2", `{"path":3}`, workerproto.CallContext{})
	if r.Success || !strings.HasPrefix(r.Error, "invalid arguments for typed:") {
		t.Errorf("invalid call: %+v", r)
	}
	r = w.execute(t, "c3", `null`, workerproto.CallContext{})
	if r.Success || !strings.Contains(r.Error, "path") {
		t.Errorf("null input is {}; path is required: %+v", r)
	}
}

func TestServeRefusesADuplicateCallID(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	tl := serveTestTool("busy", func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
		started <- struct{}{}
		<-release
		return tool.Success(1)
	})
	w := startWorker(t, tl, nil)
	w.initialize(t)
	first := make(chan tool.Result, 1)
	go func() { first <- w.execute(t, "same", `{}`, workerproto.CallContext{}) }()
	<-started
	err := w.call(workerproto.MethodExecute, workerproto.ExecuteParams{CallID: "same", Input: json.RawMessage(`{}`)}, nil)
	wantRPCError(t, err, workerproto.CodeInvalidParams, "call same is already running on this worker")
	close(release)
	if r := <-first; !r.Success {
		t.Errorf("first call: %+v", r)
	}
}

func TestServeUnserializableResult(t *testing.T) {
	tl := serveTestTool("broken", func(context.Context, *tool.Context, json.RawMessage) tool.Result {
		return tool.Result{Success: true, Result: json.RawMessage(`{not json`)}
	})
	w := startWorker(t, tl, nil)
	w.initialize(t)
	r := w.execute(t, "c1", `{}`, workerproto.CallContext{})
	if r.Success || !strings.HasPrefix(r.Error, "tool result cannot be serialized") {
		t.Errorf("result: %+v", r)
	}
}

func TestServeShutdownAnswersThenReturns(t *testing.T) {
	started := make(chan struct{})
	var sawCancel sync.WaitGroup
	sawCancel.Add(1)
	tl := serveTestTool("long", func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
		close(started)
		<-ctx.Done()
		if context.Cause(ctx).Error() == "The worker is shutting down" {
			sawCancel.Done()
		}
		return tool.Errorf("%v", context.Cause(ctx))
	})
	w := startWorker(t, tl, nil)
	w.initialize(t)
	go func() {
		var raw json.RawMessage
		_ = w.call(workerproto.MethodExecute, workerproto.ExecuteParams{CallID: "c1", Input: json.RawMessage(`{}`)}, &raw)
	}()
	<-started
	var res json.RawMessage
	if err := w.call(workerproto.MethodShutdown, nil, &res); err != nil || string(res) != "null" {
		t.Fatalf("shutdown: %s %v", res, err)
	}
	select {
	case err := <-w.done:
		if err != nil {
			t.Errorf("ServeContext after shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeContext did not return after shutdown")
	}
	sawCancel.Wait()
	w.done <- nil // for the cleanup
}

func TestServeReturnsWhenTheHostGoesAway(t *testing.T) {
	started := make(chan struct{})
	cause := make(chan string, 1)
	tl := serveTestTool("long", func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx).Error()
		return tool.Errorf("gone")
	})
	w := startWorker(t, tl, nil)
	w.initialize(t)
	go func() {
		_, _ = w.conn.Start(workerproto.MethodExecute, workerproto.ExecuteParams{CallID: "c1", Input: json.RawMessage(`{}`)})
	}()
	<-started
	w.conn.Close()
	select {
	case err := <-w.done:
		if err != nil {
			t.Errorf("ServeContext: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeContext did not return when the host went away")
	}
	if c := <-cause; c != "the host went away" && !strings.Contains(c, "closed") {
		t.Errorf("the call's cause: %q", c)
	}
	w.done <- nil
}

func TestHostErrorMatchesFSSentinels(t *testing.T) {
	cases := []struct {
		err    *tool.HostError
		target error
		want   bool
	}{
		{&tool.HostError{Code: "ENOENT"}, fs.ErrNotExist, true},
		{&tool.HostError{Code: "EEXIST"}, fs.ErrExist, true},
		{&tool.HostError{Code: "EACCES"}, fs.ErrPermission, true},
		{&tool.HostError{Code: "EPERM"}, fs.ErrPermission, true},
		{&tool.HostError{Denied: true}, fs.ErrPermission, true},
		{&tool.HostError{Code: "ENOENT"}, fs.ErrPermission, false},
		{&tool.HostError{}, fs.ErrNotExist, false},
	}
	for _, c := range cases {
		if got := errors.Is(fmt.Errorf("wrapped: %w", c.err), c.target); got != c.want {
			t.Errorf("errors.Is(%+v, %v) = %v", c.err, c.target, got)
		}
	}
}

func TestSessionStoreOfAHostContextIsItsFacts(t *testing.T) {
	c := tool.NewContext(tool.Context{})
	ctx := context.Background()
	if err := c.SessionStore().Set(ctx, "k", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Session.Get("k"); !ok || string(v) != "1" {
		t.Errorf("Session after SessionStore().Set: %s %v", v, ok)
	}
	v, ok, err := c.SessionStore().Get(ctx, "k")
	if err != nil || !ok || string(v) != "1" {
		t.Errorf("Get: %s %v %v", v, ok, err)
	}
}

// TestServeWithoutAHost runs Serve in a process that has no fd 3 and fd 4, as when someone
// runs a built tool by hand.
func TestServeWithoutAHost(t *testing.T) {
	if os.Getenv("JEAN2_SERVE_HELPER") == "1" {
		tl := serveTestTool("alone", func(context.Context, *tool.Context, json.RawMessage) tool.Result { return tool.Success(1) })
		err := tool.Serve(tl)
		fmt.Fprintln(os.Stderr, "SERVE:", err)
		os.Exit(3)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeWithoutAHost$")
	cmd.Env = []string{"JEAN2_SERVE_HELPER=1"}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "SERVE: tool.Serve: file descriptor 3 is not the host") ||
		!strings.Contains(string(out), "started by the jean2 host") {
		t.Errorf("output:\n%s", out)
	}
}
