package e2e_test

import (
	"fmt"
	"testing"
	"time"
)

// Live updates must not pull the page from under the person (nor under a test that acts as
// one). These races showed on a loaded machine only, as flaky tests; each test here makes
// its race happen every time.

// TestSessionSwitchedWhileLoading: a session view replaced while it still loads (the person
// opens another session, or the app routes twice as it starts) stops there: it never
// subscribes to its session's events. Before, it went on loading off the page and kept a
// socket open; its questions opened a second dialog over the new view (one Escape then
// seemed not to close "the" dialog) and its updates scrolled the page.
func TestSessionSwitchedWhileLoading(t *testing.T) {
	f := newFixture(t)
	a := f.session("first")
	b := f.session("second")
	messagesA := "/api/sessions/" + a.ID + "/messages"
	release := f.seen.hold(t, messagesA)
	f.open("")
	f.eval(`(() => { location.hash = "#/s/` + a.ID + `"; return ""; })()`)
	f.waitGo("the first session's messages requested", func() bool { return f.seen.hasArrived(messagesA) })

	f.eval(`(() => { location.hash = "#/s/` + b.ID + `"; return ""; })()`)
	f.waitText(".session-title", "second")
	f.waitGo("the second session's events followed", func() bool { return f.seen.hasArrived("/api/sessions/" + b.ID + "/ws") })

	// The first view's load answers now, off the page.
	release()
	f.waitJS("the held answer delivered to the page", `performance.getEntriesByType("resource").some((e) => e.name.includes(`+jsString(messagesA)+`) && e.responseEnd > 0)`)
	// A view that went on would next ask for the session's answered questions, then open its
	// socket, within milliseconds; nothing may come in the next two seconds.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range []string{"/api/sessions/" + a.ID + "/events", "/api/sessions/" + a.ID + "/ws"} {
			if f.seen.hasArrived(p) {
				t.Fatalf("the replaced view of session %s went on loading: the server got %s", a.ID, p)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := f.eval(`document.querySelector(".session-title").textContent`); got != "second" {
		t.Errorf("the page shows %q, want the second session", got)
	}
}

// TestSidebarRedrawKeepsTheFocus: the session list is redrawn on every live status; someone
// typing in the search box keeps typing there, and a focused session link stays focused.
// Before, the redraw took the search box out of the page for a moment: it lost the focus
// and the keys typed next went nowhere (TestSearchListAndUsage failed so under load).
func TestSidebarRedrawKeepsTheFocus(t *testing.T) {
	f := newFixture(t)
	a := f.session("typing here")
	b := f.session("live elsewhere")
	confirm := `{"ask":{"type":"confirm","question":"Go on?"}}`
	f.fake.Push(toolCalls([2]string{"ask_it", confirm}), text("Went on."))
	f.open("#/s/" + a.ID)
	f.waitJS("the search box", `document.querySelector("#session-search") !== null`)
	f.typeInto("#session-search", "fl")
	// Another client attached to the other session, so that its question waits for a person.
	f.eval(`(() => { window.__other = new WebSocket(location.origin.replace("http", "ws") + "/api/sessions/` + b.ID + `/ws"); return ""; })()`)
	f.waitJS("the other client attached", `window.__other.readyState === 1`)
	if code := f.api("POST", "/api/sessions/"+b.ID+"/turns", map[string]any{"text": "go"}, nil); code != 202 {
		t.Fatalf("start a turn in the other session: %d", code)
	}
	other := fmt.Sprintf(`.session[data-session-id="%s"]`, b.ID)
	f.waitJS("the list redrawn with the other session waiting", `document.querySelector('`+other+` .session-status.waiting') !== null`)
	if got := f.eval(`document.activeElement ? document.activeElement.id || document.activeElement.tagName : ""`); got != "session-search" {
		t.Fatalf("after the list was redrawn the focus is on %q, not the search box", got)
	}
	f.typeInto("#session-search", "ux")
	if got := f.eval(`document.querySelector("#session-search").value`); got != "flux" {
		t.Errorf("the search box holds %q, want flux", got)
	}

	// A session link focused from the keyboard stays focused through the next redraw.
	f.eval(`(() => { document.querySelector('` + other + ` a').focus(); return ""; })()`)
	var pending struct {
		Asks []struct{ ID string } `json:"asks"`
	}
	f.api("GET", "/api/sessions/"+b.ID+"/asks", nil, &pending)
	if len(pending.Asks) != 1 {
		t.Fatalf("the other session has %d asks pending, want 1", len(pending.Asks))
	}
	if code := f.api("POST", "/api/sessions/"+b.ID+"/asks/"+pending.Asks[0].ID, map[string]any{"answer": true}, nil); code != 200 {
		t.Fatalf("answer the other session's question: %d", code)
	}
	f.waitJS("the list redrawn without the mark", `document.querySelector('`+other+` .session-status.waiting') === null`)
	if got := f.eval(`document.activeElement ? document.activeElement.getAttribute("href") || document.activeElement.tagName : ""`); got != "#/s/"+b.ID {
		t.Errorf("after the redraw the focus is on %q, want the link #/s/%s", got, b.ID)
	}
}
