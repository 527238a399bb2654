package harness_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// A long session that compaction holds within its window keeps in memory only what the
// model is still sent (issue 29): after 40 turns of 2,000 characters with a window of
// 4,000 tokens the kept transcript holds no message a compaction summarized, however many
// turns ran; and a turn that reads its transcript from the store (a restart) reads only
// those messages too, and still sends the summary and the recent turns.
func TestLongSessionKeepsOnlyItsLiveMessages(t *testing.T) {
	const window, turns = 4000, 40
	f := newFixture(t, fixtureOptions{window: window})
	f.srv.Respond(func(r providertest.Request) providertest.Reply {
		if isSummaryRequest(t, r.Body) {
			return providertest.NewOpenAIStream("gpt-test").Text("SUMMARY: numbered paragraphs, each acknowledged.").
				Finish("stop").Usage(900, 40).Done().Reply()
		}
		return providertest.NewOpenAIStream("gpt-test").Text("Noted.").Finish("stop").Usage(100, 2).Done().Reply()
	})
	maxKept := 0
	for i := range turns {
		msg := fmt.Sprintf("TURN-%02d ", i) + strings.Repeat(fmt.Sprintf("paragraph %d. ", i), 200)[:1992]
		if _, fin := f.turn(msg); fin.Reason != harness.ReasonDone {
			t.Fatalf("turn %d: %+v", i, fin)
		}
		kept := f.h.KeptTranscript(f.session.ID)
		checkLive(t, f, kept)
		maxKept = max(maxKept, len(kept))
	}
	// A 4,000-token window holds a handful of 500-token turns: the kept transcript is
	// that, a compaction message, and the messages not yet summarized.
	if maxKept > 16 {
		t.Errorf("up to %d messages kept in memory for a window of %d tokens (%d stored)", maxKept, window, len(f.messages()))
	}

	f.h.ForgetTranscripts()
	if _, fin := f.turn("TURN-LAST after a restart"); fin.Reason != harness.ReasonDone {
		t.Fatalf("the turn after the restart: %+v", fin)
	}
	kept := f.h.KeptTranscript(f.session.ID)
	checkLive(t, f, kept)
	if len(kept) > 16 {
		t.Errorf("the turn read %d messages back from the store", len(kept))
	}
	reqs := f.srv.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "SUMMARY: numbered") || !strings.Contains(last, "TURN-LAST") || !strings.Contains(last, fmt.Sprintf("TURN-%02d ", turns-1)) {
		t.Fatalf("the request after the restart lacks the summary or the recent turns: %.500s", last)
	}
	if strings.Contains(last, "TURN-00 ") {
		t.Fatal("the request after the restart holds the first turn again")
	}
}

// checkLive fails when kept holds a message the session's last compaction summarized.
func checkLive(t *testing.T, f *fixture, kept []store.Message) {
	t.Helper()
	info, ok, err := f.db.LastCompaction(context.Background(), f.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) == 0 {
		t.Fatal("no transcript kept for the next turn")
	}
	if ok && kept[0].Seq <= info.UpToSeq {
		t.Fatalf("the kept transcript (%d messages) starts at seq %d, which the compaction up to %d summarized",
			len(kept), kept[0].Seq, info.UpToSeq)
	}
}
