package node

import (
	"bufio"
	"context"
	"encoding/json"

	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/runtime/worker"
)

const trivialTool = `
export const definition = { name: 'trivial', description: 'Returns ok.', inputSchema: { type: 'object' } };
export async function execute() { return { success: true, result: { ok: true } }; }
`

// benchRuntimes runs f against Node and Bun.
func benchRuntimes(b *testing.B, f func(b *testing.B, rt Runtime)) {
	for _, rt := range runtimes(b) {
		b.Run(rt.Kind, func(b *testing.B) { f(b, rt) })
	}
}

func benchPool(b *testing.B, rt Runtime, opts worker.PoolOptions) *worker.Pool {
	b.Helper()
	dir := b.TempDir()
	bundle := filepath.Join(dir, "tool.mjs")
	if err := os.WriteFile(bundle, []byte(trivialTool), 0o644); err != nil {
		b.Fatal(err)
	}
	opts.Name = "trivial"
	opts.Init.Bundle = bundle
	opts.Init.ToolDir = dir
	p := worker.NewPool(NewLauncher(rt, LauncherOptions{CacheDir: b.TempDir(), Dir: dir}), opts)
	b.Cleanup(func() { p.Close(context.Background()) })
	if _, err := p.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return p
}

var benchCallContext = json.RawMessage(`{}`)

// BenchmarkCallOverhead is one call at a time through Pool.Execute to a trivial tool.
func BenchmarkCallOverhead(b *testing.B) {
	benchRuntimes(b, func(b *testing.B, rt Runtime) {
		p := benchPool(b, rt, worker.PoolOptions{MaxWorkers: 1})
		ctx := context.Background()
		h := &fakeHost{}
		call := worker.Call{ID: "c", Input: benchCallContext, Timeout: 30 * time.Second}
		call.Context.WorkspacePath = "/tmp"
		for range 2000 { // warm up the JIT on both sides
			if _, err := p.Execute(ctx, call, h); err != nil {
				b.Fatal(err)
			}
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			t0 := time.Now()
			if _, err := p.Execute(ctx, call, h); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		reportLatency(b, lat)
	})
}

// BenchmarkThroughput32 keeps 32 calls in flight.
func BenchmarkThroughput32(b *testing.B) {
	benchRuntimes(b, func(b *testing.B, rt Runtime) {
		p := benchPool(b, rt, worker.PoolOptions{})
		ctx := context.Background()
		h := &fakeHost{}
		var seq atomic.Int64
		run := func(n int) {
			var wg sync.WaitGroup
			var left atomic.Int64
			left.Store(int64(n))
			for range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						call := worker.Call{ID: "c" + strconv.FormatInt(seq.Add(1), 10), Input: benchCallContext, Timeout: 30 * time.Second}
						if _, err := p.Execute(ctx, call, h); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		}
		run(5000) // warm up, and let the pool grow
		b.ResetTimer()
		t0 := time.Now()
		run(b.N)
		b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "calls/s")
		b.ReportMetric(float64(p.Stats().Workers), "workers")
	})
}

// BenchmarkBarePipe is the floor: a Go loop writing one line to a runtime that echoes it back
// over the same fd 3 / fd 4 pipes, no JSON-RPC, no pool.
func BenchmarkBarePipe(b *testing.B) {
	benchRuntimes(b, func(b *testing.B, rt Runtime) { barePipe(b, rt, 0) })
}

// BenchmarkBarePipeIdle is BenchmarkBarePipe with the Go side asleep between round trips
// (time.Sleep of 200 µs; about 1 ms on our VMs), as jean2 waits while an MCP client takes
// its turn (the ns/op is mostly that sleep: read p50): the runtime has gone to sleep when
// each request comes, and waking it (and its CPU) is what a warm call's hop to a worker
// costs beyond the bare round trip (docs/performance.md, "Issue 25").
func BenchmarkBarePipeIdle(b *testing.B) {
	benchRuntimes(b, func(b *testing.B, rt Runtime) { barePipe(b, rt, 200*time.Microsecond) })
}

