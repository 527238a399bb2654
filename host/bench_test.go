package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

const trivialTool = `export const definition = { name: 'trivial', description: 'returns ok', inputSchema: { type: 'object', properties: { n: { type: 'number' } } } };
export async function execute(input) { return { success: true, result: { ok: true } }; }
`

// benchFixture makes a host whose tools folder holds the trivial tool; opts, when given,
// adjust the options before the host starts.
func benchFixture(b *testing.B, opts ...func(*host.Options)) (*host.Host, string) {
	b.Helper()
	root := b.TempDir()
	layout, _ := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	_ = layout.Ensure()
	_ = os.MkdirAll(filepath.Join(layout.Tools, "trivial"), 0o755)
	_ = os.WriteFile(filepath.Join(layout.Tools, "trivial", "tool.js"), []byte(trivialTool), 0o644)
	ws := filepath.Join(root, "ws")
	_ = os.MkdirAll(ws, 0o755)
	o := host.Options{Layout: layout, ServerEnv: []string{}}
	for _, f := range opts {
		f(&o)
	}
	h, err := host.New(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close(context.Background()) })
	return h, ws
}

// cpuUse is CPU time spent so far by this process (the host) and by its children that
// are still running (the workers).
type cpuUse struct{ host, workers time.Duration }

// cpuTimes reads the CPU time of the host and of its live child processes. On a shared
// machine calls/s swings with the load of others; CPU time per call does much less, which
// makes before/after comparisons possible.
func cpuTimes() cpuUse {
	var u cpuUse
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.host = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	self := os.Getpid()
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) start after the last ')'.
		i := strings.LastIndexByte(string(raw), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 13 || f[1] != strconv.Itoa(self) {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		u.workers += time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
	}
	return u
}

// reportCPU reports the host's and the workers' CPU time per operation since from.
func reportCPU(b *testing.B, from cpuUse) {
	now := cpuTimes()
	b.ReportMetric(float64((now.host-from.host).Microseconds())/float64(b.N), "host-cpu-µs/op")
	b.ReportMetric(float64((now.workers-from.workers).Microseconds())/float64(b.N), "worker-cpu-µs/op")
}

func percentile(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(float64(len(d)-1)*p)]
}

// BenchmarkInvokeWarm is the warm per-call cost of a trivial JS tool through host.Invoke:
// validation, the enforced context, the worker round trip, normalization and the model text.
func BenchmarkInvokeWarm(b *testing.B) {
	h, ws := benchFixture(b)
	call := host.Call{Tool: "trivial", Args: json.RawMessage(`{"n":1}`), SessionID: "bench", Workspace: host.Workspace{Path: ws}}
	ctx := context.Background()
	for range 200 { // warm the worker and the JIT
		if out := h.Invoke(ctx, call); !out.Result.Success {
			b.Fatal(out.Result.Error)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		out := h.Invoke(ctx, call)
		lat = append(lat, time.Since(start))
		if !out.Result.Success {
			b.Fatal(out.Result.Error)
		}
	}
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.95).Microseconds()), "p95-µs")
}

// BenchmarkInvokeThroughput32 keeps 32 calls in flight and reports calls per second once
// the worker is warm: V8 compiles a worker's hot paths only after some thousands of calls,
// and until then each call costs the worker several times as much (a 30,000-call run
// after 200 warm-up calls measured a third less).
func BenchmarkInvokeThroughput32(b *testing.B) {
	h, ws := benchFixture(b)
	call := host.Call{Tool: "trivial", Args: json.RawMessage(`{"n":1}`), SessionID: "bench", Workspace: host.Workspace{Path: ws}}
	ctx := context.Background()
	var failed atomic.Int64
	inFlight32 := func(n int64) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= n {
					if out := h.Invoke(ctx, call); !out.Result.Success {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
	}
	inFlight32(5000) // warm up
	b.ResetTimer()
	cpu0 := cpuTimes()
	start := time.Now()
	inFlight32(int64(b.N))
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	reportCPU(b, cpu0)
	if failed.Load() > 0 {
		b.Fatalf("%d calls failed", failed.Load())
	}
}

// BenchmarkFirstCallNewTool is a new tool without dependencies appearing: scan, bundle,
// learn its definition, first call answered; unconfined (off) and confined (landlock: the
// worker that learns the definition and the one that serves the call are two processes,
// started side by side). reload-ms is Reload (bundle, definition), call-ms the first call.
//
//	go test -run '^$' -bench FirstCallNewTool -benchtime 30x ./host
func BenchmarkFirstCallNewTool(b *testing.B) {
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeLandlock} {
		b.Run(string(mode), func(b *testing.B) {
			h, ws := sandboxBenchHost(b, mode)
			benchFirstCall(b, h, ws)
		})
	}
}

