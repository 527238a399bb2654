package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider/providertest"
)

// What the terminal shows of a session as a person works in it (issue 24, point 8): the
// model in the header; a long command's output folded to a bounded tail with a line
// saying how many were hidden (`seq 1 3000` printed ~90 progress lines and 400 lines of
// output before); Ctrl-L clears the screen and draws the session again; /fork goes on in
// the fork (before, it only printed the fork's id and stayed in the old session).
func TestChatTerminalFoldsOutputShowsModelRedrawsAndForks(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.fake.Push(
		providertest.NewOpenAIStream("test-model").ToolCall(0, "call_seq", "shell", `{"command":"seq 1 3000"}`).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("test-model", "Counted to 3000."),
		providertest.OpenAIText("test-model", "Answered in the fork."),
	)
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base, "--workspace", c.ws)
	p.waitFor("openai/test-model")
	p.waitFor("> ")
	p.send("count")
	p.waitFor("Counted to 3000.")
	p.waitFor("── done")
	screen := p.screen.String()
	numbers := 0
	for _, l := range strings.Split(screen, "\n") {
		if regexp.MustCompile(`^\s*(│ )?\d+\s*$`).MatchString(strings.TrimRight(l, "\r")) {
			numbers++
		}
	}
	if numbers > 40 || !strings.Contains(screen, "lines hidden") || !regexp.MustCompile(`(?m)^\s*3000\r?$`).MatchString(screen) {
		t.Fatalf("seq 1 3000: %d lines of numbers drawn (want a tail of at most 40 with a hidden-lines line, ending at 3000):\n%s", numbers, screen)
	}

	// Ctrl-L alone, with no Enter after it, clears the screen and draws the session again
	// at once (before, the terminal handed the chat whole lines, so it waited for Enter);
	// what was typed before it stays on the line and is sent with what follows.
	if _, err := p.pty.Write([]byte("/he\x0c")); err != nil {
		t.Fatal(err)
	}
	p.waitFor("\x1b[2J")
	p.waitFor("jean2 chat")
	p.waitFor("count")
	p.waitFor("Counted to 3000.")
	p.waitFor("> /he")
	p.send("lp")
	p.waitFor("/compact") // the help: "/he" + "lp" was sent as one line

	p.send("/fork")
	p.waitFor("Forked as session ")
	m := regexp.MustCompile(`Forked as session (ses_\w+)`).FindStringSubmatch(p.screen.String())
	if m == nil {
		t.Fatalf("no fork id on the screen:\n%s", p.screen.String())
	}
	fork := m[1]
	p.waitFor("session " + fork)
	p.send("and now")
	p.waitFor("Answered in the fork.")
	var msgs struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	getJSON(t, c.token(), base+"/api/sessions/"+fork+"/messages", &msgs)
	if n := len(msgs.Messages); n == 0 || msgs.Messages[n-2].Content != "and now" {
		t.Fatalf("the message after /fork did not go to the fork %s: %+v", fork, msgs.Messages)
	}
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
}
