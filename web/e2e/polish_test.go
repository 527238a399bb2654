package e2e_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/provider/providertest"
)

// TestLiveStatusAndQuestions: a question waiting in another session shows in the session
// list and in the tab's title (and as a browser notification when the page is hidden);
// opening it moves the focus to the question and announces it; a high-risk permission's
// default button is "Allow once"; an answered question stays readable in its card.
func TestLiveStatusAndQuestions(t *testing.T) {
	f := newFixture(t)
	a := f.session("first")
	b := f.session("second")
	confirm := `{"ask":{"type":"confirm","question":"Ship the release?"}}`
	permission := `{"ask":{"type":"permission","question":"May I delete the cache?","risk":"high","resource":"cache","duration":"workspace"}}`
	f.fake.Push(toolCalls([2]string{"ask_it", confirm}), toolCalls([2]string{"ask_it", permission}), text("Shipped."))
	f.open("#/s/" + a.ID)
	f.waitJS("the composer", `document.querySelector("#composer-input") !== null`)
	// A hidden page whose person allowed notifications: record what would be shown.
	f.eval(`(() => {
  window.__notes = [];
  window.Notification = class { constructor(title, o) { window.__notes.push(title + ": " + (o && o.body)); } static get permission() { return "granted"; } static requestPermission() { return Promise.resolve("granted"); } };
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
  return ""; })()`)
	// Another client (here a socket the page opens) is attached to the other session, so
	// its questions wait for a person rather than for the unattended policy.
	f.eval(`(() => { window.__other = new WebSocket(location.origin.replace("http", "ws") + "/api/sessions/` + b.ID + `/ws"); return ""; })()`)
	f.waitJS("the other client attached", `window.__other.readyState === 1`)
	if code := f.api("POST", "/api/sessions/"+b.ID+"/turns", map[string]any{"text": "release"}, nil); code != 202 {
		t.Fatalf("start a turn in the other session: %d", code)
	}
	sel := fmt.Sprintf(`.session[data-session-id="%s"]`, b.ID)
	f.waitJS("the other session marked as waiting", `document.querySelector('`+sel+` .session-status.waiting') !== null`)
	f.waitJS("the count in the title", `document.title.startsWith("(1) ")`)

	// Open it: the question takes the focus and is announced; a notification was shown.
	f.click(sel + " a")
	f.waitText(".tool-card .ask-confirm", "Ship the release?")
	f.waitJS("the focus on the question", `document.activeElement && document.activeElement.closest(".ask-confirm") !== null`)
	f.waitJS("the question announced", `[...document.querySelectorAll('[role="alert"]')].some((e) => e.textContent.includes("Ship the release?"))`)
	if got := f.eval(`(window.__notes || []).join(" | ")`); !strings.Contains(got, "Ship the release?") {
		t.Errorf("notifications shown: %q, want one for the question", got)
	}
	f.clickText(".tool-card .ask-confirm", "Yes")
	f.waitText(".tool-card .ask-confirm.answered", "Ship the release?")
	f.waitText(".tool-card .ask-confirm.answered", "Answered: yes")

	// High risk: the default (primary) button is the narrowest grant, whatever the tool suggests.
	f.waitText("dialog[open] .ask-permission", "May I delete the cache?")
	if got := f.eval(`document.querySelector("dialog[open] button.primary").dataset.duration`); got != "once" {
		t.Errorf("the default button of a high-risk permission is %q, want once", got)
	}
	f.answerDialog("once")
	f.waitText(".message.assistant", "Shipped.")
	f.waitText(".tool-card .ask-permission.answered", "allowed (once)")
	f.waitJS("the title without a count", `!document.title.startsWith("(")`)
	f.waitJS("no session marked as waiting", `document.querySelector(".session-status.waiting") === null`)

	// Reloaded, the page shows both questions answered in their cards.
	if err := f.b.Do(30*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "Shipped.")
	f.waitText(".tool-card .ask-confirm.answered", "Ship the release?")
	f.waitText(".tool-card .ask-confirm.answered", "Answered: yes")
	f.waitText(".tool-card .ask-permission.answered", "May I delete the cache?")
	f.waitText(".tool-card .ask-permission.answered", "allowed (once)")
	if n := f.eval(`String(document.querySelectorAll(".tool-card .ask button").length)`); n != "0" {
		t.Errorf("an answered question offers %s buttons after the page was opened again", n)
	}
}

