package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/runtime/worker"
)

// blockingTool waits for the host to answer an ask, so calls stay in flight as long as the
// test wants.
const blockingTool = `
export const definition = { name: 'blocking', description: 'Waits for the host.', inputSchema: { type: 'object' } };
export async function execute(input, ctx) {
  const answer = await ctx.ask({ type: 'text', question: 'go?' });
  return { success: true, result: { answer, pid: process.pid } };
}
`

// gate is a host that holds every ask until released.
type gate struct {
	fakeHost
	arrived chan string
	release chan struct{}
}

func newGate() *gate {
	g := &gate{arrived: make(chan string, 1000), release: make(chan struct{})}
	g.answer = func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		var p struct {
			CallID string `json:"callId"`
		}
		json.Unmarshal(params, &p)
		g.arrived <- p.CallID
		select {
		case <-g.release:
			return "released " + p.CallID, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g
}

type outcome struct {
	id  string
	res json.RawMessage
	err error
}

func startCalls(t *testing.T, p *testPool, n int, prefix string, h worker.CallHandler, timeout time.Duration) chan outcome {
	out := make(chan outcome, n)
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			raw, err := p.Execute(ctx, worker.Call{ID: id, Timeout: timeout, Input: json.RawMessage(`{}`)}, h)
			out <- outcome{id, raw, err}
		}()
	}
	return out
}

