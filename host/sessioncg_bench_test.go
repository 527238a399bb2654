//go:build linux

package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// BenchmarkSessionTempMounts is what other sessions' tmpfs mounts (one per live session,
// SessionTempMB) cost a new session's first call: every confined worker copies jean2's
// mount namespace and makes each of its mounts read-only (sandbox/view_linux.go), so the
// cost grows with the mounts. It mounts n tmpfs beside the host's, as n live sessions
// would have, then measures the first call of new sessions (p50). Root only; run it in a
// mount namespace of its own so that the machine's is not touched:
//
//	unshare -m --propagation private sh -c 'mount --make-rshared / && exec go test ./host -run "^$" -bench SessionTempMounts -benchtime 20x'
func BenchmarkSessionTempMounts(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("mounts the other sessions' tmpfs itself: root only")
	}
	for _, n := range []int{0, 500, 2000} {
		b.Run(fmt.Sprintf("idle-sessions=%d", n), func(b *testing.B) {
			h, ws := sandboxBenchHost(b, sandbox.ModeLandlock)
			idle := filepath.Join(filepath.Dir(ws), "home", "tmp", "workspaces", "idle")
			for i := range n {
				dir := filepath.Join(idle, fmt.Sprintf("s%d", i))
				if err := os.MkdirAll(dir, 0o700); err != nil {
					b.Fatal(err)
				}
				if err := unix.Mount("bench-idle", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
			}
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
	}
}
