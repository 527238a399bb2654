//go:build linux

package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// BenchmarkSessionWorkers is what a session's tool workers cost, under Landlock, for
// sessions of one workspace (the server's case; a workspace-less session always had workers
// of its own): the first call of the trivial tool in a new session (p50 over the
// iterations, each a new session, after one session warmed the workspace), a warm call of
// one session, and the first calls of 50 new sessions at once (the wall time of all 50).
//
//	go test ./host -run '^$' -bench SessionWorkers -benchtime 20x
func BenchmarkSessionWorkers(b *testing.B) {
	b.Run("first-call", func(b *testing.B) {
		h, ws := sandboxBenchHost(b, sandbox.ModeLandlock)
		invokeIn(b, h, ws, "warm")
		var lat []time.Duration
		i := 0
		for b.Loop() {
			i++
			start := time.Now()
			invokeIn(b, h, ws, fmt.Sprintf("s%d", i))
			lat = append(lat, time.Since(start))
		}
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	})
	b.Run("warm", func(b *testing.B) {
		h, ws := sandboxBenchHost(b, sandbox.ModeLandlock)
		for range 100 {
			invokeIn(b, h, ws, "warm")
		}
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			invokeIn(b, h, ws, "warm")
			lat = append(lat, time.Since(start))
		}
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	})
	b.Run("50-at-once", func(b *testing.B) {
		h, ws := sandboxBenchHost(b, sandbox.ModeLandlock)
		invokeIn(b, h, ws, "warm")
		round := 0
		for b.Loop() {
			round++
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() { invokeIn(b, h, ws, fmt.Sprintf("r%d-%d", round, i)) })
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/50-sessions")
	})
}

// invokeIn calls the trivial tool in session id of workspace w1.
func invokeIn(b *testing.B, h *host.Host, ws, id string) {
	call := host.Call{Tool: "trivial", Args: json.RawMessage(`{"n":1}`), SessionID: id, Workspace: host.Workspace{ID: "w1", Path: ws}}
	if out := h.Invoke(context.Background(), call); !out.Result.Success {
		b.Error(out.Result.Error)
	}
}
