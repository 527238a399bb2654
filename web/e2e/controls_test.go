package e2e_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConversationControls drives the controls in Chromium: a message sent while a turn
// runs is queued (shown under the composer) and goes when the turn ends; editing the first
// message with "Restore to here" cuts the conversation back, removes the file the cut turn
// wrote and answers the new text; Regenerate answers again; Fork opens a new session with
// the conversation up to the message.
func TestConversationControls(t *testing.T) {
	f := newFixture(t)
	s := f.session("controls")
	note := filepath.Join(f.ws, "controls-note.txt")
	// The turn runs until the test has seen the queued message (the gate file): a turn of a
	// fixed length could end, on a slow machine, before the second message was typed or
	// before the queue was seen, and the test would fail without anything being wrong.
	f.fake.Push(
		toolCalls([2]string{"slow_note", `{"path":"controls-note.txt","text":"hello","untilPath":"controls-gate"}`}),
		text("Wrote it."),
		text("Queued answer."),
	)
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "write a note\n")
	f.waitText("#send", "Queue")
	f.typeInto("#composer-input", "and then this\n")
	f.waitText(".queue .queued", "and then this")
	if err := os.WriteFile(filepath.Join(f.ws, "controls-gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "Queued answer.")
	f.waitJS("the queue emptied", `document.querySelector(".queue").hidden`)
	if _, err := os.Stat(note); err != nil {
		t.Fatalf("the note was not written: %v", err)
	}

	// Edit the first message, restoring the files.
	f.fake.Push(text("Edited answer."))
	f.click(`.message.user .edit-msg`)
	f.waitJS("the edit dialog", `document.querySelector("dialog[open] #edit-text") !== null`)
	f.eval(`(() => { const t = document.querySelector("dialog[open] #edit-text"); t.value = "do not write"; return ""; })()`)
	f.click(`dialog[open] #edit-restore`)
	f.clickText("dialog[open]", "Send again")
	f.waitText(".message.assistant", "Edited answer.")
	f.waitJS("the cut messages gone", `![...document.querySelectorAll(".message")].some((e) => e.textContent.includes("Queued answer.") || e.textContent.includes("write a note"))`)
	if _, err := os.Stat(note); !os.IsNotExist(err) {
		t.Fatalf("the note is still there after Restore to here: %v", err)
	}

	f.fake.Push(text("Regenerated answer."))
	f.click(`.message.assistant .regenerate`)
	f.waitText(".message.assistant", "Regenerated answer.")
	f.waitJS("one answer", `document.querySelectorAll(".message.assistant").length === 1`)

	f.click(`.message.user .fork-msg`)
	f.waitJS("the fork opened", `location.hash !== "#/s/`+s.ID+`" && document.querySelectorAll(".message.user").length === 1 && document.querySelectorAll(".message.assistant").length === 0`)
	f.waitText(".session-title", "controls (fork)")
}