// barePipeEcho answers each line it reads with the same line.
const barePipeEcho = `
import net from 'node:net';
const lines = (onLine) => {
  let buf = '';
  const feed = (s) => { buf += s; let i; while ((i = buf.indexOf('\n')) >= 0) { onLine(buf.slice(0, i)); buf = buf.slice(i + 1); } };
  if (typeof Bun !== 'undefined') {
    (async () => { const d = new TextDecoder(); for await (const c of Bun.file(3).stream()) feed(d.decode(c, { stream: true })); process.exit(0); })();
  } else {
    const s = new net.Socket({ fd: 3, readable: true, writable: false }); s.setEncoding('utf8'); s.on('data', feed); s.on('end', () => process.exit(0));
  }
};
let write;
if (typeof Bun !== 'undefined') { const w = Bun.file(4).writer(); write = (s) => { w.write(s); w.flush(); }; }
else { const o = new net.Socket({ fd: 4, readable: false, writable: true }); write = (s) => o.write(s); }
lines((l) => write(l + '\n'));
`

// barePipe times round trips through barePipeEcho, with gap between them.
func barePipe(b *testing.B, rt Runtime, gap time.Duration) {
	dir := b.TempDir()
	script := filepath.Join(dir, "echo.mjs")
	if err := os.WriteFile(script, []byte(barePipeEcho), 0o644); err != nil {
		b.Fatal(err)
	}
	r1, w1, _ := os.Pipe()
	r2, w2, _ := os.Pipe()
	cmd := exec.Command(rt.Path, script)
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{r1, w2}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r1.Close()
	w2.Close()
	defer func() { w1.Close(); cmd.Wait(); r2.Close() }()
	br := bufio.NewReader(r2)
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"success":true,"result":{"ok":true}}}` + "\n")
	roundTrip := func() {
		if _, err := w1.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
	for range 2000 {
		roundTrip()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		if gap > 0 {
			time.Sleep(gap)
		}
		t0 := time.Now()
		roundTrip()
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

// BenchmarkWorkerScript is the worker script alone: raw execute lines written one at a time
// to a real worker, answers read back, no JSON-RPC package and no pool on the Go side. The
// difference to BenchmarkBarePipe is the script's cost; to BenchmarkCallOverhead, the pool's.
func BenchmarkWorkerScript(b *testing.B) {
	benchRuntimes(b, func(b *testing.B, rt Runtime) { workerScript(b, rt, 0) })
}

// BenchmarkWorkerScriptIdle is BenchmarkWorkerScript with the Go side asleep between calls,
// as under an MCP client taking its turn; against BenchmarkBarePipeIdle it is what the
// script costs a worker that was asleep when the call came.
func BenchmarkWorkerScriptIdle(b *testing.B) {
	benchRuntimes(b, func(b *testing.B, rt Runtime) { workerScript(b, rt, 200*time.Microsecond) })
}

// workerScript times execute round trips through a real worker, with gap between them.
func workerScript(b *testing.B, rt Runtime, gap time.Duration) {
	{
		dir := b.TempDir()
		bundle := filepath.Join(dir, "tool.mjs")
		if err := os.WriteFile(bundle, []byte(trivialTool), 0o644); err != nil {
			b.Fatal(err)
		}
		l := NewLauncher(rt, LauncherOptions{CacheDir: dir})
		if err := l.Prepare(); err != nil {
			b.Fatal(err)
		}
		r1, w1, _ := os.Pipe()
		r2, w2, _ := os.Pipe()
		cmd := exec.Command(l.Path, l.Args...)
		cmd.Env = []string{}
		cmd.ExtraFiles = []*os.File{r1, w2}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		r1.Close()
		w2.Close()
		defer func() { w1.Close(); cmd.Wait(); r2.Close() }()
		br := bufio.NewReader(r2)
		init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"bundle":` + strconv.Quote(bundle) + `}}` + "\n"
		if _, err := w1.Write([]byte(init)); err != nil {
			b.Fatal(err)
		}
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"execute","params":{"callId":"c","input":{},"context":{"sessionId":"","workspacePath":"/tmp","allowedPaths":null,"tempDir":"","env":null}}}` + "\n")
		roundTrip := func() {
			if _, err := w1.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := br.ReadSlice('\n'); err != nil {
				b.Fatal(err)
			}
		}
		for range 2000 {
			roundTrip()
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			if gap > 0 {
				time.Sleep(gap)
			}
			t0 := time.Now()
			roundTrip()
			lat = append(lat, time.Since(t0))
		}
		reportLatency(b, lat)
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds()), "p95-µs")
}
