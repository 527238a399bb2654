package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/jean2/jean2/provider/providertest"
)

// TestWorkspacesAndSessions: create, rename, switch and delete sessions and workspaces
// through the menu, with the page's dialogs (never the browser's prompt()).
func TestWorkspacesAndSessions(t *testing.T) {
	f := newFixture(t)
	first := f.session("first")
	f.open("#/s/" + first.ID)
	f.waitText(".session-title", "first")

	// A second session from the workspace's + button; the page switches to it.
	f.click(`.workspace button[aria-label^="New session"]`)
	f.waitJS("the new session", `location.hash.startsWith("#/s/") && !location.hash.endsWith(`+jsString(first.ID)+`)`)
	second := strings.TrimPrefix(f.eval(`location.hash`), "#/s/")

	// Rename it from the conversation's header.
	f.click(`.session-head button[aria-label="Rename session"]`)
	f.eval(`(() => { document.querySelector("dialog[open] input").value = ""; return ""; })()`)
	f.typeInto("dialog[open] input", "Renamed here\n")
	f.waitText(".session-title", "Renamed here")
	f.waitText(".sessions a[aria-current=page]", "Renamed here")
	var got apiSession
	f.api("GET", "/api/sessions/"+second, nil, &got)
	if got.Title != "Renamed here" {
		t.Errorf("the server has title %q after the rename", got.Title)
	}

	// Switch by the menu, and back with Alt+↑ / Alt+↓.
	f.clickText(".sessions", "first")
	f.waitText(".session-title", "first")
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierAlt))); err != nil {
		t.Fatal(err)
	}
	f.waitJS("a switch by keyboard", `location.hash !== "#/s/`+first.ID+`"`)

	// Delete the renamed session: a confirmation, then it is gone here and on the server.
	f.click(`.session[data-session-id="` + second + `"] button[aria-label^="Delete session"]`)
	f.waitText("dialog[open]", "will be deleted")
	f.click("dialog[open] button.danger.primary")
	f.waitJS("the session to leave the menu", `document.querySelector('.session[data-session-id="`+second+`"]') === null`)
	if code := f.api("GET", "/api/sessions/"+second, nil, nil); code != 404 {
		t.Errorf("GET the deleted session: status %d, want 404", code)
	}

	// Rename and delete the workspace.
	f.click(`.workspace button[aria-label^="Rename workspace"]`)
	f.eval(`(() => { document.querySelector("dialog[open] input").value = ""; return ""; })()`)
	f.typeInto("dialog[open] input", "Main project\n")
	f.waitText(".ws-name", "Main project")
	f.click(`.workspace button[aria-label^="Delete workspace"]`)
	f.waitText("dialog[open]", "stay as they are")
	f.click("dialog[open] button.danger.primary")
	f.waitText(".sidebar", "No workspace yet")
	var list struct{ Workspaces []any }
	f.api("GET", "/api/workspaces", nil, &list)
	if len(list.Workspaces) != 0 {
		t.Errorf("%d workspaces left on the server", len(list.Workspaces))
	}
}

// TestStop: the Stop button ends a turn whose model is still answering; the turn says it
// was stopped and the page can send again.
func TestStop(t *testing.T) {
	f := newFixture(t)
	s := f.session("stop")
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("Thinking about it").Pause(time.Minute).Text(" never shown").Finish("stop").Done().Reply())
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "take your time\n")
	f.waitText(".message.assistant", "Thinking about it")
	// A reload while the answer streams shows the text once: the page loads the messages
	// and follows the events from there without replaying what it loaded.
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "Thinking about it")
	if n := f.eval(`String(document.querySelector(".message.assistant").textContent.split("Thinking about it").length - 1)`); n != "1" {
		t.Errorf("after a reload mid-stream the text shows %s times", n)
	}
	f.waitJS("the Stop button", `!document.querySelector("#stop").hidden`)
	f.click("#stop")
	f.waitText(".turn-end", "Stopped")
	f.waitJS("Send usable again", `!document.querySelector("#send").disabled && document.querySelector("#stop").hidden`)
	if strings.Contains(f.eval(`document.body.innerText`), "never shown") {
		t.Error("text after the stop reached the page")
	}
}

