package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// TestStoppedFormIsWithdrawn (issue 24, point 4): a form whose call ended (Stop) is
// withdrawn: its fields and buttons go while the person was filling it in, it says that
// the call no longer waits for it, and an answer can no longer be sent — neither from the
// page (a press of the button it had, kept from before) nor to the server.
func TestStoppedFormIsWithdrawn(t *testing.T) {
	f := newFixture(t)
	s := f.session("withdraw")
	form := `{"ask":{"type":"form","question":"Details","questions":[{"type":"text","question":"City"},{"type":"confirm","question":"Subscribe"}]}}`
	f.fake.Push(toolCalls([2]string{"ask_it", form}), text("Should not come."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "go\n")
	f.waitText(".ask-form", "Details")
	f.typeInto(".ask-form textarea, .ask-form input[type=text]", "Par")
	// The person's hand on the form's Answer button, as the page had it before the Stop.
	f.eval(`(() => { window.__answer = [...document.querySelectorAll(".ask-form button")].find((b) => b.textContent.trim() === "Answer"); return window.__answer ? "" : "no Answer button"; })()`)

	f.click("#stop")
	f.waitText(".turn-end", "Stopped")
	f.waitJS("the form withdrawn: no field or button left to use",
		`[...document.querySelectorAll(".ask-form button, .ask-form input, .ask-form textarea, .ask-form select")].every((e) => e.disabled || !e.isConnected || !e.checkVisibility())`)
	status := f.eval(`document.querySelector(".ask-form .ask-status")?.textContent || ""`)
	if !strings.Contains(status, "Withdrawn: the call ended") {
		t.Errorf("the withdrawn form says %q: want that the call no longer waits for it", status)
	}

	// A press of the old button sends nothing.
	f.eval(`(() => { window.__answer.disabled = false; window.__answer.click(); return ""; })()`)
	time.Sleep(time.Second)
	for _, r := range f.seen.get() {
		if strings.Contains(r.Path, "/asks/") {
			t.Errorf("an answer to the withdrawn form was sent: %s (%d)", r.Path, r.Status)
		}
	}
	// And the server refuses one.
	var evs struct {
		Events []struct {
			Payload struct {
				Ask struct {
					ID string `json:"id"`
				} `json:"ask"`
			} `json:"payload"`
		} `json:"events"`
	}
	f.api("GET", "/api/sessions/"+s.ID+"/events?types=ask.pending", nil, &evs)
	if len(evs.Events) != 1 {
		t.Fatalf("ask.pending events: %+v", evs.Events)
	}
	if code := f.api("POST", "/api/sessions/"+s.ID+"/asks/"+evs.Events[0].Payload.Ask.ID, map[string]any{"answer": map[string]any{"answers": []any{}}}, nil); code < 400 {
		t.Errorf("the server took an answer to the withdrawn form: %d", code)
	}
}
