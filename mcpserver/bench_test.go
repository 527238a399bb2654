package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallTool is one tools/call through the MCP server to a tool compiled into the
// binary, over an in-memory transport: what the MCP layer costs above host.Invoke.
func BenchmarkCallTool(b *testing.B) {
	for _, version := range []string{newest, classic} {
		b.Run("version="+map[string]string{newest: "2026-07-28", classic: classic}[version], func(b *testing.B) {
			r := newRig(b)
			cs := r.connect(version, nil)
			params := &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// BenchmarkStdioServer is the server side alone: raw JSON-RPC lines written to the stdio
// transport and the answers read back, one call at a time, through Server.Run (so classic
// tools/call takes the fast path, fastcall.go), to a tool compiled into the binary
// (whoami) or a JS tool in a Node worker (trivial); transport=go-sdk swaps jean2's
// StdioTransport for the go-sdk's IOTransport.
func BenchmarkStdioServer(b *testing.B) {
	for _, tool := range []string{"whoami", "trivial"} {
		for _, tr := range []string{"jean2", "go-sdk"} {
			b.Run("tool="+tool+"/transport="+tr, func(b *testing.B) { benchStdio(b, tool, tr) })
		}
	}
}

// trivialTool is the JS tool of the benchmarks (a worker on Node).
const trivialTool = `export const definition = { name: 'trivial', description: 'returns ok', inputSchema: { type: 'object', properties: { n: { type: 'number' } } } };
export async function execute(input) { return { success: true, result: 'pong ' + input.n }; }
`

func benchStdio(b *testing.B, tool, transport string) {
	r := newRig(b, func(r *rig) { r.folders = map[string]string{"trivial": trivialTool} })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var t mcp.Transport = &mcpserver.StdioTransport{Reader: inR, Writer: outW}
	if transport == "go-sdk" {
		t = &mcp.IOTransport{Reader: inR, Writer: outW}
	}
	go func() { _ = r.srv.Run(ctx, t) }()
	lines := bufio.NewReader(outR)
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			b.Fatal(err)
		}
	}
	recv := func() string {
		l, err := lines.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	recv()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 0
	callOnce := func() time.Duration {
		id++
		start := time.Now()
		send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"n":1}}}`)
		if l := recv(); !strings.Contains(l, `"result"`) || strings.Contains(l, `"isError":true`) {
			b.Fatal(l)
		}
		return time.Since(start)
	}
	for range 200 { // start the worker, warm the JIT
		callOnce()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		lat = append(lat, callOnce())
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
}

// BenchmarkHTTPServer is tools/call over streamable HTTP (HTTPHandler behind httptest, the
// Go SDK client) to a tool compiled into the binary: a 2025-11-25 session (SSE answers,
// priming events, the event store) and a 2026-07-28 stateless client, one call at a time
// (p50 reported) and 32 in flight.
func BenchmarkHTTPServer(b *testing.B) {
	for _, version := range []string{classic, newest} {
		name := map[string]string{newest: "2026-07-28-stateless", classic: classic + "-session"}[version]
		for _, inflight := range []int{1, 32} {
			b.Run(name+"/inflight="+strconv.Itoa(inflight), func(b *testing.B) {
				r := newRig(b)
				ts := httptest.NewServer(r.srv.HTTPHandler())
				defer ts.Close()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
					Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				params := &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}
				one := func() time.Duration {
					start := time.Now()
					if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
						b.Fatal(err, res)
					}
					return time.Since(start)
				}
				for range 100 {
					one()
				}
				b.ReportAllocs()
				b.ResetTimer()
				if inflight == 1 {
					lat := make([]time.Duration, 0, b.N)
					for b.Loop() {
						lat = append(lat, one())
					}
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
					return
				}
				b.SetParallelism((inflight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						one()
					}
				})
			})
		}
	}
}
