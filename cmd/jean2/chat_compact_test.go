package main

import (
	"strings"
	"testing"

	"github.com/jean2/jean2/provider/providertest"
)

// /compact summarizes the older messages with the session's model; the chat shows
// "Context compacted: N messages summarized", and the next turn's request carries the
// summary in place of the first messages.
func TestChatCompact(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.fake.Push(
		providertest.OpenAIText("test-model", "First answer."),
		providertest.OpenAIText("test-model", "Second answer."),
		providertest.OpenAIText("test-model", "SUMMARY-CHAT: two questions were answered."),
		providertest.OpenAIText("test-model", "Third answer."),
	)
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base)
	p.waitFor("> ")
	p.send("FIRST-QUESTION " + strings.Repeat("words ", 50))
	p.waitFor("First answer.")
	p.waitFor("── done")
	p.send("second question")
	p.waitFor("Second answer.")
	p.waitFor("── done")
	p.send("/compact")
	p.waitFor("Compacting the conversation…")
	p.waitFor("── Context compacted: 2 messages summarized (asked for)")
	p.send("third question")
	p.waitFor("Third answer.")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v; the screen:\n%s", err, p.screen.String())
	}
	reqs := c.fake.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "SUMMARY-CHAT") || strings.Contains(last, "FIRST-QUESTION") || !strings.Contains(last, "third question") {
		t.Fatalf("the request after /compact: %s", last)
	}
}