// pidOf finds the worker pid a tool reported, in a raw ToolResult or in its result.
func pidOf(t *testing.T, raw json.RawMessage) int {
	t.Helper()
	var r struct {
		PID    int `json:"pid"`
		Result struct {
			PID int `json:"pid"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.PID+r.Result.PID == 0 {
		t.Fatalf("no pid in %s", raw)
	}
	return r.PID + r.Result.PID
}

// Many calls run at once on one worker: all 50 are waiting on the host at the same time.
func TestManyConcurrentCallsOnOneWorker(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, blockingTool, worker.PoolOptions{MaxWorkers: 1})
		g := newGate()
		out := startCalls(t, p, 50, "c", g, 0)
		seen := map[string]bool{}
		for len(seen) < 50 {
			select {
			case id := <-g.arrived:
				seen[id] = true
			case <-time.After(20 * time.Second):
				t.Fatalf("only %d of 50 calls reached the host", len(seen))
			}
		}
		if s := p.Stats(); s.Workers != 1 || s.InFlight != 50 {
			t.Fatalf("stats %+v", s)
		}
		close(g.release)
		pids := map[int]bool{}
		for range 50 {
			o := <-out
			if o.err != nil {
				t.Fatalf("%s: %v", o.id, o.err)
			}
			if !strings.Contains(string(o.res), `"answer":"released `+o.id+`"`) {
				t.Fatalf("%s got %s", o.id, o.res)
			}
			pids[pidOf(t, o.res)] = true
		}
		if len(pids) != 1 {
			t.Fatalf("calls ran on %d workers, want 1", len(pids))
		}
	})
}

// Under load the pool grows to MaxWorkers and spreads calls over the workers.
func TestScalesUnderLoad(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, blockingTool, worker.PoolOptions{MaxWorkers: 3, CallsPerWorker: 2, ScaleAfter: -1})
		g := newGate()
		out := startCalls(t, p, 12, "load", g, 0)
		for i := range 12 {
			select {
			case <-g.arrived:
			case <-time.After(20 * time.Second):
				t.Fatalf("only %d of 12 calls reached the host", i)
			}
		}
		waitFor(t, "three workers", 20*time.Second, func() bool { return p.Stats().Workers == 3 })
		// Later calls go to the least-loaded workers.
		more := startCalls(t, p, 6, "more", g, 0)
		for range 6 {
			<-g.arrived
		}
		if s := p.Stats(); s.Workers != 3 || s.Started != 3 || s.InFlight != 18 {
			t.Fatalf("stats %+v", s)
		}
		close(g.release)
		pids := map[int]int{}
		for range 12 {
			o := <-out
			if o.err != nil {
				t.Fatal(o.err)
			}
			pids[pidOf(t, o.res)]++
		}
		morePids := map[int]int{}
		for range 6 {
			o := <-more
			if o.err != nil {
				t.Fatal(o.err)
			}
			morePids[pidOf(t, o.res)]++
		}
		// Calls never wait for a start: the first ones all went to the first worker. Later
		// ones go to the least-loaded, which are the new workers.
		if len(pids) != 1 || len(morePids) != 2 {
			t.Fatalf("calls were not spread: first %v, later %v", pids, morePids)
		}
		for pid := range morePids {
			if pids[pid] > 0 {
				t.Fatalf("a later call went to the busiest worker: first %v, later %v", pids, morePids)
			}
		}
	})
}

// A trivial tool does not make the pool grow however many calls are in flight: the worker
// turns them around long before ScaleAfter.
func TestQuickCallsDoNotScale(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, echoTool, worker.PoolOptions{MaxWorkers: 4, CallsPerWorker: 2, ScaleAfter: time.Second})
		out := startCalls(t, p, 200, "q", &fakeHost{}, 0)
		for range 200 {
			if o := <-out; o.err != nil {
				t.Fatal(o.err)
			}
		}
		if s := p.Stats(); s.Started != 1 {
			t.Fatalf("stats %+v: quick calls started more workers", s)
		}
	})
}

// Calls that keep a worker busy make the pool grow with the default ScaleAfter.
func TestBusyCallsScale(t *testing.T) {
	const src = `
export const definition = { name: 'busy', description: 'Burns CPU.', inputSchema: { type: 'object' } };
export async function execute() {
  const end = Date.now() + 20;
  while (Date.now() < end) {}
  return { success: true, result: { pid: process.pid } };
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{MaxWorkers: 2, CallsPerWorker: 2})
		if _, err := p.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Six clients, each calling again as soon as its call returns: a sustained load.
		var wg sync.WaitGroup
		for c := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					if _, err := p.Execute(context.Background(), worker.Call{ID: fmt.Sprintf("busy-%d-%d", c, i)}, &fakeHost{}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if s := p.Stats(); s.Started != 2 {
			t.Fatalf("stats %+v: busy calls did not start a second worker", s)
		}
	})
}

func TestIdleWorkersAreReaped(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, echoTool, worker.PoolOptions{IdleTimeout: 200 * time.Millisecond})
		r := mustExecute(t, p, worker.Call{}, &fakeHost{})
		pid := pidOf(t, r.Result)
		waitFor(t, "the idle worker to be stopped", 10*time.Second, func() bool { return p.Stats().Workers == 0 })
		waitFor(t, "the idle worker's process to end", 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil })
		r = mustExecute(t, p, worker.Call{}, &fakeHost{})
		if pidOf(t, r.Result) == pid || p.Stats().Started != 2 {
			t.Fatalf("after reaping, a call must start a fresh worker: %+v", p.Stats())
		}
	})
}

const spinTool = `
export const definition = { name: 'spin', description: 'Spins.', inputSchema: { type: 'object' } };
export async function execute(input, ctx) {
  if (input.spin) { while (true) {} }
  if (input.wait) { await new Promise((r) => setTimeout(r, input.wait)); }
  return { success: true, result: { pid: process.pid } };
}
`

