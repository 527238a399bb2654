package main

import (
	"testing"

	"github.com/jean2/jean2/provider/providertest"
)

// The chat's conversation controls against a real server: /retry answers the last message
// again, /edit sends it again with new text, /fork makes a new session; and /quit leaves
// while a question is on screen.
func TestChatControlsAndQuitAtAQuestion(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.fake.Push(
		providertest.OpenAIText("test-model", "First answer."),
		providertest.OpenAIText("test-model", "Second answer."),
		providertest.OpenAIText("test-model", "Edited answer."),
		providertest.NewOpenAIStream("test-model").ToolCall(0, "call_s", "survey", `{}`).Finish("tool_calls").Done().Reply(),
	)
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base, "--workspace", c.ws)
	p.waitFor("> ")
	p.send("hello")
	p.waitFor("First answer.")
	p.waitFor("── done")
	p.send("/retry")
	p.waitFor("(2 messages removed; going on from there)")
	p.waitFor("Second answer.")
	p.send("/edit hello again")
	p.waitFor("Edited answer.")
	p.send("/fork")
	p.waitFor("Forked as session ses_")
	p.send("survey me")
	p.waitFor("Which languages?")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
}
