package chat

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
)

// /goal in the chat sets the session's goal and starts working towards it; the scripted
// evaluator says not done once, jean2's own message to go on is shown as jean2's, and the
// goal is shown met after the second turn.
func TestChatGoal(t *testing.T) {
	srv, base, fake := testServer(t)
	ws := t.TempDir()
	fake.Push(
		providertest.OpenAIText("test-model", "Hel"),
		providertest.OpenAIText("test-model", `{"done": false, "reason": "say the whole word"}`),
		providertest.OpenAIText("test-model", "Hello!"),
		providertest.OpenAIText("test-model", `{"done": true, "reason": "it said Hello"}`),
	)
	in, typed := io.Pipe()
	var out screen
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Server: base, Token: srv.Token(), Workspace: ws, Stdin: in, Stdout: &out})
	}()
	out.waitFor(t, "agent build")
	if _, err := io.WriteString(typed, "/goal --turns 3 the agent said Hello\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "jean2: [jean2 goal] Work towards this goal: the agent said Hello")
	out.waitFor(t, "jean2: [jean2 goal] Continue towards the goal: say the whole word")
	out.waitFor(t, "✓ Goal (met, 2 of 3 turns): the agent said Hello — it said Hello")
	if _, err := io.WriteString(typed, "/quit\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return; the screen:\n%s", out.String())
	}
}
