package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestCompactionAndInstructions: the conversation names the AGENTS.md in effect; the
// Compact button summarizes the older messages, and the compaction is drawn where it
// happened ("Context compacted: N messages summarized", the summary behind a disclosure),
// again after a reload; the next request carries the summary instead of the first message.
func TestCompactionAndInstructions(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.ws, "AGENTS.md"), []byte("Use tabs."), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.session("long one")
	f.open("#/s/" + s.ID)
	f.waitText(".instructions-bar", "project/AGENTS.md")

	f.fake.Push(text("First answer."))
	f.typeInto("#composer-input", "FIRST-QUESTION about the code\n")
	f.waitText(".message.assistant", "First answer.")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	f.fake.Push(text("Second answer."))
	f.typeInto("#composer-input", "second question\n")
	f.waitText(".message.assistant", "Second answer.")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running") && !document.querySelector("#compact").disabled`)

	f.fake.Push(text("SUMMARY-WEB: a question about the code was answered."))
	f.click("#compact")
	f.waitText(".compaction", "Context compacted: 2 messages summarized")
	f.waitText(".compaction details", "SUMMARY-WEB")

	f.fake.Push(text("Third answer."))
	f.typeInto("#composer-input", "third question\n")
	f.waitText(".message.assistant", "Third answer.")
	reqs := f.fake.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "SUMMARY-WEB") || strings.Contains(last, "FIRST-QUESTION") || !strings.Contains(last, "Use tabs.") {
		t.Fatalf("the request after compacting: %.2000s", last)
	}

	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText(".compaction", "Context compacted: 2 messages summarized")
	// In order: the compaction after the first answers and before the third question.
	order := f.eval(`(() => { const all = [...document.querySelectorAll(".message.assistant, .compaction")].map((e) => e.classList.contains("compaction") ? "C" : e.textContent.includes("Third") ? "3" : "a"); return all.join(""); })()`)
	if order != "aaC3" {
		t.Fatalf("order on the page %q, want aaC3", order)
	}
}

// TestSystemPromptInSettings: Settings shows the default system prompt as the box's
// placeholder; a prompt saved there is what the next turn sends; "Use the default" brings
// the default back.
func TestSystemPromptInSettings(t *testing.T) {
	f := newFixture(t)
	f.open("#/settings")
	f.waitJS("the system prompt box", `document.querySelector("#set-system-prompt")?.placeholder.includes("read-file before you change it")`)
	f.typeInto("#set-system-prompt", "CUSTOM-WEB-PROMPT: answer like a pirate.")
	f.click("#save-system-prompt")
	f.waitText("#system-prompt-status", "Your own prompt is in effect.")

	s := f.session("prompted")
	f.open("#/s/" + s.ID)
	f.fake.Push(text("Arr."))
	f.typeInto("#composer-input", "hello\n")
	f.waitText(".message.assistant", "Arr.")
	reqs := f.fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "CUSTOM-WEB-PROMPT") || strings.Contains(body, "read-file before you change it") {
		t.Fatalf("the request: %.1500s", body)
	}

	f.open("#/settings")
	f.waitText("#system-prompt-status", "Your own prompt is in effect.")
	f.click("#reset-system-prompt")
	f.waitText("#system-prompt-status", "The default prompt is in effect")
	var st struct{ SystemPrompt string }
	f.api("GET", "/api/settings", nil, &st)
	if st.SystemPrompt != "" {
		t.Fatalf("settings after reset: %+v", st)
	}
}

// TestSearchListAndUsage: the menu lists a session with its date and the start of the
// last message; the search box finds it by a word of the answer, the word marked; the
// conversation's head shows the session's tokens, and its cost once Settings has prices.
func TestSearchListAndUsage(t *testing.T) {
	f := newFixture(t)
	s := f.session("capacitor work")
	f.open("#/s/" + s.ID)
	f.fake.Push(text("The flux capacitor is charged."))
	f.typeInto("#composer-input", "please charge the capacitor\n")
	f.waitText(".message.assistant", "flux capacitor")
	f.waitText("#session-usage", "10 in / 5 out tokens")
	f.waitText(`.session[data-session-id="`+s.ID+`"] .session-meta`, "please charge the capacitor")

	f.typeInto("#session-search", "flux")
	f.waitText("#search-results .search-hit a", "capacitor work")
	f.waitText("#search-results mark", "flux")
	f.typeInto("#session-search", "zzz")
	f.waitText("#search-results", "No session holds")

	f.open("#/settings")
	f.waitJS("the prices box", `document.querySelector("#set-prices") !== null`)
	f.typeInto("#set-prices", "test-model 1000 2000")
	f.click("#save-prices")
	f.waitJS("the prices saved", `document.body.textContent.includes("Prices saved.")`)
	f.open("#/s/" + s.ID)
	// 10 in and 5 out at 1000 and 2000 per million: $0.0200.
	f.waitText("#session-usage", "$0.0200")
	// A turn's own tokens and cost under it.
	f.fake.Push(text("Again."))
	f.typeInto("#composer-input", "once more\n")
	f.waitText(".turn-usage", "This turn: 10 in / 5 out tokens · $0.0200")
	f.waitText("#session-usage", "20 in / 10 out tokens · $0.0400")
}