// TestSessionModel: the session's provider and model chosen on the page are what the next
// turn asks the model server for.
func TestSessionModel(t *testing.T) {
	f := newFixture(t)
	s := f.session("model")
	f.open("#/s/" + s.ID)
	f.clickText(".session-head", "Model")
	f.waitJS("the provider list", `document.querySelectorAll("#session-provider option").length >= 2`)
	name := f.eval(`document.querySelectorAll("#session-provider option")[1].value`)
	f.eval(`(() => { document.querySelector("#session-provider").value = ` + jsString(name) + `; return ""; })()`)
	f.typeInto("#session-model", "other-model\n")
	f.waitText(".session-model", "other-model")
	// session.updated may draw the model before the dialog has had the PATCH's answer and closed.
	f.waitJS("the dialog closed", `document.querySelector("dialog[open]") === null`)

	f.fake.Push(text("ok"))
	f.typeInto("#composer-input", "hi\n")
	f.waitText(".message.assistant", "ok")
	reqs := f.fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the model server")
	}
	var body struct{ Model string }
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil || body.Model != "other-model" {
		t.Errorf("the turn asked for model %q (%v), want other-model", body.Model, err)
	}
}

// TestPhoneAndKeyboard: on a phone-sized screen the menu is a drawer (opened by its button,
// closed by Escape); the page is usable from the keyboard: a skip link first, "/" to the
// message box, Enter sends, a visible focus ring, "?" lists the shortcuts.
func TestPhoneAndKeyboard(t *testing.T) {
	f := newFixture(t)
	s := f.session("phone")
	if err := f.b.Do(10*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		t.Fatal(err)
	}
	f.open("#/s/" + s.ID)
	f.waitJS("the composer", `document.querySelector("#composer-input") !== null`)
	if got := f.eval(`String(document.documentElement.scrollWidth <= window.innerWidth + 1)`); got != "true" {
		t.Errorf("the page scrolls sideways on a phone: scrollWidth %s, width %s", f.eval(`String(document.documentElement.scrollWidth)`), f.eval(`String(window.innerWidth)`))
	}
	f.waitJS("the menu hidden", `getComputedStyle(document.querySelector("#sidebar")).visibility === "hidden"`)
	f.click(".menu-btn")
	f.waitJS("the menu open", `getComputedStyle(document.querySelector("#sidebar")).visibility === "visible"`)
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the menu closed by Escape", `!document.body.classList.contains("menu-open") && document.activeElement === document.querySelector(".menu-btn")`)

	// Keyboard: on a freshly loaded page the first Tab reaches the skip link; "/" goes to
	// the message box; Enter sends.
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the composer", `document.querySelector("#composer-input") !== null`)
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent(kb.Tab)); err != nil {
		t.Fatal(err)
	}
	if got := f.eval(`document.activeElement.className + " " + document.activeElement.tagName`); !strings.Contains(got, "skip-link") {
		t.Fatalf("the first Tab focused %q, want the skip link", got)
	}
	if got := f.eval(`getComputedStyle(document.activeElement).outlineStyle`); got == "none" {
		t.Error("the focused skip link has no visible focus ring")
	}
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	f.waitJS("main focused", `document.activeElement.id === "main"`)
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent("/")); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the message box focused", `document.activeElement.id === "composer-input"`)
	f.fake.Push(text("keyboard works"))
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent("hello\n")); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "keyboard works")

	// "?" opens the shortcut list; Escape closes it.
	f.eval(`(() => { document.activeElement.blur(); return ""; })()`)
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent("?")); err != nil {
		t.Fatal(err)
	}
	f.waitText("dialog[open]", "Stop the running turn")
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the shortcuts closed", `document.querySelector("dialog[open]") === null`)
}

// TestClickTextAfterARedraw: a button redrawn between the moment clickText marks it and the
// click (the settings' provider list after a providers.changed) is found again and clicked;
// before, the click waited 20 s for a mark that no node had any more (TestSettings failed so).
func TestClickTextAfterARedraw(t *testing.T) {
	f := newFixture(t)
	f.open("#/settings")
	f.waitText(".providers", "openai")
	// The first mark is taken off as soon as it is set, as a redraw replacing the marked button
	// with an equal one would.
	f.eval(`(() => { let first = true; new MutationObserver((ms) => { for (const m of ms) if (first && m.target.hasAttribute("data-e2e-target")) { first = false; m.target.removeAttribute("data-e2e-target"); } }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["data-e2e-target"] }); return ""; })()`)
	start := time.Now()
	f.clickText(".settings-view", "Add a provider")
	f.waitText("dialog[open]", "Add a provider")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the click after the redraw took %s", took)
	}
}