// TestStopAndChanges: "Stopping…" goes when the turn ends and a stopped call shows as
// stopped, not failed; "Changed N files" counts the files its dialog lists and is not shown
// for a turn that changed none.
func TestStopAndChanges(t *testing.T) {
	f := newFixture(t)
	s := f.session("stop")
	f.fake.Push(toolCalls([2]string{"slow_note", `{"path":"stopped.txt","text":"x","waitMs":60000}`}))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "take long\n")
	f.waitText(".tool-card", "running")
	f.click("#stop")
	f.waitText(".turn-end", "Stopped")
	f.waitJS("the stopped call", `document.querySelector(".tool-card.status-stopped") !== null && document.querySelector(".tool-card.status-error") === null`)
	f.waitJS("Stopping… cleared", `!document.querySelector(".run-status").textContent.includes("Stopping")`)
	if got := f.eval(`document.querySelector(".tool-card").textContent`); strings.Contains(got, "failed") {
		t.Errorf("the stopped call reads as failed: %q", got)
	}

	f.fake.Push(text("Nothing to change."))
	f.typeInto("#composer-input", "just talk\n")
	f.waitText(".message.assistant", "Nothing to change.")
	f.fake.Push(toolCalls([2]string{"write_note", `{"path":"a.txt","text":"a"}`}, [2]string{"write_note", `{"path":"b.txt","text":"b"}`}), text("Two written."))
	f.typeInto("#composer-input", "write two\n")
	f.waitText(".message.assistant", "Two written.")
	f.waitText(".changed-files", "Changed 2 files")
	f.waitJS("only the turn that changed files says so", `document.querySelectorAll(".changed-files").length === 2`)
	f.click(`.turn:last-child .changed-files`)
	f.waitJS("the dialog lists as many files", `document.querySelectorAll("dialog[open] .file-change").length === 2`)
}

// TestFollowTheBottom: a session opens at its latest message; scrolled up, "Jump to latest"
// shows and brings the bottom back; while the person follows the bottom, a big card that
// arrives keeps it in view.
func TestFollowTheBottom(t *testing.T) {
	f := newFixture(t)
	s := f.session("follow")
	long := strings.Repeat("A line of the long answer.\n\n", 150)
	f.fake.Push(text(long, "End of the long answer."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "talk a lot\n")
	f.waitText(".message.assistant", "End of the long answer.")
	atBottom := `(() => { const sc = document.scrollingElement; return sc.scrollHeight - sc.scrollTop - sc.clientHeight < 130; })()`
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "End of the long answer.")
	f.waitJS("opened at the latest message", atBottom+` && !document.querySelector(".session-view").hasAttribute("aria-busy")`)
	f.eval(`(() => { document.scrollingElement.scrollTop = 0; window.dispatchEvent(new Event("scroll")); return ""; })()`)
	f.waitJS("Jump to latest shown", `!document.querySelector(".jump-latest").hidden`)
	// The page's own scroll to the bottom, then the person's scroll up before the event of
	// the first came (a frame later; longer on a loaded machine): the page stops following
	// all the same, measuring the scroll up from where it put the view itself.
	f.eval(`(() => { document.querySelector(".jump-latest").click(); document.scrollingElement.scrollTop = 0; window.dispatchEvent(new Event("scroll")); return ""; })()`)
	f.waitJS("Jump to latest shown again", `!document.querySelector(".jump-latest").hidden && document.scrollingElement.scrollTop === 0`)
	// Clicked by the page's own click(): a late redraw that scrolls the page meanwhile must
	// not leave the test waiting for the button to be laid out where the mouse would go.
	f.eval(`(() => { document.querySelector(".jump-latest").click(); return ""; })()`)
	f.waitJS("back at the bottom", atBottom+` && document.querySelector(".jump-latest").hidden`)

	// A big card arrives while the person follows the bottom.
	f.fake.Push(toolCalls([2]string{"show", `{"type":"code"}`}, [2]string{"show", `{"type":"table"}`}, [2]string{"show", `{"type":"diff"}`}),
		providertest.OpenAIText("test-model", "Cards drawn."))
	f.typeInto("#composer-input", "draw\n")
	f.waitText(".message.assistant", "Cards drawn.")
	f.waitJS("still at the bottom after the cards", atBottom)
}

