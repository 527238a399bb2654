package main

import (
	"testing"
	"time"

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
		// The answer's text is on screen a moment before its turn ends, as on a loaded machine:
		// a control sent on seeing the text alone is refused ("a turn is running").
		providertest.NewOpenAIStream("test-model").Text("Second answer.").Pause(300*time.Millisecond).Finish("stop").Usage(10, 1).Done().Reply(),
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
	p.waitFor("── done")
	p.send("/edit hello again")
	p.waitFor("Edited answer.")
	p.waitFor("── done")
	p.send("/fork")
	p.waitFor("Forked as session ses_")
	p.send("survey me")
	p.waitFor("Which languages?")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
}