func TestTimeoutKillsEndlessLoop(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, spinTool, worker.PoolOptions{MaxWorkers: 1, KillGrace: 300 * time.Millisecond})
		first := mustExecute(t, p, worker.Call{ID: "warm"}, &fakeHost{})
		pid := pidOf(t, first.Result)

		// Another call is on the same worker when the spinning one is killed.
		other := make(chan error, 1)
		go func() {
			_, err := execute(t, p, worker.Call{ID: "bystander", Input: json.RawMessage(`{"wait":60000}`)}, &fakeHost{})
			other <- err
		}()
		waitFor(t, "the bystander to be in flight", 10*time.Second, func() bool { return p.Stats().InFlight == 1 })

		start := time.Now()
		_, err := execute(t, p, worker.Call{ID: "spinner", Input: json.RawMessage(`{"spin":true}`), Timeout: 400 * time.Millisecond}, &fakeHost{})
		took := time.Since(start)
		if err == nil || err.Error() != "Tool execution timed out after 400ms" {
			t.Fatalf("got %v, want exactly %q", err, "Tool execution timed out after 400ms")
		}
		var te *worker.TimeoutError
		if !errors.As(err, &te) || te.CallID != "spinner" {
			t.Fatalf("error %T %+v", err, err)
		}
		if took < 400*time.Millisecond || took > 5*time.Second {
			t.Fatalf("timed out after %v", took)
		}
		select {
		case err := <-other:
			var ke *worker.KilledError
			if !errors.As(err, &ke) || ke.CallID != "spinner" ||
				!strings.Contains(err.Error(), "was killed because call spinner of the same tool did not stop after its timeout") {
				t.Fatalf("bystander got %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the bystander did not fail when its worker was killed")
		}
		waitFor(t, "the spinning worker to die", 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil })

		r := mustExecute(t, p, worker.Call{ID: "after"}, &fakeHost{})
		if pidOf(t, r.Result) == pid || p.Stats().Started != 2 {
			t.Fatalf("the next call must run on a fresh worker: %+v", p.Stats())
		}
	})
}