// TestSessionNamedInTheMenu: with autoTitle on, a new session is named by the model after
// its first turn, and the page's head and menu show the name without a reload.
func TestSessionNamedInTheMenu(t *testing.T) {
	f := newFixture(t)
	f.api("PATCH", "/api/settings", map[string]any{"autoTitle": true}, nil)
	f.open("")
	f.click("#new-workspace")
	f.typeInto("#ws-path", f.ws)
	f.click("dialog form button.primary")
	f.waitJS("a new session's message box", `location.hash.startsWith("#/s/") && document.querySelector("#composer-input") !== null`)
	f.fake.Push(text("Here is the plan."), text("Plan the database migration"))
	f.typeInto("#composer-input", "help me migrate the database\n")
	f.waitText(".message.assistant", "Here is the plan.")
	f.waitText(".session-title", "Plan the database migration")
	f.waitText(".sidebar .session a", "Plan the database migration")
}

// TestProviderSetupFromWelcome: with no provider, the welcome page leads to Settings; a
// message sent meanwhile is refused with a link to Settings; the provider dialog refuses to
// save without a default model, tests the connection and offers the provider's models;
// saved, the session's model picker offers them too and the turn answers.
func TestProviderSetupFromWelcome(t *testing.T) {
	f := newFixtureEnv(t, map[string]string{})
	f.fake.Key = "sk-e2e-key"
	f.fake.ModelList = `{"data":[{"id":"test-model"},{"id":"bigger-model","context_length":64000}]}`
	s := f.session("first")
	f.open("")
	f.waitText(".provider-notice", "Connect a model first")

	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "hello\n")
	f.waitText(".composer .error", "no LLM provider is configured")
	f.waitJS("the link to Settings", `document.querySelector(".composer .error a[href='#/settings']") !== null`)
	f.click(".composer .error a.settings-link")
	f.waitJS("Settings", `location.hash === "#/settings"`)

	f.clickText(".settings-view", "Add a provider")
	f.typeInto("#prov-name", "local")
	f.typeInto("#prov-base", f.fake.BaseURL())
	f.typeInto("#prov-key", "sk-wrong")
	f.click("#prov-test")
	f.waitText("#prov-test-status", "Could not connect")
	f.eval(`(() => { document.querySelector("#prov-key").value = ""; return ""; })()`)
	f.typeInto("#prov-key", f.fake.Key)
	f.click("#prov-test")
	f.waitText("#prov-test-status", "Connected: 2 models listed.")
	f.waitJS("the models offered", `[...document.querySelectorAll("#prov-model-list option")].map((o) => o.value).join() === "bigger-model,test-model"`)
	f.click("dialog form button.primary")
	f.waitText("dialog .error", "Give the provider a default model")
	f.typeInto("#prov-model", "test-model")
	f.typeInto("#prov-window", "8000")
	f.click("dialog form button.primary")
	f.waitJS("the provider saved", `document.querySelector("dialog[open]") === null && document.querySelector('tr[data-provider="local"]') !== null`)
	var pv struct {
		Providers []struct {
			Name          string
			ContextWindow int
		}
	}
	f.api("GET", "/api/providers", nil, &pv)
	if len(pv.Providers) != 1 || pv.Providers[0].ContextWindow != 8000 {
		t.Fatalf("providers %+v", pv)
	}
	// The session names' model, saved from Settings.
	f.typeInto("#set-titlemodel", "cheap-model")
	f.click("#save-titles")
	f.waitJS("saved", `document.body.textContent.includes("Saved.")`)
	var st struct{ TitleModel string }
	f.api("GET", "/api/settings", nil, &st)
	if st.TitleModel != "cheap-model" {
		t.Fatalf("settings %+v", st)
	}

	f.open("#/s/" + s.ID)
	f.clickText(".session-head", "Model")
	f.waitJS("the session's model list", `[...document.querySelectorAll("#session-model-list option")].length === 2`)
	f.waitText("#session-model-status", "2 models listed by local")
	f.eval(`(() => { document.querySelector("dialog[open] .buttons button:not(.primary)").click(); return ""; })()`)
	// The dialog is gone, and the focus back on the Model button, before the composer is typed
	// into: an Enter that reached that button would open the dialog again.
	f.waitJS("the dialog closed", `document.querySelector("dialog") === null`)
	// Focus moved on purpose between close() and its close event (a task later) is not taken
	// back to the button that opened the dialog.
	f.clickText(".session-head", "Model")
	f.waitText("#session-model-status", "2 models listed by local")
	f.eval(`(() => { document.querySelector("dialog[open] .buttons button:not(.primary)").click(); document.querySelector("#composer-input").focus(); return ""; })()`)
	f.waitJS("the dialog closed again", `document.querySelector("dialog") === null`)
	if got := f.eval(`new Promise((ok) => setTimeout(() => ok(document.activeElement?.id || document.activeElement?.tagName || ""), 50))`); got != "composer-input" {
		t.Fatalf("after the dialog closed the focus is on %q, not the message box the page moved it to", got)
	}
	f.fake.Push(text("Connected answer."))
	f.typeInto("#composer-input", "hello again\n")
	f.waitText(".message.assistant", "Connected answer.")
}
