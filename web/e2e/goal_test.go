package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestGoalBadge: a session without a goal shows no goal in its header; once a goal is set
// (through the API, starting at once) the badge follows goal.changed — the scripted
// evaluator says not done once, then done — to "met" after two turns, and a reload draws it
// from the session's view.
func TestGoalBadge(t *testing.T) {
	f := newFixture(t)
	s := f.session("goal")
	f.open("#/s/" + s.ID)
	f.waitText("#agent", "Agent: build")
	if got := f.eval(`String(document.querySelector("#goal").hidden)`); got != "true" {
		t.Fatalf("the goal badge without a goal: hidden=%s", got)
	}
	f.fake.Push(text("Hel"), text(`{"done": false, "reason": "say the whole word"}`), text("Hello!"), text(`{"done": true, "reason": "it said Hello"}`))
	f.api("PUT", "/api/sessions/"+s.ID+"/goal", map[string]any{"condition": "the agent said Hello", "maxTurns": 5, "start": true}, nil)
	f.waitText("#goal", "Goal: ✓ met (2 of 5 turns)")
	if got := f.eval(`document.querySelector("#goal").title`); got != "the agent said Hello\nit said Hello" {
		t.Fatalf("the badge's tooltip: %q", got)
	}
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText("#goal", "Goal: ✓ met (2 of 5 turns)")
}