// TestPhoneTablesScrollInTheirBox: on a phone, a wide structured-response table and the
// Settings tables scroll in their own box; the page never scrolls sideways.
func TestPhoneTablesScrollInTheirBox(t *testing.T) {
	f := newFixture(t)
	s := f.session("phone tables")
	if err := f.b.Do(10*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		t.Fatal(err)
	}
	f.fake.Push(toolCalls([2]string{"show", `{"type":"wide-structured"}`}), text("Drawn."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "wide\n")
	f.waitText(".message.assistant", "Drawn.")
	f.waitJS("the structured table", `document.querySelector(".viz-structured-response table.data") !== null`)
	noSideways := `document.documentElement.scrollWidth <= window.innerWidth + 1`
	if got := f.eval(`String(` + noSideways + `)`); got != "true" {
		t.Errorf("the page scrolls sideways with a wide structured-response: scrollWidth %s, width %s", f.eval(`String(document.documentElement.scrollWidth)`), f.eval(`String(window.innerWidth)`))
	}
	if got := f.eval(`(() => { const w = document.querySelector(".viz-structured-response .table-wrap"); return String(w.scrollWidth > w.clientWidth && getComputedStyle(w).overflowX === "auto"); })()`); got != "true" {
		t.Errorf("the wide table does not scroll in its own box")
	}
	f.open("#/settings")
	f.waitText(".providers", "openai")
	if got := f.eval(`String(` + noSideways + `)`); got != "true" {
		t.Errorf("Settings scrolls sideways on a phone: scrollWidth %s", f.eval(`String(document.documentElement.scrollWidth)`))
	}
}

// TestToolsPageFailedReload: a changed tool that no longer loads is said on the tools page
// at once (the server sends tools.changed with failed), and a run whose visualization was
// refused says why.
func TestToolsPageFailedReload(t *testing.T) {
	f := newFixture(t)
	f.session("tools") // a workspace to run in
	f.writeTool(filepath.Join(f.home, "tools"), "badviz", `export const definition = { name: 'bad_viz', description: 'Returns a bad visualization.', inputSchema: { type: 'object', properties: {} } };
export async function execute() { return { success: true, result: 'ok', visualization: { type: 'table', columns: 'not a list' } }; }
`)
	f.open("#/tools")
	f.waitJS("bad_viz listed", `document.querySelector('.tool[data-tool="bad_viz"]') !== null`)
	f.click(`.tool[data-tool="bad_viz"] details.run > summary`)
	f.waitJS("the run form", `document.querySelector('.tool[data-tool="bad_viz"] .run-box form') !== null`)
	f.clickText(`.tool[data-tool="bad_viz"] .run-box`, "Run")
	f.waitText(`.tool[data-tool="bad_viz"] .outcome`, "visualization was refused")

	// greet changes into something that does not load.
	f.writeTool(filepath.Join(f.home, "tools"), "greet", "export const definition = {;\n")
	f.waitText(".tools-view [role=status]", "greet failed to load")
	f.waitJS("greet's card says why", `[...document.querySelectorAll('.tool[data-tool="greet"]')].some((e) => e.textContent.includes("failed to load"))`)
}