// TestClickAfterARedrawBetweenPressAndRelease: a button replaced between the mouse's press and
// its release (the sidebar redraws on every live update) gets no click event at all, and
// chromedp says the click was made; the fixture sees that no click arrived and clicks the
// button that replaced it. Before, the click was lost (TestWorkspaceWarnings timed out on
// the dialog its click on New workspace should have opened).
func TestClickAfterARedrawBetweenPressAndRelease(t *testing.T) {
	f := newFixture(t)
	f.open("#/settings")
	f.waitText(".providers", "openai")
	f.eval(`(() => { window.__log = []; const b = [...document.querySelectorAll(".settings-view button")].find((e) => e.textContent.trim() === "Add a provider"); b.id = "add-prov"; b.onclick = () => window.__log.push("old"); b.addEventListener("mousedown", () => { const n = document.createElement("button"); n.type = "button"; n.id = "add-prov"; n.textContent = "Add a provider"; n.onclick = () => window.__log.push("new"); b.replaceWith(n); }); return ""; })()`)
	f.click("#add-prov")
	if got := f.eval(`window.__log.join()`); got != "new" {
		t.Fatalf("buttons clicked: %q, want the one that replaced the pressed button", got)
	}
}

// TestSettings: a provider added on the page (its key never shown again), the unattended
// settings saved, both as the server keeps them.
func TestSettings(t *testing.T) {
	f := newFixture(t)
	f.open("#/settings")
	f.waitText(".providers", "openai")
	f.clickText(".settings-view", "Add a provider")
	f.typeInto("#prov-name", "local")
	f.eval(`(() => { document.querySelector("#prov-kind").value = "anthropic"; return ""; })()`)
	f.typeInto("#prov-base", "http://127.0.0.1:9/v1")
	f.typeInto("#prov-model", "local-model")
	f.typeInto("#prov-key", "sk-secret-value")
	f.click("dialog[open] button.primary")
	f.waitText(`.providers tr[data-provider="local"]`, "key set")
	f.waitText(`.providers tr[data-provider="local"]`, "local-model")
	if strings.Contains(f.eval(`document.documentElement.outerHTML`), "sk-secret-value") {
		t.Error("the page shows the key after saving it")
	}
	var providers struct {
		Providers []struct {
			Name, Kind, Model string
			HasKey            bool
		}
	}
	f.api("GET", "/api/providers", nil, &providers)
	found := false
	for _, p := range providers.Providers {
		if p.Name == "local" {
			found = p.Kind == "anthropic" && p.Model == "local-model" && p.HasKey
		}
	}
	if !found {
		t.Errorf("the server's providers %+v lack local (anthropic, local-model, with a key)", providers.Providers)
	}
	// Adding a provider did not make it the default: the environment's openai still is
	// (issue 24, point 12).
	var view struct{ Default string }
	f.api("GET", "/api/providers", nil, &view)
	if view.Default != "openai" {
		t.Errorf("after adding local the default is %q, want openai as before", view.Default)
	}
	f.waitText(`.providers tr[data-provider="openai"]`, "default")
	if got := f.eval(`document.querySelector("#default-provider").value`); got != "openai" {
		t.Errorf("the default picker shows %q", got)
	}

	f.eval(`(() => { document.querySelector("#set-auto").value = "medium"; return ""; })()`)
	f.eval(`(() => { document.querySelector("#set-timeout").value = "120"; return ""; })()`)
	f.clickText(".settings-view", "Save settings")
	f.waitText("#notices", "Settings saved")
	var settings struct {
		AutoApprove       string
		AskTimeoutSeconds int
	}
	f.api("GET", "/api/settings", nil, &settings)
	if settings.AutoApprove != "medium" || settings.AskTimeoutSeconds != 120 {
		t.Errorf("settings on the server: %+v, want medium and 120", settings)
	}
}
