package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider/providertest"
)

// jean2 chat against jean2 serve: a task call starts a subagent; the terminal shows its
// progress compactly (its start and each call it makes, under the task call) and the
// parent's answer built on the child's.
func TestChatSubagentProgress(t *testing.T) {
	c := newChatEnv(t)
	// The child's memory call goes on unasked: the person's setting allows it.
	if err := os.WriteFile(filepath.Join(c.home, "config.json"), []byte(`{"memory": {"autoApprove": true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := c.serve()
	c.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "task", `{"description":"look around","prompt":"Keep a fact."}`),
		providertest.OpenAIToolCall("test-model", "call_2", "memory", `{"action":"add","content":"The child was here."}`),
		providertest.OpenAIText("test-model", "CHILD-ANSWER-31"),
		providertest.OpenAIText("test-model", "The subagent said so."),
	)
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base)
	p.waitFor("> ")
	p.send("use a subagent")
	p.waitFor("⏺ task")
	p.waitFor("[look around] subagent ses_")
	p.waitFor("[look around] → memory")
	p.waitFor("The subagent said so.")
	p.waitFor("── done")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v; the screen:\n%s", err, p.screen.String())
	}
	reqs := c.fake.Requests()
	if len(reqs) != 4 || !strings.Contains(string(reqs[3].Body), "CHILD-ANSWER-31") {
		t.Fatalf("%d model requests; the parent's last did not carry the child's answer", len(reqs))
	}
}
