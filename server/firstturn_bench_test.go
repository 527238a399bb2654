package server

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/sandbox"
)

// BenchmarkFirstTurn50NewSessions makes 50 new sessions in one workspace and runs the first
// turn of each at once: the model calls a folder tool confined by Landlock (as jean2 serve
// runs them), then answers. Found under load: each new session started a sandboxed worker of
// its own, and the first turn's p50 was 5.5 s against 0.2 s for the fifth. An iteration is
// the 50 first turns; the p50 and p90 of their latency (POST of the turn to turn.finished)
// are reported.
//
//	go test ./server -run '^$' -bench FirstTurn50NewSessions -benchtime 3x
func BenchmarkFirstTurn50NewSessions(b *testing.B) {
	const sessions = 50
	f := newFixture(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	f.cfg.Host.Sandbox = host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: exe}
	f.tools = map[string]string{"pid-probe": pidProbeTool}
	f.start()
	if f.srv.host.Sandbox().LandlockABI == 0 {
		b.Skip("no Landlock here")
	}
	f.fake.Respond(func(r providertest.Request) providertest.Reply {
		if strings.Contains(string(r.Body), `"role":"tool"`) {
			return providertest.OpenAIText("test-model", "done")
		}
		return providertest.OpenAIToolCall("test-model", "call_1", "pid_probe", "{}")
	})
	var latencies []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ids := make([]string, sessions)
		socks := make([]*socket, sessions)
		for i := range ids {
			_, ses := f.session()
			ids[i] = ses.ID
			socks[i] = f.dial("/api/sessions/"+ses.ID+"/ws", nil)
		}
		b.StartTimer()
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, sessions)
		for i := range ids {
			wg.Go(func() {
				start := time.Now()
				status, body := f.request("POST", "/api/sessions/"+ids[i]+"/turns", map[string]any{"text": "probe"}, nil)
				if status != 202 {
					errs <- fmt.Errorf("session %d: start: %d %s", i, status, body)
					return
				}
				if err := awaitEvent(socks[i], "turn.finished", 120*time.Second); err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					return
				}
				mu.Lock()
				latencies = append(latencies, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	slices.Sort(latencies)
	at := func(q float64) float64 { return float64(latencies[int(q*float64(len(latencies)-1))].Milliseconds()) }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.9), "p90-ms")
}

// awaitEvent reads a socket's frames until an event of type typ; for turn.finished it must
// say the turn ended "done". It returns errors rather than failing, for use off the test's
// goroutine.
func awaitEvent(s *socket, typ string, within time.Duration) error {
	deadline := time.After(within)
	for {
		select {
		case data := <-s.frames:
			var ev event
			if err := json.Unmarshal(data, &ev); err != nil {
				return err
			}
			if ev.Type != typ {
				continue
			}
			if typ == "turn.finished" {
				var p struct{ Reason, Error string }
				_ = json.Unmarshal(ev.Payload, &p)
				if p.Reason != "done" {
					return fmt.Errorf("the turn ended %s: %s", p.Reason, p.Error)
				}
			}
			return nil
		case <-s.done:
			return fmt.Errorf("the socket closed: %v", s.closeBy)
		case <-deadline:
			return fmt.Errorf("no %s within %v", typ, within)
		}
	}
}
