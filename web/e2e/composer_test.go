package e2e_test

import (
	"strings"
	"testing"
)

// The message box is emptied as a message is sent: words typed while the send is on its
// way are the next message, and an Enter sends them alone (before, the box kept the sent
// text, the new words were appended to it, and the Enter sent both again).
func TestComposerClearedOnSend(t *testing.T) {
	f := newFixture(t)
	s := f.session("composer")
	f.fake.Push(text("First answer."), text("Second answer."))
	f.open("#/s/" + s.ID)
	release := f.seen.hold(t, "/api/sessions/"+s.ID+"/queue")
	f.typeInto("#composer-input", "first\n")
	f.waitGo("the send to reach the server", func() bool { return f.seen.hasArrived("/api/sessions/" + s.ID + "/queue") })
	f.typeInto("#composer-input", "second")
	release()
	f.waitText(".message.assistant", "First answer.")
	if got := f.eval(`document.querySelector("#composer-input").value`); got != "second" {
		t.Fatalf("the message box holds %q after the send, want what was typed since: second", got)
	}
	f.typeInto("#composer-input", "\n")
	f.waitText(".message.assistant", "Second answer.")
	users := f.eval(`[...document.querySelectorAll(".message.user")].map((e) => e.querySelector(".md, p")?.textContent.trim() || e.textContent.trim()).join(" | ")`)
	if strings.Contains(users, "firstsecond") || strings.Contains(users, "first second") || strings.Count(users, "first") != 1 {
		t.Errorf("the person's messages read %q, want first, then second", users)
	}
}

// Sending from far up the conversation takes the view to the bottom, where the answer comes.
func TestComposerSendJumpsToTheBottom(t *testing.T) {
	f := newFixture(t)
	s := f.session("scroll")
	f.fake.Push(text(strings.Repeat("A long answer line.\n\n", 150)), text("The latest answer."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "tell me a lot\n")
	f.waitText(".message.assistant", "A long answer line.")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	f.eval(`(() => { window.scrollTo(0, 0); return ""; })()`)
	f.waitJS("the view at the top, not following", `document.scrollingElement.scrollTop === 0 && !document.querySelector(".jump-latest").hidden`)
	f.eval(`(() => { document.querySelector("#composer-input").value = "and now?"; document.querySelector("#composer-input").form.requestSubmit(); return ""; })()`)
	f.waitText(".message.assistant", "The latest answer.")
	f.waitJS("the view at the bottom", `(() => { const sc = document.scrollingElement; return sc.scrollHeight - sc.scrollTop - sc.clientHeight < 120; })()`)
}

// The message box has the focus after the person opens a session in the page: a new one
// (the + beside a workspace) and another one chosen in the list.
func TestComposerFocusedWhenASessionOpens(t *testing.T) {
	f := newFixture(t)
	a := f.session("alpha")
	b := f.session("beta")
	f.open("#/s/" + a.ID)
	f.click(`#sidebar a[href="#/s/` + b.ID + `"]`)
	f.waitJS("beta opened with the message box focused", `location.hash === "#/s/`+b.ID+`" && document.querySelector(".session-view:not([aria-busy])") !== null && document.activeElement?.id === "composer-input"`)
	f.click(`#sidebar button[aria-label^="New session in"]`)
	f.waitJS("a new session opened with the message box focused", `location.hash !== "#/s/`+b.ID+`" && location.hash.startsWith("#/s/") && document.querySelector(".session-view:not([aria-busy])") !== null && document.activeElement?.id === "composer-input"`)
}
