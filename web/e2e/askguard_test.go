package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// curlAsk is the ask of the report: a network permission whose tool suggests the session.
const curlAsk = `{"ask":{"type":"permission","question":"May curl reach example.com?","risk":"medium","resource":"network:example.com","duration":"session"}}`

// press sends keys to whatever has the focus, as a person's keyboard does.
func (f *fixture) press(keys ...string) {
	f.t.Helper()
	for _, k := range keys {
		if err := f.b.Do(10*time.Second, chromedp.KeyEvent(k)); err != nil {
			f.t.Fatalf("press %q: %v", k, err)
		}
	}
}

// answerDialog clicks the open permission dialog's button for duration ("once", "session",
// "workspace", "deny") once the dialog listens (it ignores clicks as it appears).
func (f *fixture) answerDialog(duration string) {
	f.t.Helper()
	f.waitJS("the dialog to listen", `document.querySelector("dialog[open].ready") !== null`)
	f.click(`dialog[open] button[data-duration="` + duration + `"]`)
}

// askStillPending checks, after a pause long enough for an answer to have come back, that
// the permission ask was not answered.
func (f *fixture) askStillPending(why string) {
	f.t.Helper()
	time.Sleep(time.Second)
	if got := f.eval(`String(document.querySelectorAll(".ask-permission.answered").length)`); got != "0" {
		f.t.Fatalf("%s answered the permission ask: %s", why, f.eval(`[...document.querySelectorAll(".ask-permission .ask-status")].map((e) => e.textContent).join(" | ")`))
	}
}

// A permission dialog that appears while the person types in the message box takes none of
// their keys: the space and the words go on into the message box, which keeps the focus,
// and the ask waits (before, the dialog took the focus on "Allow for this session" and the
// space of "now please" granted curl for the session).
func TestAskNotAnsweredByTypingInTheMessageBox(t *testing.T) {
	f := newFixture(t)
	s := f.session("typing")
	// The Enter sends what was typed, queued for after this turn: its answer is the last.
	f.fake.Push(toolCalls([2]string{"ask_it", curlAsk}), text("Fetched."), text("Heard you."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "fetch it\n")
	f.waitJS("the permission dialog", `document.querySelector("dialog[open] .ask-permission") !== null`)
	f.press(" ", "n", "o", "w", kb.Enter)
	f.askStillPending("typing in the message box")
	if got := f.eval(`document.activeElement?.id || document.activeElement?.outerHTML.slice(0, 200) || ""`); got != "composer-input" {
		t.Errorf("the focus went to %q, want the message box", got)
	}
	f.shot("ask-beside-composer")
	// The person then answers with a click, and the call goes on.
	f.answerDialog("once")
	f.waitText(".tool-card .ask-permission.answered", "allowed (once)")
	f.waitText(".message.user", "now")
	f.waitText(".message.assistant", "Heard you.")
}

// A permission dialog that opens as a modal (nobody was typing) rests its focus on itself,
// not on a button, and for a moment takes no key: an Enter or a space pressed as it
// appears answers nothing. Its default is the narrowest grant, whatever the tool suggests.
func TestAskDialogIgnoresKeysAsItAppears(t *testing.T) {
	f := newFixture(t)
	s := f.session("modal")
	f.fake.Push(toolCalls([2]string{"ask_it", curlAsk}), text("Fetched."))
	f.open("#/s/" + s.ID)
	f.eval(`(() => { document.activeElement?.blur(); return ""; })()`)
	if code := f.api("POST", "/api/sessions/"+s.ID+"/turns", map[string]any{"text": "fetch it"}, nil); code != 202 {
		t.Fatalf("send: %d", code)
	}
	f.waitJS("the permission dialog", `document.querySelector("dialog[open] .ask-permission") !== null`)
	f.press(kb.Enter, " ")
	f.askStillPending("Enter and space as the dialog appeared")
	// Later keys find the focus on the dialog itself: they answer nothing either.
	f.waitJS("the dialog to listen", `document.querySelector("dialog[open].ready") !== null`)
	f.press(kb.Enter, " ")
	f.askStillPending("Enter and space on the opened dialog")
	if got := f.eval(`document.activeElement?.dataset?.duration || document.activeElement?.tagName || ""`); got != "DIALOG" {
		t.Errorf("the dialog's focus rests on %q, want the dialog itself", got)
	}
	if got := f.eval(`document.querySelector("dialog[open] button.primary")?.dataset.duration || ""`); got != "once" {
		t.Errorf("the default grant is %q, want once", got)
	}
	f.shot("ask-modal")
	f.click(`dialog[open] button[data-duration="once"]`)
	f.waitText(".tool-card .ask-permission.answered", "allowed (once)")
	f.waitText(".message.assistant", "Fetched.")
}
