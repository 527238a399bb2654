package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// instantModel answers at once, from memory: a call of the trivial tool, then, once it has
// the result, a short text. It stands for a model of zero latency, so what a round costs
// besides the tool is the harness's own work (with the store's writes).
type instantModel struct{ ids atomic.Int64 }

func (m *instantModel) Stream(_ context.Context, req provider.Request) (provider.Stream, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == provider.RoleTool {
		return &sliceStream{evs: []provider.Event{
			{Kind: provider.EventText, Text: "o"}, {Kind: provider.EventText, Text: "k"},
			{Kind: provider.EventUsage, Usage: provider.Usage{InputTokens: 20, OutputTokens: 2}},
			{Kind: provider.EventFinish, Finish: provider.FinishStop},
		}}, nil
	}
	return &sliceStream{evs: []provider.Event{
		{Kind: provider.EventToolCallStart, Index: 0, ID: fmt.Sprintf("call_%d", m.ids.Add(1)), Name: "trivial"},
		{Kind: provider.EventToolCallArgs, Index: 0, Text: `{"n":`}, {Kind: provider.EventToolCallArgs, Index: 0, Text: `1}`},
		{Kind: provider.EventUsage, Usage: provider.Usage{InputTokens: 10, OutputTokens: 5}},
		{Kind: provider.EventFinish, Finish: provider.FinishToolCalls},
	}}, nil
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type sliceStream struct {
	evs []provider.Event
	i   int
}

func (s *sliceStream) Next() (provider.Event, error) {
	if s.i >= len(s.evs) {
		return provider.Event{}, io.EOF
	}
	s.i++
	return s.evs[s.i-1], nil
}

func (s *sliceStream) Close() error { return nil }

// timedTools measures the time spent in the host's Invoke; with instant set, calls do not
// reach the host: they succeed at once, in process, so what is left is the harness's own
// cost with nothing else of the machine's in it.
type timedTools struct {
	*host.Host
	instant      bool
	nanos, calls atomic.Int64
}

func (t *timedTools) Invoke(ctx context.Context, c host.Call) host.Outcome {
	start := time.Now()
	var out host.Outcome
	if t.instant {
		out = host.Outcome{CallID: c.CallID, Tool: c.Tool, Result: tool.Result{Success: true, Result: json.RawMessage(`{"ok":true}`)},
			ModelText: `{"success":true,"result":{"ok":true}}`}
	} else {
		out = t.Host.Invoke(ctx, c)
	}
	t.nanos.Add(int64(time.Since(start)))
	t.calls.Add(1)
	return out
}

// BenchmarkHarnessRound is one turn of two rounds (a call of a trivial tool, then a text
// answer) with a zero-latency in-memory model, each turn in a fresh session (made before
// the clock starts). It reports the wall time per round, the tool's time per call
// (Invoke), and the harness's overhead per round: the rest, store writes and event
// publishing included, and the CPU of this process per round.
//
//   - disk: a real JS tool through a real worker, the database in the test's temporary
//     folder;
//   - tmpfs: the same with the database in /dev/shm, where a sync costs nothing;
//   - inproc: the database on disk, the tool answering at once in process (no worker), so
//     CPU per round is the harness's alone (with the store and the hub);
//   - disk-batch, inproc-batch: the same with a BatchPublisher, one commit per flush.
func BenchmarkHarnessRound(b *testing.B) {
	run := func(b *testing.B, dbDir string, instant, batch bool) {
		model := &instantModel{}
		f := newFixture(b, fixtureOptions{dbDir: dbDir, adjust: func(o *harness.Options) {
			o.Models = staticModels{p: model, model: "instant"}
		}})
		tools := &timedTools{Host: f.host, instant: instant}
		f.opts.Tools = tools
		if batch {
			f.opts.Events = batchPublisher{Hub: f.hub, db: f.db}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = f.h.Close(ctx)
		cancel()
		var err error
		if f.h, err = harness.New(context.Background(), f.opts); err != nil {
			b.Fatal(err)
		}
		sessions := func(n int) []string {
			ids := make([]string, n)
			for i := range ids {
				s, err := f.db.CreateSession(context.Background(), store.Session{WorkspaceID: f.session.WorkspaceID})
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = s.ID
			}
			return ids
		}
		turn := func(sessionID string) {
			if _, err := f.h.Start(context.Background(), sessionID, harness.Input{Text: "go"}); err != nil {
				b.Fatal(err)
			}
			if err := f.h.Wait(context.Background(), sessionID); err != nil {
				b.Fatal(err)
			}
		}
		for _, id := range sessions(20) { // warm the worker, the JIT and the database
			turn(id)
		}
		ids := sessions(b.N)
		tools.nanos.Store(0)
		tools.calls.Store(0)
		cpu0 := processCPU(b)
		start := time.Now()
		b.ResetTimer()
		for i := range b.N {
			turn(ids[i])
		}
		b.StopTimer()
		elapsed := time.Since(start)
		cpu := processCPU(b) - cpu0
		rounds := float64(2 * b.N)
		tool := time.Duration(tools.nanos.Load())
		if tools.calls.Load() != int64(b.N) {
			b.Fatalf("%d calls for %d turns", tools.calls.Load(), b.N)
		}
		b.ReportMetric(float64(elapsed.Microseconds())/rounds/1000, "ms/round")
		b.ReportMetric(float64(tool.Microseconds())/float64(b.N)/1000, "tool-ms/call")
		b.ReportMetric(float64((elapsed-tool).Microseconds())/rounds/1000, "overhead-ms/round")
		// CPU of this process (the harness, the store, the hub, the host's Go side; not the
		// Node worker, a child process) per round: what the machine's load does not inflate.
		b.ReportMetric(float64(cpu.Microseconds())/rounds/1000, "cpu-ms/round")
	}
	b.Run("disk", func(b *testing.B) { run(b, "", false, false) })
	b.Run("tmpfs", func(b *testing.B) {
		if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
			b.Skip("no /dev/shm")
		}
		run(b, "/dev/shm", false, false)
	})
	b.Run("inproc", func(b *testing.B) { run(b, "", true, false) })
	// With a publisher that stores a flush's writes and events in one transaction (what
	// hub.PublishWith is to do; see batchPublisher).
	b.Run("disk-batch", func(b *testing.B) { run(b, "", false, true) })
	b.Run("inproc-batch", func(b *testing.B) { run(b, "", true, true) })
}

// Benchmark100SessionsStreaming starts a turn in each of 100 sessions at once; each answer
// streams 40 pieces from the fake OpenAI server over loopback (real SSE), 2 ms apart, so
// text is flushed on the 50 ms clock as well as at the end. Every turn must finish "done"
// with its whole text stored. It reports the wall time of the 100 turns and the p50/p95
// of one turn's start-to-finish.
func Benchmark100SessionsStreaming(b *testing.B) {
	const sessions, pieces = 100, 40
	f := newFixture(b, fixtureOptions{})
	reply := providertest.NewOpenAIStream("gpt-test")
	var want strings.Builder
	for i := range pieces {
		piece := fmt.Sprintf("word%d ", i)
		want.WriteString(piece)
		reply.Pause(2 * time.Millisecond).Text(piece)
	}
	r := reply.Finish("stop").Usage(30, pieces).Done().Reply()
	f.srv.Respond(func(providertest.Request) providertest.Reply { return r })

	ids := make([]string, sessions)
	for i := range ids {
		s, err := f.db.CreateSession(context.Background(), store.Session{WorkspaceID: f.session.WorkspaceID, Provider: "fake", Model: "gpt-test"})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = s.ID
	}
	var lat []time.Duration
	var mu sync.Mutex
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, sessions)
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				info, err := f.h.Start(context.Background(), id, harness.Input{Text: "stream please"})
				if err != nil {
					errs <- err
					return
				}
				if err := f.h.Wait(context.Background(), id); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
				_ = info
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// Zero errors: every turn finished "done" and stored the whole answer.
	for _, id := range ids {
		msgs, err := f.db.ListMessages(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		if len(msgs) != 2*b.N {
			b.Fatalf("session %s has %d messages after %d turns", id, len(msgs), b.N)
		}
		for _, m := range msgs {
			if m.Role == store.RoleAssistant && (m.Status != store.StatusComplete || m.Content != want.String()) {
				b.Fatalf("session %s: answer %s %q (%s)", id, m.Status, m.Content, m.Error)
			}
		}
		evs, err := f.db.EventsAfter(context.Background(), id, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, e := range evs {
			if e.Type == harness.EventTurnFinished && strings.Contains(string(e.Payload), `"reason":"done"`) {
				done++
			}
		}
		if done != b.N {
			b.Fatalf("session %s: %d turns done of %d", id, done, b.N)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-turn-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Milliseconds()), "p95-turn-ms")
	b.ReportMetric(0, "errors")
}