func benchFirstCall(b *testing.B, h *host.Host, ws string) {
	ctx := context.Background()
	// A person at work in the workspace adds a tool: the host has served a call there (the
	// scope whose worker a confined tool's load starts ahead, host/prestart.go).
	if out := h.Invoke(ctx, host.Call{Tool: "trivial", Args: json.RawMessage(`{}`), SessionID: "bench", Workspace: host.Workspace{Path: ws}}); !out.Result.Success {
		b.Fatal(out.Result.Error)
	}
	var reload, call time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		name := fmt.Sprintf("fresh-%d-%d", time.Now().UnixNano(), i)
		dir := filepath.Join(h.Layout().Tools, name)
		_ = os.MkdirAll(dir, 0o755)
		src := strings.Replace(trivialTool, "'trivial'", "'"+name+"'", 1)
		_ = os.WriteFile(filepath.Join(dir, "tool.ts"), []byte(src), 0o644)
		b.StartTimer()
		start := time.Now()
		if err := h.Reload(ctx); err != nil {
			b.Fatal(err)
		}
		loaded := time.Now()
		out := h.Invoke(ctx, host.Call{Tool: name, Args: json.RawMessage(`{}`), SessionID: "bench", Workspace: host.Workspace{Path: ws}})
		if !out.Result.Success {
			b.Fatal(out.Result.Error)
		}
		b.StopTimer()
		reload += loaded.Sub(start)
		call += time.Since(loaded)
		_ = os.RemoveAll(dir)
		b.StartTimer()
	}
	// Where the time goes: the reload (bundle, learn the definition) and the first call.
	b.ReportMetric(float64(reload.Microseconds())/1000/float64(b.N), "reload-ms/op")
	b.ReportMetric(float64(call.Microseconds())/1000/float64(b.N), "call-ms/op")
}

// BenchmarkFirstCallNewToolWatched is a new tool folder appearing while the watcher runs,
// as a person or an agent makes one: the folder and its tool.ts are written, and the clock
// stops at the answer of the tool's first call, made as soon as the host says the tool was
// added (as an MCP client calls once list_changed told it). With the sandbox on, the
// workers start when the watcher sees the folder (earlystart.go). listed-ms is the time
// until the host announced the tool.
//
//	go test -run '^$' -bench FirstCallNewToolWatched -benchtime 15x ./host
func BenchmarkFirstCallNewToolWatched(b *testing.B) {
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeLandlock} {
		b.Run(string(mode), func(b *testing.B) {
			h, ws := sandboxBenchHost(b, mode)
			benchFirstCallWatched(b, h, ws)
		})
	}
}

func benchFirstCallWatched(b *testing.B, h *host.Host, ws string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Watch(ctx, host.WatchOptions{Rescan: -1}) }()
	defer func() { cancel(); <-done }()
	changes := make(chan host.ToolsChanged, 16)
	defer h.Subscribe(changes)()
	time.Sleep(100 * time.Millisecond)
	if out := h.Invoke(ctx, host.Call{Tool: "trivial", Args: json.RawMessage(`{}`), SessionID: "bench", Workspace: host.Workspace{Path: ws}}); !out.Result.Success {
		b.Fatal(out.Result.Error)
	}
	var lat, listed []time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		time.Sleep(300 * time.Millisecond) // the previous folder's removal is reloaded
		for len(changes) > 0 {
			<-changes
		}
		name := fmt.Sprintf("fresh-%d-%d", time.Now().UnixNano(), i)
		dir := filepath.Join(h.Layout().Tools, name)
		src := strings.Replace(trivialTool, "'trivial'", "'"+name+"'", 1)
		b.StartTimer()
		start := time.Now()
		_ = os.Mkdir(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644)
		waitAdded(b, changes, name)
		seen := time.Since(start)
		out := h.Invoke(ctx, host.Call{Tool: name, Args: json.RawMessage(`{}`), SessionID: "bench", Workspace: host.Workspace{Path: ws}})
		if !out.Result.Success {
			b.Fatal(out.Result.Error)
		}
		lat, listed = append(lat, time.Since(start)), append(listed, seen)
		b.StopTimer()
		_ = os.RemoveAll(dir)
		b.StartTimer()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(listed, func(i, j int) bool { return listed[i] < listed[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(listed[len(listed)/2].Microseconds())/1000, "listed-p50-ms")
}

// waitAdded waits until the host announces that the tool name was added.
func waitAdded(b *testing.B, changes <-chan host.ToolsChanged, name string) {
	b.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-changes:
			for _, n := range ev.Added {
				if n == name {
					return
				}
			}
		case <-timeout:
			b.Fatalf("%s was never added", name)
		}
	}
}