// A tool that honours its abort signal settles within the grace: the call still times out,
// but the worker lives on.
func TestAbortSignalHonouredWithinGrace(t *testing.T) {
	const src = `
export const definition = { name: 'polite', description: 'Stops when asked.', inputSchema: { type: 'object' } };
export async function execute(input, ctx) {
  const reason = await new Promise((resolve) => ctx.abortSignal.addEventListener('abort', () => resolve(ctx.signal.reason)));
  ctx.logger.info('aborted', { name: reason.name, message: reason.message });
  return { success: false, error: 'aborted: ' + reason.message, result: { pid: process.pid } };
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{KillGrace: 5 * time.Second})
		h := &fakeHost{}
		start := time.Now()
		_, err := execute(t, p, worker.Call{ID: "polite-1", Timeout: 300 * time.Millisecond}, h)
		if err == nil || err.Error() != "Tool execution timed out after 300ms" {
			t.Fatalf("got %v", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("took %v: the grace was waited out although the call settled", took)
		}
		logs := h.records("log")
		if len(logs) != 1 || !strings.Contains(string(logs[0].Params), `"name":"AbortError","message":"The call timed out"`) {
			t.Fatalf("the tool saw %v", logs)
		}
		if s := p.Stats(); s.Workers != 1 || s.Started != 1 {
			t.Fatalf("the worker must survive: %+v", s)
		}
	})
}

func TestStopViaContext(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		// Stopped while waiting on the host: the request's context ends, the tool's await
		// rejects, the call settles within the grace and the worker lives on.
		p := newPool(t, rt, blockingTool, worker.PoolOptions{KillGrace: 5 * time.Second})
		g := newGate()
		ctx, cancel := context.WithCancelCause(context.Background())
		stop := errors.New("the user pressed Stop")
		go func() {
			<-g.arrived
			cancel(stop)
		}()
		start := time.Now()
		_, err := p.Execute(ctx, worker.Call{ID: "stopme", Timeout: time.Minute}, g)
		var se *worker.StoppedError
		if !errors.As(err, &se) || !errors.Is(err, stop) || err.Error() != "tool test-tool: call stopme was stopped: the user pressed Stop" {
			t.Fatalf("got %v", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("took %v", took)
		}
		if s := p.Stats(); s.Workers != 1 || s.Started != 1 {
			t.Fatalf("the worker must survive: %+v", s)
		}
		// A call stopped before it starts never reaches a worker.
		_, err = p.Execute(ctx, worker.Call{ID: "late"}, g)
		if !errors.As(err, &se) || se.CallID != "late" {
			t.Fatalf("pre-stopped call: %v", err)
		}

		// Stopped while spinning: killed after the grace, replaced on the next call.
		p2 := newPool(t, rt, spinTool, worker.PoolOptions{KillGrace: 200 * time.Millisecond})
		if _, err := p2.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx2, cancel2 := context.WithCancelCause(context.Background())
		time.AfterFunc(300*time.Millisecond, func() { cancel2(stop) })
		_, err = p2.Execute(ctx2, worker.Call{ID: "spinstop", Input: json.RawMessage(`{"spin":true}`)}, &fakeHost{})
		if !errors.As(err, &se) || !errors.Is(err, stop) {
			t.Fatalf("spinning call: %v", err)
		}
		waitFor(t, "the spinning worker to go", 10*time.Second, func() bool { return p2.Stats().Workers == 0 })
		mustExecute(t, p2, worker.Call{ID: "next"}, &fakeHost{})
		if s := p2.Stats(); s.Started != 2 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestWorkerCrashes(t *testing.T) {
	const src = `
export const definition = { name: 'crashy', description: 'Crashes on request.', inputSchema: { type: 'object' } };
export async function execute(input, ctx) {
  switch (input.how) {
    case 'exit': console.error('about to exit'); process.exit(3);
    case 'throw-later': setTimeout(() => { throw new Error('kaboom in a timer'); }, 10); await new Promise(() => {}); break;
    case 'reject': Promise.reject(new Error('nobody caught me')); await new Promise(() => {}); break;
    case 'segv': process.kill(process.pid, 'SIGSEGV'); await new Promise(() => {}); break;
    case 'throw': throw new Error('plain failure');
    case 'throw-string': throw 'a string';
  }
  return { success: true, result: { pid: process.pid } };
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		run := func(how string) error {
			_, err := execute(t, p, worker.Call{ID: how, Input: json.RawMessage(`{"how":"` + how + `"}`), Timeout: 20 * time.Second}, &fakeHost{})
			return err
		}
		healthy := func(after string) {
			t.Helper()
			r := mustExecute(t, p, worker.Call{ID: "after-" + after}, &fakeHost{})
			if !r.Success {
				t.Fatalf("after %s: %+v", after, r)
			}
		}

		err := run("exit")
		var ee *worker.ExitError
		if !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(err.Error(), "exited with code 3") ||
			!strings.Contains(err.Error(), "the tool called process.exit(3)") || !strings.Contains(err.Error(), "about to exit") {
			t.Fatalf("process.exit: %v", err)
		}
		healthy("exit")

		err = run("throw-later")
		var ce *worker.CallError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "uncaught exception in the tool: Error: kaboom in a timer") {
			t.Fatalf("uncaught exception: %v", err)
		}
		healthy("uncaught exception")

		err = run("reject")
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "unhandled promise rejection in the tool: Error: nobody caught me") {
			t.Fatalf("unhandled rejection: %v", err)
		}
		healthy("unhandled rejection")

		err = run("segv")
		if !errors.As(err, &ee) || ee.Signal != "SIGSEGV" || !strings.Contains(err.Error(), "was killed by signal SIGSEGV") {
			t.Fatalf("segfault: %v", err)
		}
		healthy("segfault")

		// A thrown error is the tool's failure, not the worker's.
		for how, msg := range map[string]string{"throw": "plain failure", "throw-string": "a string"} {
			r, err := execute(t, p, worker.Call{ID: how, Input: json.RawMessage(`{"how":"` + how + `"}`)}, &fakeHost{})
			if err != nil || r.Success || r.Error != msg {
				t.Fatalf("%s: %+v %v", how, r, err)
			}
		}
	})
}

