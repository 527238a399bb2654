package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// floodBytes is what a hostile server tries to make jean2 hold: far more than any cap.
const floodBytes = 200 << 20

// hostileHTTP is a real MCP server (the go-sdk's) whose tools/call answers are replaced by a
// flood: a JSON body or one SSE event of floodBytes that never ends in time. written counts
// what it managed to hand to jean2's connection.
func hostileHTTP(t *testing.T, sse bool, method string) (url string, written *atomic.Int64) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "small"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: !sse})
	written = &atomic.Int64{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != method {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, msg.ID)
		if method == "tools/list" {
			head = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"x","inputSchema":{"type":"object"},"description":"`, msg.ID)
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			head = "event: message\ndata: " + head
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
		n, _ := io.WriteString(w, head)
		written.Add(int64(n))
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		for written.Load() < floodBytes {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}]}}`)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, written
}

// allocated is how many bytes the process allocated while f ran (all goroutines: jean2's
// reader and the hostile server's writer, which reuses one buffer).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func startOne(t *testing.T, cfg ServerConfig, others ...ServerConfig) (*Manager, *Server) {
	t.Helper()
	cfg.File = "mcp.json"
	for i := range others {
		others[i].File = "mcp.json"
	}
	m := New(Config{Servers: append([]ServerConfig{cfg}, others...)}, nil, Options{MinBackoff: time.Hour, MaxBackoff: time.Hour})
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Start(ctx)
	for _, s := range m.Servers() {
		if s.cfg.Name == cfg.Name {
			return m, s
		}
	}
	t.Fatalf("no server %s", cfg.Name)
	return nil, nil
}

// An HTTP server that answers tools/call with 200 MB (a JSON body, or one SSE event) cannot
// make jean2 read it all: the read stops at the server's cap, the call fails saying so, the
// server is marked in error, jean2 allocates far less than the flood, and another server of
// the same manager goes on answering.
func TestHostileHTTPServerCannotFloodMemory(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[sse], func(t *testing.T) {
			url, written := hostileHTTP(t, sse, "tools/call")
			healthy := newPeer(t)
			m, s := startOne(t, ServerConfig{Name: "hostile", Type: "http", URL: url, MaxMessageBytes: 1 << 20},
				ServerConfig{Name: "healthy", Type: "http", URL: healthy.url})
			tools, err := s.Tools()
			if err != nil || len(tools) != 1 {
				t.Fatalf("tools %v %v", tools, err)
			}
			var r tool.Result
			alloc := allocated(func() { r = run(t, tools[0], `{}`, nil) })
			t.Logf("server wrote %d bytes; jean2 allocated %d KB for the call", written.Load(), alloc>>10)
			if r.Success || !strings.Contains(r.Error, "MCP server hostile") || !strings.Contains(r.Error, "longer than 1048576 bytes") || !strings.Contains(r.Error, "maxMessageBytes") {
				t.Fatalf("result: success %v, %d bytes, error %q", r.Success, len(r.Result), r.Error)
			}
			// Before the cap the call read the whole 200 MB and allocated over 1 GB.
			if alloc > 32<<20 {
				t.Fatalf("allocated %d MB for a 1 MiB cap", alloc>>20)
			}
			waitFor(t, "the server marked in error", func() bool {
				st, err := s.Status()
				return st == StateError && err != nil && strings.Contains(err.Error(), "longer than 1048576 bytes")
			})
			if w := written.Load(); w >= floodBytes {
				t.Fatalf("jean2 read the whole flood (%d bytes)", w)
			}
			for _, other := range m.Servers() {
				if other.cfg.Name != "healthy" {
					continue
				}
				tools, err := other.Tools()
				if err != nil {
					t.Fatalf("the healthy server: %v", err)
				}
				for _, tl := range tools {
					if tl.Definition().Name == "mcp__healthy__add" {
						if r := run(t, tl, `{"A":2,"B":3}`, nil); !r.Success || !strings.Contains(string(r.Result), "5") {
							t.Fatalf("the healthy server's call: %+v", r)
						}
						return
					}
				}
				t.Fatalf("the healthy server lists no add: %d tools", len(tools))
			}
			t.Fatal("no healthy server")
		})
	}
}

// A server whose tools/list is a flood (read through the tasks sniffer, tasks_http.go) never
// connects: it is listed in error naming the cap.
func TestHostileHTTPToolsList(t *testing.T) {
	url, written := hostileHTTP(t, false, "tools/list")
	var s *Server
	alloc := allocated(func() {
		_, s = startOne(t, ServerConfig{Name: "hostile", Type: "http", URL: url, MaxMessageBytes: 1 << 20})
	})
	st, err := s.Status()
	t.Logf("server wrote %d bytes; jean2 allocated %d KB", written.Load(), alloc>>10)
	if st != StateError || err == nil || !strings.Contains(err.Error(), "MCP server hostile sent a message longer than 1048576 bytes (an HTTP response body)") {
		t.Fatalf("%s %v", st, err)
	}
	if alloc > 32<<20 {
		t.Fatalf("allocated %d MB for a 1 MiB cap", alloc>>20)
	}
}

// A stdio server that answers initialize with an endless line (no newline, ever) is cut off
// at its cap, stopped, and listed in error naming the cap.
func TestHostileStdioServerEndlessLine(t *testing.T) {
	if _, err := exec.LookPath("yes"); err != nil {
		t.Skip("no yes(1)")
	}
	_, s := startOne(t, ServerConfig{Name: "endless", Type: "stdio", Command: "sh", MaxMessageBytes: 1 << 20,
		Args: []string{"-c", `read l; printf '{"jsonrpc":"2.0","id":1,"result":"'; yes aaaaaaaaaaaaaaaaaaaaaaaa | tr -d '\n'`}})
	start := time.Now()
	st, err := s.Status()
	t.Logf("listed in error after %s", time.Since(start))
	if st != StateError || err == nil || !strings.Contains(err.Error(), "MCP server endless sent a message longer than 1048576 bytes") {
		t.Fatalf("%s %v", st, err)
	}
}

// The cap is per message: a stream of many messages, each under the cap, is read in full
// whatever its total, with any line ending SSE allows; one message over the cap is refused.
func TestCapReaderFraming(t *testing.T) {
	read := func(f framing, limit int64, data string) error {
		r := &capReader{r: strings.NewReader(data), limit: limit, framing: f, tooBig: func() error { return &MessageTooLargeError{Server: "s", Limit: limit} }}
		got, err := io.ReadAll(io.Reader(r))
		if err == nil && string(got) != data {
			t.Fatalf("read %q, want %q", got, data)
		}
		return err
	}
	events := strings.Repeat("event: message\ndata: 0123456789\n\n", 100) +
		strings.Repeat("data: 0123456789\r\n\r\n", 100) + strings.Repeat("data: 0123456789\r\r", 100)
	for _, tc := range []struct {
		name    string
		f       framing
		data    string
		tooBig  bool
		limited int64
	}{
		{"events under the cap", frameEvent, events, false, 40},
		{"one event of many lines", frameEvent, strings.Repeat("data: 0123456789\r\n", 10) + "\r\n", true, 40},
		{"lines under the cap", frameLine, strings.Repeat(`{"jsonrpc":"2.0"}`+"\n", 1000), false, 20},
		{"a line over the cap", frameLine, strings.Repeat(`{"jsonrpc":"2.0"}`+"\n", 10) + strings.Repeat("a", 21) + "\n", true, 20},
		{"a body at the cap", frameBody, strings.Repeat("a", 20), false, 20},
		{"a body over the cap", frameBody, strings.Repeat("a", 21), true, 20},
	} {
		err := read(tc.f, tc.limited, tc.data)
		if (err != nil) != tc.tooBig {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
