package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
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

// TestGoalSetAndClearInHeader: the person sets a goal from the session's header — "Set
// goal", a condition and a budget of turns, started at once — and the badge follows the
// goal to "met" as the scripted evaluator says done; the server holds the goal as typed.
// "Change goal" shows the goal's condition; "Clear goal" removes it: the badge hides, the
// server has none, and the button reads "Set goal" again.
func TestGoalSetAndClearInHeader(t *testing.T) {
	f := newFixture(t)
	s := f.session("goal from the header")
	f.open("#/s/" + s.ID)
	f.waitText("#goal-set", "Set goal")
	if got := f.eval(`String(document.querySelector("#goal-clear").hidden)`); got != "true" {
		t.Fatalf("Clear goal without a goal: hidden=%s", got)
	}
	f.fake.Push(text("Done: all green."), text(`{"done": true, "reason": "the tests pass"}`))
	f.click("#goal-set")
	f.typeInto("#goal-condition", "the tests pass")
	f.eval(`(() => { const t = document.querySelector("#goal-turns"); t.value = "4"; return "ok"; })()`)
	// The PUT's answer is held back until the turn it started was judged (goal.changed,
	// "met"), as a loaded machine can have it: the stale goal it carries must not be drawn
	// over the newer one (before: the badge went back to "active (0 of 4 turns)").
	f.eval(`(() => {
		const real = window.fetch;
		window.fetch = async (path, init) => {
			const res = await real(path, init);
			if (init?.method === "PUT" && String(path).endsWith("/goal")) {
				const deadline = Date.now() + 10000;
				while (!document.querySelector("#goal")?.textContent.includes("met") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
				window.__goalPutAnswered = true;
			}
			return res;
		};
		return "ok";
	})()`)
	f.click("#goal-save")
	f.waitJS("the held-back answer to the PUT drawn", `window.__goalPutAnswered === true && document.querySelector("dialog[open]") === null`)
	f.waitText("#goal", "Goal: ✓ met (1 of 4 turns)")
	var got struct {
		Goal *struct {
			Condition string
			MaxTurns  int
			State     string
		}
	}
	f.api("GET", "/api/sessions/"+s.ID+"/goal", nil, &got)
	if got.Goal == nil || got.Goal.Condition != "the tests pass" || got.Goal.MaxTurns != 4 || got.Goal.State != "met" {
		t.Fatalf("the server's goal: %+v", got.Goal)
	}
	f.waitText("#goal-set", "Change goal")
	f.click("#goal-set")
	if v := f.eval(`document.querySelector("#goal-condition").value`); v != "the tests pass" {
		t.Fatalf("the form to change the goal shows %q", v)
	}
	f.press(kb.Escape)
	f.click("#goal-clear")
	f.waitJS("the goal badge and Clear goal hidden", `document.querySelector("#goal").hidden && document.querySelector("#goal-clear").hidden`)
	f.waitText("#goal-set", "Set goal")
	got.Goal = nil
	f.api("GET", "/api/sessions/"+s.ID+"/goal", nil, &got)
	if got.Goal != nil {
		t.Fatalf("the server still has a goal after Clear goal: %+v", got.Goal)
	}
}