// TestHostMemoryChild is not a test: BenchmarkHostMemory100Tools runs the test binary again
// with JEAN2_MEMORY_CHILD set, and this starts a host on that home and prints its RSS.
func TestHostMemoryChild(t *testing.T) {
	home := os.Getenv("JEAN2_MEMORY_CHILD")
	if home == "" {
		t.Skip("helper process for BenchmarkHostMemory100Tools")
	}
	layout, _ := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return home
		}
		return ""
	})
	start := time.Now()
	h, err := host.New(context.Background(), host.Options{Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	ready := time.Since(start)
	ok := 0
	for _, e := range h.Tools() {
		if e.Status == host.StatusOK {
			ok++
		}
	}
	fmt.Printf("tools=%d ready-ms=%.1f %s\n", ok, float64(ready.Microseconds())/1000, procStatus("VmRSS", "VmHWM"))
}

func procStatus(keys ...string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, k := range keys {
			if strings.HasPrefix(sc.Text(), k+":") {
				out = append(out, k+"="+strings.Join(strings.Fields(sc.Text())[1:], ""))
			}
		}
	}
	return strings.Join(out, " ")
}

// BenchmarkHostMemory100Tools: host RSS and time to ready with 100 tools listed (bundles and
// definitions cached) and none called. No worker starts.
func BenchmarkHostMemory100Tools(b *testing.B) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	for i := range 100 {
		dir := filepath.Join(home, "tools", fmt.Sprintf("tool-%03d", i))
		_ = os.MkdirAll(dir, 0o755)
		src := strings.Replace(trivialTool, "'trivial'", fmt.Sprintf("'tool-%03d'", i), 1)
		_ = os.WriteFile(filepath.Join(dir, "tool.ts"), []byte(src), 0o644)
	}
	run := func() string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostMemoryChild$", "-test.v")
		cmd.Env = append(os.Environ(), "JEAN2_MEMORY_CHILD="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "tools=") {
				return l
			}
		}
		b.Fatalf("no figures in %s", out)
		return ""
	}
	b.Logf("first start (bundles every tool): %s", run())
	for b.Loop() {
		b.Logf("cached start: %s", run())
	}
}

// BenchmarkReloadLatency is the time from the last write of a tool's source to the first
// call answered by the new code, with the watcher running (p50/p95): unconfined (off) and
// with the worker under the sandbox as jean2 runs it by default (landlock: Landlock, the
// network namespace, cgroups, through the launcher), where each version needs workers of
// its own.
//
//	go test -run '^$' -bench ReloadLatency -benchtime 30x ./host
func BenchmarkReloadLatency(b *testing.B) {
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeLandlock} {
		b.Run(string(mode), func(b *testing.B) {
			h, ws := sandboxBenchHost(b, mode)
			benchReload(b, h, ws)
		})
	}
}

func benchReload(b *testing.B, h *host.Host, ws string) {
	dir := filepath.Join(h.Layout().Tools, "trivial")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Watch(ctx, host.WatchOptions{Rescan: -1}) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond)
	// One session, as a client of jean2 mcp or serve has: a confined worker serves the calls
	// of one scope (workspace, temporary folder), and a call without a session has a
	// temporary folder of its own.
	call := host.Call{Tool: "trivial", Args: json.RawMessage(`{}`), SessionID: "bench", Workspace: host.Workspace{Path: ws}}
	if out := h.Invoke(ctx, call); !out.Result.Success {
		b.Fatal(out.Result.Error)
	}
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		want := fmt.Sprintf(`"v%d"`, i)
		src := strings.Replace(trivialTool, "{ ok: true }", want, 1)
		start := time.Now()
		if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		for {
			out := h.Invoke(ctx, call)
			if string(out.Result.Result) == want {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("version %d never answered: %s", i, out.Result.Error)
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(float64(percentile(lat, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.95).Milliseconds()), "p95-ms")
}