func TestUnserializableResult(t *testing.T) {
	const src = `
export const definition = { name: 'cyclic', description: 'x', inputSchema: { type: 'object' } };
export async function execute(input) {
  if (input.big) return { success: true, result: { n: 10n } };
  const a = { success: true }; a.result = a; return a;
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		for _, in := range []string{`{}`, `{"big":true}`} {
			r := mustExecute(t, p, worker.Call{Input: json.RawMessage(in)}, &fakeHost{})
			if r.Success || !strings.HasPrefix(r.Error, "tool result cannot be serialized: ") || len(r.Error) < len("tool result cannot be serialized: ")+5 {
				t.Fatalf("%s: %+v", in, r)
			}
		}
	})
}

// The timeout clock stands still while the call waits on a person.
func TestTimeoutPausedDuringAsk(t *testing.T) {
	const src = `
export const definition = { name: 'asker', description: 'x', inputSchema: { type: 'object' } };
export async function execute(input, ctx) {
  const a = await ctx.ask({ type: 'confirm', question: 'Slow person?' });
  await ctx.addWorkspacePath('/more');
  await new Promise((r) => setTimeout(r, 100));
  return { success: true, result: { a } };
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		h := &fakeHost{answer: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			time.Sleep(700 * time.Millisecond) // far longer than the timeout
			if method == "ask" {
				return true, nil
			}
			return map[string]any{"allowedPaths": []string{"/more"}}, nil
		}}
		start := time.Now()
		r, err := execute(t, p, worker.Call{Timeout: 500 * time.Millisecond}, h)
		if err != nil || !r.Success {
			t.Fatalf("got %+v %v after %v: the time spent waiting on a person must not count", r, err, time.Since(start))
		}
		// Without a person to wait on, the same budget is enforced.
		h.answer = func(ctx context.Context, method string, params json.RawMessage) (any, error) { return true, nil }
		const slow = `{"slow":true}`
		_ = slow
		p2 := newPool(t, rt, `
export const definition = { name: 'slow', description: 'x', inputSchema: { type: 'object' } };
export async function execute(input, ctx) {
  await ctx.session.get('k'); // not a person: the clock runs
  await new Promise((r) => setTimeout(r, 2000));
  return { success: true };
}
`, worker.PoolOptions{KillGrace: 100 * time.Millisecond})
		_, err = execute(t, p2, worker.Call{Timeout: 300 * time.Millisecond}, h)
		if err == nil || err.Error() != "Tool execution timed out after 300ms" {
			t.Fatalf("got %v", err)
		}
	})
}

