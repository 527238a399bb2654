package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider/providertest"
)

// jean2 chat against jean2 serve: a skill of $JEAN2_HOME/skills is offered, the model loads
// it with the skill tool and keeps a fact with the memory tool once the person allows it
// (answered in the terminal); the next request carries
// the skill's name and description, not its body, and MEMORY.md holds the fact.
func TestChatSkillAndMemory(t *testing.T) {
	c := newChatEnv(t)
	skill := filepath.Join(c.home, "skills", "release-notes", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(skill), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, []byte("---\nname: release-notes\ndescription: Write release notes from the git log.\n---\nBODY-4417: group by feature.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := c.serve()
	c.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "skill", `{"name":"release-notes"}`),
		providertest.OpenAIToolCall("test-model", "call_2", "memory", `{"action":"add","content":"Release notes are grouped by feature."}`),
		providertest.OpenAIText("test-model", "Notes written."),
	)
	p := c.chat([]string{"NO_COLOR=1"}, "--server", base)
	p.waitFor("> ")
	p.send("write the release notes")
	p.waitFor("⏺ skill")
	// The memory tool asks before it changes MEMORY.md: allowed once here.
	p.waitFor(`Permission requested: Editing file "MEMORY.md" (outside workspace) requires approval.`)
	p.waitFor("Choose 1-4")
	p.send("1")
	p.waitFor("Allowed (once)")
	p.waitFor("Notes written.")
	p.waitFor("── done")
	p.send("/quit")
	if err := p.wait(); err != nil {
		t.Fatalf("jean2 chat exited with %v; the screen:\n%s", err, p.screen.String())
	}
	reqs := c.fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	first, second := string(reqs[0].Body), string(reqs[1].Body)
	if !strings.Contains(first, "- release-notes: Write release notes from the git log.") || strings.Contains(first, "BODY-4417") {
		t.Errorf("the first request should list the skill without its body: %.2000s", first)
	}
	if !strings.Contains(second, "BODY-4417") {
		t.Errorf("the skill's body did not reach the model after the skill call")
	}
	if data, err := os.ReadFile(filepath.Join(c.home, "MEMORY.md")); err != nil || string(data) != "Release notes are grouped by feature.\n" {
		t.Fatalf("MEMORY.md = %q, %v", data, err)
	}
}
