package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// BenchmarkSubagentsParallel is the wall time of a turn whose one answer starts five
// children, each doing 2 s of tool work (nap) and answering: with the children running at
// once it is about 2 s, not 10 s (docs/performance.md).
func BenchmarkSubagentsParallel(b *testing.B) {
	const children, napMs = 5, 2000
	f := newSubagentFixture(b, func(o *harness.Options) { o.WorkRounds = 20 })
	f.respond(func(r req) providertest.Reply {
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			return f.tasks(children)
		case r.user == "PARENT":
			return f.say("parent done")
		case len(r.results) == 0:
			return f.call("call_nap_"+r.user, "nap", map[string]any{"ms": napMs})
		}
		return f.say(r.user + " done")
	})
	for b.Loop() {
		// A fresh session each time: the script tells the parent's first round by its
		// transcript.
		s, err := f.db.CreateSession(context.Background(), store.Session{WorkspaceID: f.session.WorkspaceID, Provider: "fake", Model: f.model})
		if err != nil {
			b.Fatal(err)
		}
		f.session = s
		start := time.Now()
		_, fin := f.turn("PARENT")
		wall := time.Since(start)
		if fin.Reason != harness.ReasonDone {
			b.Fatalf("finished %+v", fin)
		}
		b.ReportMetric(wall.Seconds(), "wall-s/turn")
		b.Logf("%d children × %d ms of tool work: the parent's turn took %v (serial would be ≥ %v)",
			children, napMs, wall.Round(10*time.Millisecond), time.Duration(children*napMs)*time.Millisecond)
	}
}
