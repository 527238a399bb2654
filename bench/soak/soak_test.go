// Package soak runs one long session against a real `jean2 serve` (issue 29, "Long
// sessions stay small and fast") and prints, per window of turns, the server's RSS, its
// goroutines and descriptors and the median turn time. It is a test so that it can use the
// fake model of provider/providertest's wire format; it runs only when -soak.turns is given:
//
//	go test ./bench/soak -run Soak -v -timeout 2h -args -soak.turns 1500 -soak.kb 8 -soak.window 40000
//
// The model speaks OpenAI's streamed chat completions: each turn's first request is
// answered with a call of the "blob" tool (a JavaScript tool returning -soak.kb KB of
// text), the request that carries its result with a short answer, and a compaction's
// summary request with a short summary. Five WebSocket subscribers follow the session
// and every event must reach each of them once, in order; 20 idle sessions have a
// subscriber each.
package soak

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/pgtest"
)

var (
	flagTurns  = flag.Int("soak.turns", 0, "turns to run in the session (0: skip the soak)")
	flagKB     = flag.Int("soak.kb", 8, "KB of text the tool returns each turn")
	flagWindow = flag.Int("soak.window", 0, "the model's context window in tokens (0: unknown, no compaction)")
	flagRefuse = flag.Int("soak.refuseAbove", 0, "the model refuses (OpenAI's 400 context_length_exceeded) a request of more tokens than this, as a real model past its window (0: never)")
	flagEvery  = flag.Int("soak.every", 50, "turns per sample window")
	flagBin    = flag.String("soak.bin", "", "the jean2 binary to run (default: built from this tree)")
	flagStore  = flag.String("soak.store", "sqlite", "sqlite, or postgres (a throwaway cluster of internal/pgtest, or JEAN2_TEST_POSTGRES)")
	flagSubs   = flag.Int("soak.subscribers", 5, "WebSocket subscribers of the session")
	flagIdle   = flag.Int("soak.idle", 20, "idle sessions, each with a subscriber")
	flagIdleS  = flag.Duration("soak.settle", 5*time.Second, "idle time after the last turn before the last sample")
	flagHeap   = flag.String("soak.heap", "", "write the server's heap profile (after a GC) here at the end")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if *flagStore == "postgres" && *flagTurns > 0 {
		stop := pgtest.Setup()
		code := m.Run()
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestSoak(t *testing.T) {
	if *flagTurns <= 0 {
		t.Skip("give -soak.turns N to run the soak (see the package doc)")
	}
	if *flagStore != "sqlite" && *flagStore != "postgres" {
		t.Fatalf("-soak.store %q: give sqlite or postgres", *flagStore)
	}
	srv := startServer(t, serverSpec{bin: binary(t), kb: *flagKB, window: *flagWindow, refuseAbove: *flagRefuse, postgres: *flagStore == "postgres"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	wsID := srv.workspace(t)
	session := srv.session(t, wsID, "soak")
	var followers []*follower
	for range *flagSubs {
		followers = append(followers, srv.follow(ctx, t, session))
	}
	var idle []*follower
	for i := range *flagIdle {
		idle = append(idle, srv.follow(ctx, t, srv.session(t, wsID, fmt.Sprintf("idle %d", i))))
	}
	time.Sleep(500 * time.Millisecond) // the sockets' hellos
	start := srv.sample(t)
	t.Logf("machine: %s", loadAverage())
	t.Logf("jean2 %s, store %s, %d turns × %d KB results, window %d tokens (refused above %d), %d subscribers, %d idle sessions",
		srv.bin, *flagStore, *flagTurns, *flagKB, *flagWindow, *flagRefuse, *flagSubs, *flagIdle)
	t.Logf("%-12s %9s %9s %6s %5s %9s %9s %8s %10s %10s %8s %8s", "turns", "rss MB", "peak MB", "gor.", "fds", "p50 ms", "p90 ms", "heap MB", "alloc/turn", "objs/turn", "refused", "max req")
	t.Logf("%-12s %9.1f %9.1f %6s %5d %9s %9s %8.1f", "start", start.rssMB, start.peakMB, start.goroutines, start.fds, "", "", start.heapInuseMB)

	first, last, warm := runTurns(t, srv, session, followers, start)
	time.Sleep(*flagIdleS)
	end := srv.sample(t)
	t.Logf("%-12s %9.1f %9.1f %6s %5d %9s %9s %8.1f", "idle", end.rssMB, end.peakMB, end.goroutines, end.fds, "", "", end.heapInuseMB)
	if *flagHeap != "" {
		srv.saveHeap(t, *flagHeap)
	}
	for i, f := range followers {
		if f.count() != followers[0].count() {
			t.Errorf("subscriber %d got %d events, subscriber 0 %d", i, f.count(), followers[0].count())
		}
	}
	for i, f := range idle {
		if n := f.count(); n != 0 {
			t.Errorf("idle session %d's subscriber got %d events", i, n)
		}
	}
	// After the first window (the tool's worker started, the sockets open) nothing more
	// should be held: a growing count is a leak.
	if end.fds > warm.fds+4 || goroutines(end) > goroutines(warm)+8 {
		t.Errorf("descriptors %d → %d, goroutines %s → %s after the first window: something leaks", warm.fds, end.fds, warm.goroutines, end.goroutines)
	}
	tc := srv.checkTranscript(t, session, *flagTurns)
	for _, p := range tc.problems[:min(len(tc.problems), 20)] {
		t.Error(p)
	}
	t.Logf("stored: %d user messages, %d answers, %d compactions; %d problems", tc.users, tc.answers, tc.compactions, len(tc.problems))
	t.Logf("model: %d requests refused as too long, %d summary requests", srv.model.refusals.Load(), srv.model.summaries.Load())
	t.Logf("summary: RSS %.1f → %.1f MB (peak %.1f); turn p50 %.1f → %.1f ms (×%.2f); goroutines %s → %s; fds %d → %d; %d events to each subscriber, none missed or doubled",
		start.rssMB, end.rssMB, end.peakMB, ms(first), ms(last), float64(last)/float64(first),
		start.goroutines, end.goroutines, start.fds, end.fds, followers[0].count())
}

// runTurns runs the session's turns, printing a line per window; it returns the first and
// last windows' median turn time and the sample after the first window. Allocations per
// turn are the server's bytes and objects allocated in the window over its turns; refused
// the model's refusals of too-long requests in the window, max req the largest request it
// answered (k tokens, its bytes / 4).
func runTurns(t *testing.T, srv *served, session string, followers []*follower, prev sample) (first, last time.Duration, warm sample) {
	var window []time.Duration
	refused := int64(0)
	for turn := 1; turn <= *flagTurns; turn++ {
		window = append(window, srv.turn(t, session, turn, followers))
		if len(window) < *flagEvery && turn < *flagTurns {
			continue
		}
		p50, p90 := percentile(window, 50), percentile(window, 90)
		s := srv.sample(t)
		if first == 0 {
			first, warm = p50, s
		}
		last = p50
		n := uint64(len(window))
		r := srv.model.refusals.Load()
		t.Logf("%-12s %9.1f %9.1f %6s %5d %9.1f %9.1f %8.1f %8.2fMB %10d %8d %7.1fk", fmt.Sprintf("%d-%d", turn-len(window)+1, turn),
			s.rssMB, s.peakMB, s.goroutines, s.fds, ms(p50), ms(p90),
			s.heapInuseMB, float64(s.totalAlloc-prev.totalAlloc)/float64(n)/(1<<20), (s.mallocs-prev.mallocs)/n,
			r-refused, float64(srv.model.maxPrompt.Swap(0))/1000)
		refused = r
		window, prev = window[:0], s
	}
	return first, last, warm
}

// goroutines is a sample's goroutine count, 0 when unknown.
func goroutines(s sample) int {
	n, _ := strconv.Atoi(s.goroutines)
	return n
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)*p/100, len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load unknown"
	}
	return "load average " + strings.Join(strings.Fields(string(b))[:3], " ")
}
