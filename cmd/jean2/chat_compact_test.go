package main

import (
	"strings"
	"testing"
	"time"

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

// With autoTitle on, the server names a chat's session after its first turn: the model is
// asked, and the title shows in the session's list.
func TestChatSessionNamed(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.setAutoTitle(base, true)
	c.fake.Push(providertest.OpenAIText("test-model", "Here is the plan."),
		providertest.OpenAIText("test-model", "Plan the database migration"))
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base)
	p.waitFor("> ")
	p.send("help me plan how to migrate the database to postgres")
	p.waitFor("Here is the plan.")
	p.waitFor("── done")
	var list struct {
		Sessions []struct{ Title string }
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		getJSON(t, c.token(), base+"/api/sessions", &list)
		if len(list.Sessions) == 1 && list.Sessions[0].Title == "Plan the database migration" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions %+v", list.Sessions)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
}

// /title renames the session; /search lists the sessions that hold the words, with the
// command that opens them.
func TestChatTitleAndSearch(t *testing.T) {
	c := newChatEnv(t)
	base := c.serve()
	c.patchSettings(base, `{"prices":{"test-model":{"input":1000,"output":2000}}}`)
	c.fake.Push(providertest.OpenAIText("test-model", "The flux capacitor is charged."))
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base)
	p.waitFor("> ")
	p.send("charge it")
	// 10 in and 1 out at 1000 and 2000 per million tokens.
	p.waitFor("── done · 10 in / 1 out tokens ($0.0120)")
	p.send("/title Time machine")
	p.waitFor("Session renamed: Time machine")
	p.send("/sessions")
	p.waitFor("▸ Time machine")
	p.waitFor("charge it")
	p.send("/search flux")
	p.waitFor("Time machine")
	p.waitFor("jean2 chat --session ses_")
	p.waitFor("assistant: The flux capacitor is charged.")
	p.send("/tokens")
	p.waitFor("This session: 10 in / 1 out tokens, cost 0.0120")
	p.waitFor("  test-model: 10 in / 1 out")
	p.send("/search nothingmatches")
	p.waitFor("No session holds nothingmatches.")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
}

// --provider/--model choose the session's model, checked against the provider's list;
// /model lists the models and switches; a model the provider does not list is refused.
func TestChatModel(t *testing.T) {
	c := newChatEnv(t)
	c.fake.ModelList = `{"data":[{"id":"test-model"},{"id":"other-model"}]}`
	base := c.serve()
	c.fake.Push(providertest.OpenAIText("other-model", "From the other one."), providertest.OpenAIText("test-model", "From the test one."))
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base, "--provider", "openai", "--model", "other-model")
	p.waitFor("> ")
	p.send("hello")
	p.waitFor("From the other one.")
	p.waitFor("── done")
	p.send("/model")
	p.waitFor("This session uses other-model of openai.")
	p.waitFor("Its models: other-model, test-model")
	p.send("/model nope")
	p.waitFor("provider openai does not list the model nope; it lists other-model, test-model")
	p.send("/model test-model")
	p.waitFor("This session now uses test-model.")
	p.send("again")
	p.waitFor("From the test one.")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
	var models []string
	for _, r := range c.fake.Requests() {
		var body struct{ Model string }
		if r.Path == "/v1/chat/completions" && r.Decode(&body) == nil {
			models = append(models, body.Model)
		}
	}
	if strings.Join(models, ",") != "other-model,test-model" {
		t.Fatalf("models asked %v", models)
	}
	bad := c.chat([]string{"NO_COLOR=1"}, "--server", base, "--provider", "openai", "--model", "missing")
	if err := bad.wait(); err == nil || !strings.Contains(bad.screen.String(), "does not list the model missing") {
		t.Fatalf("--model missing: %v\n%s", err, bad.screen.String())
	}
}

// With no provider, a message is refused with what to do: the web client's Settings (its
// address given) or the environment's variables; the message is kept on screen.
func TestChatWithoutProviderSaysWhereToAddOne(t *testing.T) {
	c := newChatEnv(t)
	p := c.chat([]string{"NO_COLOR=1", "JEAN2_SERVER=http://127.0.0.1:1", "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "OPENAI_MODEL="})
	p.waitFor("started one here at http://127.0.0.1:")
	p.waitFor("> ")
	p.send("hello there")
	p.waitFor("Could not start the turn: no LLM provider is configured")
	p.waitFor("/#/settings")
	p.waitFor("OPENAI_API_KEY and OPENAI_MODEL")
	p.waitFor("(your message: hello there)")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v", err)
	}
}
