package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// wireTokens estimates a request as the provider received it, from its JSON: the text of
// its messages (system included), its calls' arguments and its tools' definitions, at
// four characters a token: the measure the window is held to.
func wireTokens(t testing.TB, body []byte) int {
	t.Helper()
	var r struct {
		Messages []struct {
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name, Arguments string
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	chars := len(r.Tools)
	for _, m := range r.Messages {
		chars += 16 + len(text(m.Content)) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			chars += 16 + len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	return chars / 4
}

const summaryMarker = "You summarize a conversation"

// isSummaryRequest reports whether a request asks for a compaction's summary.
func isSummaryRequest(t testing.TB, body []byte) bool {
	var r oaiRequest
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return len(r.Messages) > 0 && strings.Contains(text(r.Messages[0].Content), summaryMarker)
}

// The measure of issue 14: with a context window of 4,000 tokens and 25 turns of 2,000
// characters each, every turn answers and no request the provider receives exceeds the
// window; older rounds are summarized into stored compaction parts, the latest turns are
// sent whole, and the summary is sent in their place.
func TestCompactionKeepsLongSessionInWindow(t *testing.T) {
	const window = 4000
	f := newFixture(t, fixtureOptions{window: window})
	var mu sync.Mutex
	summaries := 0
	f.srv.Respond(func(r providertest.Request) providertest.Reply {
		if isSummaryRequest(t, r.Body) {
			mu.Lock()
			summaries++
			n := summaries
			mu.Unlock()
			return providertest.NewOpenAIStream("gpt-test").Text(fmt.Sprintf("SUMMARY-%d: the person sent numbered paragraphs; the agent acknowledged each.", n)).
				Finish("stop").Usage(900, 40).Done().Reply()
		}
		return providertest.NewOpenAIStream("gpt-test").Text("Noted.").Finish("stop").Usage(100, 2).Done().Reply()
	})
	for i := range 25 {
		msg := fmt.Sprintf("TURN-%02d ", i) + strings.Repeat(fmt.Sprintf("paragraph %d. ", i), 2000)[:1992]
		if len(msg) != 2000 {
			t.Fatalf("message of %d characters", len(msg))
		}
		_, fin := f.turn(msg)
		if fin.Reason != harness.ReasonDone {
			t.Fatalf("turn %d: %+v", i, fin)
		}
	}
	reqs := f.srv.Requests()
	answers := 0
	for i, r := range reqs {
		if n := wireTokens(t, r.Body); n > window {
			t.Errorf("request %d takes %d tokens, more than the window of %d", i, n, window)
		}
		if !isSummaryRequest(t, r.Body) {
			answers++
		}
	}
	if answers != 25 || summaries == 0 {
		t.Fatalf("%d answers, %d summaries in %d requests", answers, summaries, len(reqs))
	}

	// The last request: the latest summary in the system prompt, the last turn whole, the
	// first turns gone.
	var last oaiRequest
	for i := len(reqs) - 1; i >= 0; i-- {
		if !isSummaryRequest(t, reqs[i].Body) {
			if err := reqs[i].Decode(&last); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	sys := text(last.Messages[0].Content)
	if !strings.Contains(sys, fmt.Sprintf("SUMMARY-%d", summaries)) {
		t.Fatalf("the last summary is not in the system prompt:\n%s", sys)
	}
	body := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(body, "TURN-24 ") || strings.Contains(body, "TURN-00 ") {
		t.Fatal("the last request does not hold the last turn whole, or still holds the first")
	}

	// Stored: compaction parts on system messages, each saying what it summarized; every
	// user message is still there for people.
	var compactions []store.CompactionInfo
	users := 0
	for _, m := range f.messages() {
		if m.Role == store.RoleUser {
			users++
		}
		for _, p := range m.Parts {
			if p.Kind == store.PartCompaction {
				var ci store.CompactionInfo
				if err := json.Unmarshal([]byte(p.Args), &ci); err != nil || ci.Messages == 0 || ci.UpToSeq == 0 || !strings.HasPrefix(p.Text, "SUMMARY-") {
					t.Fatalf("compaction part %+v (%v)", p, err)
				}
				compactions = append(compactions, ci)
			}
		}
	}
	if users != 25 || len(compactions) == 0 || len(compactions) > summaries {
		t.Fatalf("%d user messages, %d compactions for %d summaries", users, len(compactions), summaries)
	}
	for i := 1; i < len(compactions); i++ {
		if compactions[i].UpToSeq <= compactions[i-1].UpToSeq {
			t.Fatalf("compactions do not move forward: %+v", compactions)
		}
	}
	// The compaction reached clients as message.created with its part.
	f.waitEvent(harness.EventMessageCreated, `"kind":"compaction"`)
}

// bigResultTool returns a large result, as a file read would.
const bigResultTool = `export const definition = { name: 'bigread', description: 'Return a big text.',
  inputSchema: { type: 'object', properties: { n: { type: 'number' } } } };
export async function execute(input) { return { success: true, result: { text: 'BIGRESULT ' + 'x'.repeat(input.n) } }; }
`

// Old tool results are pruned before anything is summarized: a session whose size is in
// an old tool result fits again with the result replaced by a note, and no summary is
// asked for.
func TestCompactionPrunesOldToolResultsFirst(t *testing.T) {
	f := newFixture(t, fixtureOptions{window: 6000, tools: map[string]string{"bigread": bigResultTool}})
	ids := &seqIDs{}
	f.srv.Push(providertest.OpenAIToolCall("gpt-test", ids.next(), "bigread", `{"n":14000}`),
		providertest.OpenAIText("gpt-test", "Read it."))
	if _, fin := f.turn("read the big thing"); fin.Reason != harness.ReasonDone {
		t.Fatalf("%+v", fin)
	}
	f.srv.Push(providertest.OpenAIText("gpt-test", "Fine."))
	if _, fin := f.turn("now something else: " + strings.Repeat("more words ", 400)); fin.Reason != harness.ReasonDone {
		t.Fatalf("%+v", fin)
	}
	reqs := f.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests: a summary was asked for", len(reqs))
	}
	last := string(reqs[2].Body)
	if strings.Contains(last, "BIGRESULT") || !strings.Contains(last, "was pruned to keep the conversation within") {
		t.Fatal("the old result was not pruned in the last request")
	}
	// The note names a file in the session's folder that holds the whole result (it had
	// no overflow file of its own: it is under the overflow limit).
	m := regexp.MustCompile(`The full result is in (\S+): read it with read-file`).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("the pruned result's note names no file: %.600s", last[strings.Index(last, "was pruned")-200:])
	}
	kept, err := os.ReadFile(m[1])
	if err != nil || !strings.Contains(string(kept), "BIGRESULT "+strings.Repeat("x", 14000)) {
		t.Fatalf("the kept result %s: %v (%d bytes)", m[1], err, len(kept))
	}
	if n := wireTokens(t, reqs[2].Body); n > 6000 {
		t.Fatalf("last request %d tokens", n)
	}
	// The stored result is whole: pruning is what the model is sent, not what is kept.
	found := false
	for _, m := range f.messages() {
		for _, p := range m.Parts {
			if p.Kind == store.PartToolCall && strings.Contains(p.Result, "BIGRESULT") {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("the stored result was changed")
	}
}

// A provider that refuses the request as longer than the model's context (the window
// being unknown to jean2) gets the session compacted and the request once more; a manual
// Compact summarizes on demand, and refuses when there is nothing left to summarize.
func TestContextExceededCompactsAndRetriesOnce(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	sc := &script{}
	sc.install(t, f.srv)
	for i := range 4 {
		sc.push("", providertest.OpenAIText("gpt-test", fmt.Sprintf("answer %d", i)))
		f.turn(fmt.Sprintf("MSG-%d ", i) + strings.Repeat("words ", 300))
	}
	sc.push("A", providertest.OpenAIError(400, "invalid_request_error", "This model's maximum context length is 2000 tokens. However, your messages resulted in 2400 tokens. Please reduce the length of the messages."),
		providertest.OpenAIText("gpt-test", "answered after compaction"))
	_, fin := f.turn("MSG-4 the last one")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	reqs := f.srv.Requests()
	if sc.sums == 0 || len(reqs) != 6+sc.sums {
		t.Fatalf("%d requests, %d summaries", len(reqs), sc.sums)
	}
	retry := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(retry, "SUMMARY-A") || strings.Contains(retry, "MSG-0 ") || !strings.Contains(retry, "MSG-4 the last one") {
		t.Fatalf("the retried request: %s", retry)
	}
	msgs := f.messages()
	if last := msgs[len(msgs)-1]; last.Content != "answered after compaction" {
		t.Fatalf("last message %+v", last)
	}

	// A second refusal after the retry is not retried again: the turn fails, saying why.
	sc.push("B", providertest.OpenAIError(400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum"),
		providertest.OpenAIError(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"))
	_, fin = f.turn("MSG-5 " + strings.Repeat("more ", 200))
	if fin.Reason != harness.ReasonError || !strings.Contains(fin.Error, "250000 tokens") {
		t.Fatalf("finished %+v", fin)
	}
	if len(sc.replies) != 0 {
		t.Fatalf("%d replies left", len(sc.replies))
	}

	// Manual compaction.
	sc.push("MANUAL")
	info, err := f.h.Compact(context.Background(), f.session.ID)
	if err != nil || info.Messages == 0 || !info.Manual {
		t.Fatalf("compact: %+v %v", info, err)
	}
	sc.push("", providertest.OpenAIText("gpt-test", "ok"))
	f.turn("after manual")
	reqs = f.srv.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "SUMMARY-MANUAL") {
		t.Fatalf("the manual summary was not sent: %s", body)
	}
	// A session of two messages has nothing to summarize.
	f2 := newFixture(t, fixtureOptions{})
	f2.srv.Push(providertest.OpenAIText("gpt-test", "hi"))
	f2.turn("hello")
	if _, err := f2.h.Compact(context.Background(), f2.session.ID); !errors.Is(err, harness.ErrNothingToCompact) {
		t.Fatalf("compacting two messages: %v", err)
	}
}

// A model whose window jean2 is not told refuses, as real providers do, every request
// past it (OpenAI's 400 context_length_exceeded). The first refusal compacts the session
// and the request is sent again; from then on the harness knows the window is below what
// was refused and compacts before sending, so the provider is not asked a request it
// refuses again: one refusal in a long session, not one every few turns. Every turn
// answers, and no turn's message is lost or stored twice.
func TestUnknownWindowLearnedFromRefusal(t *testing.T) {
	const window = 4000
	f := newFixture(t, fixtureOptions{}) // the window is unknown
	var mu sync.Mutex
	refused, summaries := 0, 0
	f.srv.Respond(func(r providertest.Request) providertest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if n := wireTokens(t, r.Body); n > window {
			refused++
			return providertest.OpenAIContextExceeded(window, n)
		}
		if isSummaryRequest(t, r.Body) {
			summaries++
			return providertest.OpenAIText("gpt-test", fmt.Sprintf("SUMMARY-%d of the numbered paragraphs.", summaries))
		}
		return providertest.OpenAIText("gpt-test", "Noted.")
	})
	const turns = 30
	for i := range turns {
		msg := fmt.Sprintf("TURN-%02d ", i) + strings.Repeat(fmt.Sprintf("paragraph %d. ", i), 2000)[:1992]
		if _, fin := f.turn(msg); fin.Reason != harness.ReasonDone {
			t.Fatalf("turn %d: %+v", i, fin)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if refused != 1 || summaries < 3 {
		t.Fatalf("%d requests refused as too long, %d summaries in %d turns: after the first refusal the session should be compacted before its requests are refused", refused, summaries, turns)
	}
	seen := map[string]int{}
	for _, m := range f.messages() {
		if m.Role == store.RoleUser {
			seen[m.Content[:7]]++
		}
		if m.Role == store.RoleAssistant && (m.Status != store.StatusComplete || m.Content != "Noted.") {
			t.Errorf("answer %d: %s %q %s", m.Seq, m.Status, m.Content, m.Error)
		}
	}
	for i := range turns {
		if n := seen[fmt.Sprintf("TURN-%02d", i)]; n != 1 {
			t.Errorf("turn %d's message is stored %d times", i, n)
		}
	}
}

// script answers summary requests with SUMMARY-<label> (label set by the test) and other
// requests from a queue.
type script struct {
	mu      sync.Mutex
	label   string
	replies []providertest.Reply
	sums    int
}

func (s *script) install(t testing.TB, srv *providertest.Server) {
	srv.Respond(func(r providertest.Request) providertest.Reply {
		s.mu.Lock()
		defer s.mu.Unlock()
		if isSummaryRequest(t, r.Body) {
			s.sums++
			return providertest.OpenAIText("gpt-test", "SUMMARY-"+s.label+" of the earlier messages")
		}
		if len(s.replies) == 0 {
			t.Errorf("no reply scripted")
			return providertest.OpenAIText("gpt-test", "unscripted")
		}
		r0 := s.replies[0]
		s.replies = s.replies[1:]
		return r0
	})
}

func (s *script) push(label string, replies ...providertest.Reply) {
	s.mu.Lock()
	s.label = label
	s.replies = append(s.replies, replies...)
	s.mu.Unlock()
}

// The same on Anthropic's wire format: its "prompt is too long" refusal compacts the
// session (the summary asked of the same model, with max_tokens) and the request is sent
// once more.
func TestContextExceededAnthropic(t *testing.T) {
	f := newFixture(t, fixtureOptions{flavor: providertest.Anthropic})
	for i := range 3 {
		f.srv.Push(providertest.AnthropicText("claude-test", fmt.Sprintf("answer %d", i)))
		f.turn(fmt.Sprintf("MSG-%d ", i) + strings.Repeat("words ", 300))
	}
	f.srv.Respond(func(r providertest.Request) providertest.Reply {
		var body struct {
			System    json.RawMessage `json:"system"`
			MaxTokens int             `json:"max_tokens"`
		}
		_ = r.Decode(&body)
		if strings.Contains(string(body.System), summaryMarker) {
			if body.MaxTokens == 0 || body.MaxTokens > 4096 {
				t.Errorf("summary max_tokens %d", body.MaxTokens)
			}
			return providertest.AnthropicText("claude-test", "SUMMARY-ANT")
		}
		return providertest.AnthropicText("claude-test", "answered")
	})
	f.srv.Push(providertest.AnthropicError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
	_, fin := f.turn("MSG-3 last")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	reqs := f.srv.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "SUMMARY-ANT") || strings.Contains(last, "MSG-0 ") || !strings.Contains(last, "MSG-3 last") {
		t.Fatalf("the retried request: %.2000s", last)
	}
}
