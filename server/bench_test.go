package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
)

// BenchmarkStreaming100Sessions runs one turn in each of 100 sessions at once, through the
// API: each session has a WebSocket subscriber, the fake model streams 40 text chunks per
// answer, and every turn must end "done" with its events in order. An iteration is the 100
// turns; turns/s is reported.
//
//	go test ./server -run '^$' -bench Streaming100Sessions -benchtime 5x
func BenchmarkStreaming100Sessions(b *testing.B) {
	const sessions = 100
	f := newFixture(b)
	f.tools = nil
	f.start()
	pieces := make([]string, 40)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("word%d ", i)
	}
	f.fake.Respond(func(providertest.Request) providertest.Reply {
		return providertest.OpenAIText("test-model", pieces...)
	})
	ids := make([]string, sessions)
	socks := make([]*socket, sessions)
	for i := range ids {
		_, ses := f.session()
		ids[i] = ses.ID
		socks[i] = f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, sessions*2)
		for i := range ids {
			wg.Go(func() {
				status, body := f.request("POST", "/api/sessions/"+ids[i]+"/turns", map[string]any{"text": "stream please"}, nil)
				if status != 202 {
					errs <- fmt.Errorf("session %d: start: %d %s", i, status, body)
					return
				}
				if err := awaitFinished(socks[i], 60*time.Second); err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*sessions)/time.Since(start).Seconds(), "turns/s")
}

// awaitFinished reads a socket's events until turn.finished, checking they come in order
// and that the turn ended done with the streamed text.
func awaitFinished(s *socket, within time.Duration) error {
	deadline := time.After(within)
	var text strings.Builder
	for {
		select {
		case data := <-s.frames:
			var ev event
			if err := json.Unmarshal(data, &ev); err != nil {
				return err
			}
			if ev.Seq == 0 {
				continue
			}
			if s.lastSeq != 0 && ev.Seq != s.lastSeq+1 {
				return fmt.Errorf("event %d follows %d", ev.Seq, s.lastSeq)
			}
			s.lastSeq = ev.Seq
			// The text comes as deltas, or whole in a part when the harness's coalescing
			// window held all of it.
			text.Write(ev.Payload)
			if ev.Type == "turn.finished" {
				if !strings.Contains(string(ev.Payload), `"reason":"done"`) {
					return fmt.Errorf("turn.finished %s", ev.Payload)
				}
				if !strings.Contains(text.String(), "word39") {
					return fmt.Errorf("the streamed text never reached the socket: %s", text.String())
				}
				return nil
			}
		case <-s.done:
			return fmt.Errorf("socket closed: %v", s.closeBy)
		case <-deadline:
			return fmt.Errorf("no turn.finished within %v", within)
		}
	}
}
