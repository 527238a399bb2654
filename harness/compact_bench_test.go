package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/tool"
)

// textModel answers at once, from memory: a short text, or a summary when asked for one.
type textModel struct{}

func (textModel) Stream(_ context.Context, req provider.Request) (provider.Stream, error) {
	text := "Noted."
	if strings.HasPrefix(req.System, summaryMarker) {
		text = "SUMMARY: the person sent numbered paragraphs; the agent acknowledged each. " + strings.Repeat("detail ", 100)
	}
	return &sliceStream{evs: []provider.Event{
		{Kind: provider.EventText, Text: text},
		{Kind: provider.EventUsage, Usage: provider.Usage{InputTokens: 100, OutputTokens: 2}},
		{Kind: provider.EventFinish, Finish: provider.FinishStop},
	}}, nil
}

// BenchmarkCompaction is one turn of a long session, a user's message of 2,000 characters
// answered by a zero-latency in-memory model, in a session that goes on for b.N turns:
//
//   - window-4000: a context window of 4,000 tokens, so that the session is compacted
//     every few turns (the compactions per turn are reported): what the estimate, the plan,
//     the rendering and the stored compaction cost beside a turn (the model's own time for
//     the summary, here zero, comes on top in real use);
//   - no-window: the same turns with the window unknown (no compaction), for comparison —
//     its requests grow with the session, as no request of window-4000 does.
func BenchmarkCompaction(b *testing.B) {
	for _, c := range []struct {
		name   string
		window int
	}{{"window-4000", 4000}, {"no-window", 0}} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b, fixtureOptions{window: c.window, adjust: func(o *harness.Options) {
				o.Models = staticModels{p: textModel{}, model: "instant", window: c.window}
			}})
			msg := strings.Repeat("paragraph words. ", 200)[:2000]
			b.ResetTimer()
			for i := range b.N {
				info, err := f.h.Start(context.Background(), f.session.ID, harness.Input{Text: fmt.Sprintf("%d %s", i, msg)})
				if err != nil {
					b.Fatal(err)
				}
				if err := f.h.Wait(context.Background(), info.SessionID); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := 0
			for _, m := range f.messages() {
				for _, p := range m.Parts {
					if p.Kind == "compaction" {
						n++
					}
				}
			}
			b.ReportMetric(float64(n)/float64(b.N), "compactions/turn")
		})
	}
}

// BenchmarkEstimateTokens is the estimate made before every model call, of a request of
// 100 messages of 2,000 characters and 20 tools.
func BenchmarkEstimateTokens(b *testing.B) {
	req := provider.Request{System: strings.Repeat("s", 3000)}
	for i := range 100 {
		role := provider.RoleUser
		if i%2 == 1 {
			role = provider.RoleAssistant
		}
		req.Messages = append(req.Messages, provider.Message{Role: role, Text: strings.Repeat("x", 2000)})
	}
	for i := range 20 {
		var fn tool.Function
		fn.Type = "function"
		fn.Function.Name = fmt.Sprintf("tool%d", i)
		fn.Function.Description = strings.Repeat("d", 500)
		fn.Function.Parameters = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
		req.Tools = append(req.Tools, fn)
	}
	b.ResetTimer()
	for range b.N {
		if harness.EstimateTokens(req) == 0 {
			b.Fatal("zero")
		}
	}
}

// BenchmarkCompactedTurnFromStore is a turn of a compacted session that reads its
// transcript from the store (as after a restart, or once the kept transcripts were
// forgotten), after 100 and after 1,000 turns of 2,000 characters with a window of 4,000
// tokens (issue 29). The turn reads the messages since the last compaction only, so both
// cost about the same; when it read the whole session, the second cost ten times the
// first in bytes.
func BenchmarkCompactedTurnFromStore(b *testing.B) {
	const window = 4000
	msg := strings.Repeat("paragraph words. ", 200)[:2000]
	for _, before := range []int{100, 1000} {
		b.Run(fmt.Sprintf("after-%d-turns", before), func(b *testing.B) {
			f := newFixture(b, fixtureOptions{window: window, adjust: func(o *harness.Options) {
				o.Models = staticModels{p: textModel{}, model: "instant", window: window}
			}})
			turn := func(i int) {
				info, err := f.h.Start(context.Background(), f.session.ID, harness.Input{Text: fmt.Sprintf("%d %s", i, msg)})
				if err != nil {
					b.Fatal(err)
				}
				if err := f.h.Wait(context.Background(), info.SessionID); err != nil {
					b.Fatal(err)
				}
			}
			for i := range before {
				turn(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				f.h.ForgetTranscripts()
				turn(before + i)
			}
		})
	}
}
