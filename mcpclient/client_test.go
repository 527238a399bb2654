package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParse(t *testing.T) {
	ok, err := Parse("a.json", []byte(`{"mcpServers": {
		"files": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}, "timeout": 5000},
		"web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
		"old": {"type": "sse", "url": "http://localhost:1/sse"},
		"off": {"command": "nope", "disabled": true}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ok) != 3 || ok[0].Name != "files" || ok[0].Type != "stdio" || ok[0].Timeout != 5000 || ok[1].Name != "old" || ok[1].Type != "sse" || ok[2].Type != "http" || ok[2].File != "a.json" {
		t.Fatalf("%+v", ok)
	}
	for _, tc := range []struct{ in, want string }{
		{`{`, "not valid JSON"},
		{`{"servers": {}}`, `no "mcpServers" object`},
		{`{"mcpServers": {"x": {}}}`, "mcpServers.x: give command (a stdio server) or url (an HTTP server)"},
		{`{"mcpServers": {"x": {"command": "a", "url": "http://b"}}}`, "not both"},
		{`{"mcpServers": {"x": {"url": "ftp://b"}}}`, `url "ftp://b" is not an http(s) URL`},
		{`{"mcpServers": {"x": {"command": "a", "env": {"BAD NAME": "1"}}}}`, `env: "BAD NAME" is not an environment variable name`},
		{`{"mcpServers": {"x": {"command": "a", "colour": "red"}}}`, `unknown field "colour"`},
		{`{"mcpServers": {"x": {"type": "ws", "url": "http://b"}}}`, `type "ws" is not stdio, http or sse`},
		{`{"mcpServers": {"x": {"url": "http://b", "args": ["a"]}}}`, "not command, args or env"},
		{`{"mcpServers": {"x": {"command": "a", "timeout": -1}}}`, "timeout -1"},
		{`{"mcpServers": {"x": {"command": "a", "maxMessageBytes": -1}}}`, "maxMessageBytes -1: give a positive number of bytes"},
	} {
		if _, err := Parse("f", []byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A later file replaces a server of the same name; a missing file is skipped; a broken file
// is reported while the good ones still count.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	home, ws, bad := filepath.Join(dir, "home.json"), filepath.Join(dir, "ws.json"), filepath.Join(dir, "bad.json")
	_ = os.WriteFile(home, []byte(`{"mcpServers": {"a": {"command": "from-home"}, "b": {"command": "b"}}}`), 0o644)
	_ = os.WriteFile(ws, []byte(`{"mcpServers": {"a": {"command": "from-ws"}}}`), 0o644)
	_ = os.WriteFile(bad, []byte(`{"mcpServers": []}`), 0o644)
	cfg, err := Load(home, filepath.Join(dir, "missing.json"), bad, ws)
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != bad {
		t.Fatalf("error %v", err)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[0].Command != "from-ws" || cfg.Servers[0].File != ws || cfg.Servers[1].Name != "b" {
		t.Fatalf("%+v", cfg.Servers)
	}
	m := New(cfg, err, Options{})
	srcs := m.Sources()
	if len(srcs) != 3 || srcs[2].Name() != "mcp.json:"+bad {
		t.Fatalf("sources %v", srcs)
	}
	if _, err := srcs[2].Tools(); err == nil || !strings.Contains(err.Error(), "cannot unmarshal array") {
		t.Fatalf("broken file: %v", err)
	}
	if _, err := srcs[0].Tools(); err == nil || !strings.Contains(err.Error(), "not connected yet") {
		t.Fatalf("before start: %v", err)
	}
	m.Close()
}

// A stdio server sees PATH, HOME and its own variables (references expanded), nothing else.
func TestCommandEnv(t *testing.T) {
	vars := map[string]string{"PATH": "/bin", "HOME": "/h", "SECRET": "s", "TOKEN": "t0k"}
	s := ServerConfig{Env: map[string]string{"API_KEY": "${TOKEN}", "MODE": "x-${MISSING}-y"}}
	got := strings.Join(s.commandEnv(func(k string) string { return vars[k] }, nil), " ")
	if got != "API_KEY=t0k HOME=/h JEAN2_MCP_NESTED=1 MODE=x--y PATH=/bin" {
		t.Fatalf("%s", got)
	}
}

// peer is a Go SDK server reached over streamable HTTP, for the client's own tests (the
// TypeScript SDK server is tested through the jean2 binary in cmd/jean2).
type peer struct {
	srv     *mcp.Server
	url     string
	down    atomic.Bool // answer 503 (a server that is not up yet)
	auth    atomic.Value
	aborted chan error
	// progressSeen is closed by the test when its progress callback ran: add waits for it
	// before answering, so the test shows progress reaching the caller while the call is
	// still running (the Go SDK hands notifications to a goroutine of their own, so one
	// sent just before a result can otherwise be handled after the call returned).
	progressSeen chan struct{}
}

func newPeer(t *testing.T) *peer {
	p := &peer{srv: mcp.NewServer(&mcp.Implementation{Name: "peer", Version: "1"}, nil), aborted: make(chan error, 4), progressSeen: make(chan struct{})}
	mcp.AddTool(p.srv, &mcp.Tool{Name: "add", Title: "Add", Description: "Add.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, in struct{ A, B int }) (*mcp.CallToolResult, struct{ Sum int }, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
				select {
				case <-p.progressSeen:
				case <-time.After(5 * time.Second):
				}
			}
			return nil, struct{ Sum int }{in.A + in.B}, nil
		})
	p.srv.AddTool(&mcp.Tool{Name: "say/hi", Description: "", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}, &mcp.TextContent{Text: "there"}}}, nil
		})
	p.srv.AddTool(&mcp.Tool{Name: "fail", Description: "Fails.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil
		})
	p.srv.AddTool(&mcp.Tool{Name: "slow", Description: "Waits.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				p.aborted <- ctx.Err()
				return nil, ctx.Err()
			case <-time.After(20 * time.Second):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
			}
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			http.Error(w, "starting up", http.StatusServiceUnavailable)
			return
		}
		p.auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	p.url = ts.URL
	return p
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func run(t *testing.T, tl tool.Tool, args string, c *tool.Context) tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c == nil {
		c = tool.NewContext(tool.Context{})
	}
	return tl.Execute(ctx, c, json.RawMessage(args))
}

// A server that is down is listed with its error and retried with backoff; once up, its
// tools are offered, called (results, failures, progress, headers), timed out and cancelled
// with the server told, and refreshed on list_changed.
func TestServerLifecycle(t *testing.T) {
	p := newPeer(t)
	p.down.Store(true)
	cfg := Config{Servers: []ServerConfig{{Name: "peer", Type: "http", URL: p.url, Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}, Timeout: 300, File: "mcp.json"}}}
	m := New(cfg, nil, Options{Getenv: func(k string) string { return map[string]string{"TOKEN": "s3cret"}[k] }, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	defer m.Close()
	var changes atomic.Int32
	m.OnChange(func() { changes.Add(1) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	m.Start(ctx)
	cancel()
	src := m.Sources()[0]
	if src.Name() != "mcp:peer" || src.Kind() != "mcp" {
		t.Fatalf("%s %s", src.Name(), src.Kind())
	}
	if _, err := src.Tools(); err == nil || !strings.Contains(err.Error(), "MCP server peer (mcp.json): connect:") || !strings.Contains(err.Error(), "retrying in 50ms (attempt 1)") {
		t.Fatalf("down: %v", err)
	}
	p.down.Store(false)
	var tools []tool.Tool
	waitFor(t, "the server to come up", func() bool {
		var err error
		tools, err = src.Tools()
		return err == nil
	})
	waitFor(t, "a change", func() bool { return changes.Load() >= 1 })
	if p.auth.Load() != "Bearer s3cret" {
		t.Fatalf("header %v", p.auth.Load())
	}
	byName := map[string]tool.Tool{}
	for _, tl := range tools {
		byName[tl.Definition().Name] = tl
	}
	add, hi := byName["mcp__peer__add"], byName["mcp__peer__say_hi"]
	if add == nil || hi == nil || len(byName) != 4 {
		t.Fatalf("tools %v", byName)
	}
	def := add.Definition()
	if def.Title != "Add" || !def.ReadOnly() || !strings.Contains(string(def.InputSchema), `"A"`) || len(def.OutputSchema) == 0 || def.Timeout != 300 {
		t.Fatalf("add definition %+v", def)
	}
	if err := def.Check(); err != nil {
		t.Fatal(err)
	}
	if hi.Definition().Description != "Tool say/hi of the MCP server peer." {
		t.Fatalf("description %q", hi.Definition().Description)
	}

	var (
		reportsMu sync.Mutex
		reports   []tool.Progress
	)
	c := tool.NewContext(tool.Context{Progress: func(pr tool.Progress) {
		reportsMu.Lock()
		defer reportsMu.Unlock()
		if reports = append(reports, pr); len(reports) == 1 {
			close(p.progressSeen)
		}
	}})
	if r := run(t, add, `{"A":2,"B":3}`, c); !r.Success || string(r.Result) != `{"Sum":5}` {
		t.Fatalf("add %+v", r)
	}
	reportsMu.Lock()
	got := slices.Clone(reports)
	reportsMu.Unlock()
	if len(got) != 1 || got[0].Message != "half" || got[0].Total != 2 {
		t.Fatalf("progress %+v", got)
	}
	if r := run(t, hi, `{}`, nil); !r.Success || string(r.Result) != `"hi\nthere"` {
		t.Fatalf("hi %+v", r)
	}
	if r := run(t, byName["mcp__peer__fail"], `{}`, nil); r.Success || r.Error != "it broke" {
		t.Fatalf("fail %+v", r)
	}
	// The definition's timeout ends the call, and the server's handler is cancelled.
	if r := run(t, byName["mcp__peer__slow"], `{}`, nil); r.Success || r.Error != "Tool execution timed out after 300ms" {
		t.Fatalf("slow %+v", r)
	}
	select {
	case <-p.aborted:
	case <-time.After(5 * time.Second):
		t.Fatal("the server was not told of the timeout")
	}
	// Stop (the caller's context) is a cancellation too.
	stop, stopNow := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); stopNow() }()
	if r := byName["mcp__peer__slow"].Execute(stop, tool.NewContext(tool.Context{}), json.RawMessage(`{}`)); r.Success || !strings.Contains(r.Error, "cancelled") {
		t.Fatalf("stopped slow %+v", r)
	}
	select {
	case <-p.aborted:
	case <-time.After(5 * time.Second):
		t.Fatal("the server was not told of the stop")
	}

	// list_changed: the tools are listed again and the host told; unchanged tools keep
	// their value (so the host keeps their version).
	before := changes.Load()
	p.srv.AddTool(&mcp.Tool{Name: "new", Description: "New.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	waitFor(t, "list_changed", func() bool { return changes.Load() > before })
	again, err := src.Tools()
	if err != nil || len(again) != 5 {
		t.Fatalf("after list_changed: %v %v", again, err)
	}
	for _, tl := range again {
		if tl.Definition().Name == "mcp__peer__add" && tl != add {
			t.Fatal("an unchanged tool was replaced")
		}
	}
}

// The result conversion keeps structured content, joins text, says what an image that is
// not one was, and carries a jean2 visualization.
func TestFromResult(t *testing.T) {
	r := fromResult(&mcp.CallToolResult{
		Meta:    mcp.Meta{metaVisualization: map[string]any{"type": "markdown", "content": "x"}},
		Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2}}},
	})
	if !r.Success || string(r.Result) != `"a\n[an image the server sent as image/png that is not one: not shown]"` || string(r.Visualization) != `{"content":"x","type":"markdown"}` {
		t.Fatalf("%+v", r)
	}
	r = fromResult(&mcp.CallToolResult{IsError: true})
	if r.Success || r.Error == "" {
		t.Fatalf("%+v", r)
	}
}

// Imported tools are namespaced by their server, in names every provider accepts
// (^[A-Za-z0-9_-]{1,64}$), and two long names stay apart after the cut.
func TestQualifiedName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	long := strings.Repeat("x", 80)
	for _, tc := range []struct{ server, tool, want string }{
		{"files", "read_file", "mcp__files__read_file"},
		{"my server", "a/b.c", "mcp__my_server__a_b_c"},
		{"s", "-x", "mcp__s__-x"},
		{"s", long + "1", ""},
		{"s", long + "2", ""},
	} {
		got := QualifiedName(tc.server, tc.tool)
		if !valid.MatchString(got) || (tc.want != "" && got != tc.want) {
			t.Errorf("QualifiedName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
	if QualifiedName("s", long+"1") == QualifiedName("s", long+"2") {
		t.Error("two long names were cut to one")
	}
}