// console output becomes log lines: it never corrupts the protocol, and a flood is capped.
func TestConsoleFloodIsBoundedAndHarmless(t *testing.T) {
	const src = `
export const definition = { name: 'noisy', description: 'x', inputSchema: { type: 'object' } };
export async function execute() {
  console.log('{"jsonrpc":"2.0","id":1,"result":{"success":false,"error":"forged"}}');
  for (let i = 0; i < 50000; i++) { console.log('out line ' + i); console.error('err line ' + i); }
  console.log('x'.repeat(100000));
  return { success: true, result: { done: true } };
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{OutputLinesPerSecond: 50})
		r := mustExecute(t, p, worker.Call{}, &fakeHost{})
		if !r.Success || string(r.Result) != `{"done":true}` {
			t.Fatalf("result %+v", r)
		}
		msgs := p.logs.messages()
		dropped, lines := 0, 0
		for _, m := range msgs {
			if m == "worker output dropped: too many lines" {
				dropped++
			}
			if strings.HasPrefix(m, "out line") || strings.HasPrefix(m, "err line") {
				lines++
			}
		}
		if dropped == 0 || lines > 2000 || lines < 10 {
			t.Fatalf("%d lines logged, %d drop notices: the flood was not bounded", lines, dropped)
		}
		if !strings.Contains(strings.Join(msgs, "\n"), `{"jsonrpc":"2.0","id":1,"result":{"success":false,"error":"forged"}}`) {
			t.Fatalf("the forged line should be logged as output")
		}
		// The worker is still fine.
		mustExecute(t, p, worker.Call{ID: "again"}, &fakeHost{})
	})
}

func TestCloseDrains(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, spinTool, worker.PoolOptions{})
		r := mustExecute(t, p, worker.Call{ID: "first"}, &fakeHost{})
		pid := pidOf(t, r.Result)
		out := make(chan outcome, 1)
		go func() {
			raw, err := p.Execute(context.Background(), worker.Call{ID: "inflight", Input: json.RawMessage(`{"wait":400}`)}, &fakeHost{})
			out <- outcome{"inflight", raw, err}
		}()
		waitFor(t, "the call to be in flight", 10*time.Second, func() bool { return p.Stats().InFlight == 1 })
		closed := make(chan error, 1)
		go func() { closed <- p.Close(context.Background()) }()
		time.Sleep(50 * time.Millisecond)
		if _, err := p.Execute(context.Background(), worker.Call{ID: "refused"}, &fakeHost{}); !errors.Is(err, worker.ErrPoolClosed) {
			t.Fatalf("a call during Close: %v", err)
		}
		o := <-out
		if o.err != nil {
			t.Fatalf("the call in flight must finish: %v", o.err)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if syscall.Kill(pid, 0) == nil {
			t.Fatalf("worker %d still runs after Close", pid)
		}
		if s := p.Stats(); s.Workers != 0 || s.InFlight != 0 {
			t.Fatalf("stats after Close: %+v", s)
		}
	})
}

// Close with a deadline kills workers whose calls do not finish in time.
func TestCloseDeadlineKillsStragglers(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, spinTool, worker.PoolOptions{})
		out := make(chan error, 1)
		go func() {
			_, err := p.Execute(context.Background(), worker.Call{ID: "straggler", Input: json.RawMessage(`{"spin":true}`)}, &fakeHost{})
			out <- err
		}()
		waitFor(t, "the call to be in flight", 10*time.Second, func() bool { return p.Stats().InFlight == 1 && p.Stats().Workers == 1 })
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := p.Close(ctx)
		if err == nil || !strings.Contains(err.Error(), "calls still running") {
			t.Fatalf("Close: %v", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("Close took %v", took)
		}
		var ee *worker.ExitError
		if err := <-out; !errors.As(err, &ee) || !strings.Contains(err.Error(), "the pool was closed before its calls finished") {
			t.Fatalf("straggler: %v", err)
		}
	})
}

// An error that carries @jean2/sdk's mark (a bundle's own copy of ProtocolError) becomes
// the result's protocolError, with its code, message and data; any other error, even one
// with a code, stays a tool's error.
func TestWorkerProtocolError(t *testing.T) {
	const src = `
class ProtocolError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    if (data !== undefined) this.data = data;
    Object.defineProperty(this, Symbol.for('jean2.protocolError'), { value: true });
  }
}
export const definition = { name: 'refusing', description: 'Fails.', inputSchema: { type: 'object' } };
export async function execute(input) {
  if (input.marked) throw new ProtocolError(-32603, 'the backend is down', { retryAfterMs: 5 });
  const err = new Error('plain failure');
  err.code = -32603;
  throw err;
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		r := mustExecute(t, p, worker.Call{ID: "marked", Input: json.RawMessage(`{"marked":true}`)}, &fakeHost{})
		pe := r.ProtocolError
		if r.Success || pe == nil || pe.Code != -32603 || pe.Message != "the backend is down" || string(pe.Data) != `{"retryAfterMs":5}` || r.Error != "the backend is down" {
			t.Fatalf("marked: %+v %+v", r, pe)
		}
		r = mustExecute(t, p, worker.Call{ID: "plain", Input: json.RawMessage(`{}`)}, &fakeHost{})
		if r.Success || r.ProtocolError != nil || r.Error != "plain failure" {
			t.Fatalf("plain: %+v", r)
		}
	})
}
