package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

var vizKeys = map[string][]string{
	"diff":                {"diffKeyOld", "diffKeyNew", "src/diffKey.ts"},
	"diffs":               {"diffsKeyOne.txt", "diffsKeyTwo.txt"},
	"code":                {"codeKeyFunction", "codeKey.go"},
	"file-list":           {"fileListKey.txt"},
	"table":               {"tableKeyCell", "Name"},
	"markdown":            {"markdownKeyHeading"},
	"shell-output":        {"echo shellKey", "shellKeyStdout", "exit 3"},
	"todo-list":           {"todoKeyItem"},
	"structured-response": {"KeyFormat", "structuredKeyValue"},
	"none":                {"noneKeyMessage"},
}

// TestWholeTurn: a workspace and session made through the page, a message sent with Enter,
// a turn in which the model calls a tool for every visualization type and then streams a
// markdown answer — every visualization drawn with its key text, the answer rendered.
func TestWholeTurn(t *testing.T) {
	f := newFixture(t)
	f.open("")
	f.click("#new-workspace")
	f.typeInto("#ws-path", f.ws)
	f.click("dialog form button.primary")
	// Creating a workspace opens a new session in it.
	f.waitJS("a new session's message box", `location.hash.startsWith("#/s/") && document.querySelector("#composer-input") !== null`)

	var calls [][2]string
	for typ := range vizKeys {
		calls = append(calls, [2]string{"show", fmt.Sprintf(`{"type":%q}`, typ)})
	}
	f.fake.Push(toolCalls(calls...), text("All ", "**drawn**", " — see `show`.\n\n- one\n- two"))
	f.typeInto("#composer-input", "Draw everything\n")

	f.waitText(".message.user", "Draw everything")
	f.waitText(".message.assistant", "All drawn")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	for typ, keys := range vizKeys {
		for _, key := range keys {
			f.waitText(fmt.Sprintf(`.tool-card [data-viz-type=%q]`, typ), key)
		}
	}
	if got := f.eval(`String(document.querySelectorAll(".tool-card.status-complete").length)`); got != fmt.Sprint(len(vizKeys)) {
		t.Errorf("%s complete tool cards, want %d", got, len(vizKeys))
	}
	if got := f.eval(`document.querySelector(".message.assistant .md strong")?.textContent || ""`); got != "drawn" {
		t.Errorf("the streamed answer's markdown: strong is %q, want drawn", got)
	}
	if got := f.eval(`String(document.querySelectorAll(".message.assistant .md li").length)`); got != "2" {
		t.Errorf("the answer's list has %s items, want 2", got)
	}
	// A diff is drawn with its colours and line numbers; the shell output with its exit code.
	if got := f.eval(`document.querySelector('[data-viz-type="diff"] tr.added td.ln.new')?.textContent || ""`); got != "1" {
		t.Errorf("diff: the added line's number is %q, want 1", got)
	}
	// Durations read as the short calls they were (milliseconds or seconds).
	if got := f.eval(`[...document.querySelectorAll(".tool-card .tool-duration")].map((e) => e.textContent).filter((t) => !/^\d+ ms$|^\d+(\.\d)? s$/.test(t)).join(", ")`); got != "" {
		t.Errorf("tool durations not in ms or s: %s", got)
	}
	// Arguments are on the card.
	f.waitText(".tool-card .tool-args", `"type"`)

	// The page after a reload shows the same conversation from the store.
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "All drawn")
	for typ, keys := range vizKeys {
		f.waitText(fmt.Sprintf(`.tool-card [data-viz-type=%q]`, typ), keys[0])
	}
}

// TestAskAnsweredByClick: a permission ask opens a dialog (risk shown), survives a page
// reload, and a click on "Allow for this session" resumes the call; a confirm ask is
// answered inline; the grant is listed in Settings and revoked there.
func TestAskAnsweredByClick(t *testing.T) {
	f := newFixture(t)
	s := f.session("asks")
	permission := `{"ask":{"type":"permission","question":"May I deploy to production?","risk":"high","resource":"deploy","duration":"session"}}`
	confirm := `{"ask":{"type":"confirm","question":"Really continue?"}}`
	f.fake.Push(toolCalls([2]string{"ask_it", permission}), toolCalls([2]string{"ask_it", confirm}), text("Deployed."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "deploy\n")

	f.waitText("dialog[open] .ask-permission", "May I deploy to production?")
	f.waitText("dialog[open] .ask-permission", "High risk")
	f.waitText(".tool-card .tool-progress", "waiting for you")
	// Escape closes the dialog; the question stays in the conversation. The dialog came as
	// the person had just typed, so it left them the focus: a click on it moves there. The
	// key goes to the focused element, so wait until the dialog holds the focus.
	f.waitJS("the dialog to listen", `document.querySelector("dialog[open].ready") !== null`)
	f.click("dialog[open] h2")
	f.waitJS("the dialog to hold the focus", `document.activeElement !== null && document.activeElement.closest("dialog[open]") !== null`)
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the dialog to close", `document.querySelector("dialog[open]") === null`)
	f.waitText(".tool-card .ask-permission", "May I deploy to production?")

	// A reload while the ask waits: it is shown again.
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText("dialog[open] .ask-permission", "May I deploy to production?")
	f.answerDialog("session")

	f.waitText(".tool-card .ask-confirm", "Really continue?")
	f.clickText(".tool-card .ask-confirm", "Yes")
	f.waitText(".message.assistant", "Deployed.")
	f.waitJS("both calls complete", `document.querySelectorAll(".tool-card.status-complete").length === 2 && document.querySelectorAll(".ask:not(.answered)").length === 0`)
	f.waitText(".tool-card .tool-result", `"answer": true`)

	// The grant is listed in Settings and can be revoked.
	f.open("#/settings")
	f.waitText(".grants", "ask_it")
	f.clickText(".grants", "Revoke ask_it: May I deploy to production?")
	f.click("dialog[open] button.primary")
	f.waitText(".settings-view", "No permission is remembered")
	var grants struct{ Grants []any }
	f.api("GET", "/api/grants", nil, &grants)
	if len(grants.Grants) != 0 {
		t.Errorf("after revoking, the server still has %d grants", len(grants.Grants))
	}
}

// TestAskTypes: single and multi select, text and form asks, each answered on the page;
// the tool receives exactly the answer chosen.
func TestAskTypes(t *testing.T) {
	f := newFixture(t)
	s := f.session("ask types")
	single := `{"ask":{"type":"single_select","question":"Which colour?","options":[{"label":"Red","value":"red"},{"label":"Blue","value":"blue"}]}}`
	multi := `{"ask":{"type":"multi_select","question":"Which days?","min":1,"options":[{"label":"Mon","value":1},{"label":"Tue","value":2},{"label":"Wed","value":3}]}}`
	textAsk := `{"ask":{"type":"text","question":"Your name?","placeholder":"name"}}`
	form := `{"ask":{"type":"form","question":"Details","questions":[{"type":"text","question":"City"},{"type":"confirm","question":"Subscribe"}]}}`
	f.fake.Push(toolCalls([2]string{"ask_it", single}), toolCalls([2]string{"ask_it", multi}), toolCalls([2]string{"ask_it", textAsk}), toolCalls([2]string{"ask_it", form}), text("Thanks."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "ask me\n")

	f.waitText(".ask-single_select", "Which colour?")
	f.click(".ask-single_select .option:nth-of-type(2) input")
	f.clickText(".ask-single_select", "Answer")
	f.waitText(".ask-multi_select", "Which days?")
	f.click(".ask-multi_select .option:nth-of-type(1) input")
	f.click(".ask-multi_select .option:nth-of-type(3) input")
	f.clickText(".ask-multi_select", "Answer")
	f.waitText(".ask-text", "Your name?")
	f.typeInto(".ask-text input[type=text]", "Ada\n") // Enter answers
	f.waitText(".ask-form", "Details")
	f.typeInto(".ask-form input[type=text]", "Paris")
	f.click(".ask-form input[type=checkbox]")
	f.clickText(".ask-form", "Answer")
	f.waitText(".message.assistant", "Thanks.")
	f.waitJS("four complete calls", `document.querySelectorAll(".tool-card.status-complete").length === 4`)
	results := f.eval(`[...document.querySelectorAll(".tool-card .tool-result pre")].map((p) => p.textContent.replace(/\s+/g, "")).join("|")`)
	for _, want := range []string{`"answer":"blue"`, `"answer":[1,3]`, `"answer":"Ada"`, `"answers":[{"question":"City","answer":"Paris"},{"question":"Subscribe","answer":true}]`} {
		if !strings.Contains(results, want) {
			t.Errorf("the tools' results %s lack %s", results, want)
		}
	}
}

// TestChangesAndRestore: "Changed N files" under the turn opens its diff; "Restore to here"
// lists what will change, and after confirming the file is gone from disk and the result
// is shown.
func TestChangesAndRestore(t *testing.T) {
	f := newFixture(t)
	s := f.session("changes")
	f.fake.Push(toolCalls([2]string{"write_note", `{"path":"notes/todo.txt","text":"buy milk\n"}`}), text("Wrote it."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "write a note\n")
	f.waitText(".message.assistant", "Wrote it.")
	note := filepath.Join(f.ws, "notes", "todo.txt")
	if data, err := os.ReadFile(note); err != nil || string(data) != "buy milk\n" {
		t.Fatalf("the tool did not write the note: %q, %v", data, err)
	}

	// The folder the tool made and the file in it.
	f.waitText(".turn-footer", "Changed 2 files")
	f.clickText(".turn-footer", "Changed 2 files")
	f.waitText("dialog[open] [data-viz-type=diff]", "buy milk")
	f.waitText("dialog[open]", "todo.txt")
	if err := f.b.Do(10*time.Second, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the diff to close", `document.querySelector("dialog[open]") === null`)

	f.clickText(".turn-footer", "Restore to here")
	// The plan: the folder the turn made goes, with the note in it.
	f.waitText("dialog[open] .report-removed", filepath.Join(f.ws, "notes"))
	if _, err := os.Stat(note); err != nil {
		t.Fatalf("the dry run changed the disk: %v", err)
	}
	f.click("dialog[open] button.danger.primary")
	f.waitText("dialog[open] .restore-result", "back as it was")
	if _, err := os.Stat(note); !os.IsNotExist(err) {
		t.Errorf("after Restore to here the note still exists (%v)", err)
	}
	f.waitText(".turn-footer", "restored")
}

// TestToolsPage: every tool with version, runtime and status, declared variables set or
// missing, a Run form generated from the schema that runs the tool, and the list following
// a reload of the tools live.
func TestToolsPage(t *testing.T) {
	f := newFixture(t)
	f.session("tools") // a workspace to run in
	f.open("#/tools")
	f.waitText(`.tool[data-tool="greet"]`, "Greet someone.")
	f.waitText(`.tool[data-tool="greet"]`, "node")
	f.waitText(`.tool[data-tool="greet"] .env`, "GREET_STYLE")
	if got := f.eval(`[...document.querySelectorAll('.tool[data-tool="greet"] .env tr')].map((r) => r.innerText.replace(/\s+/g, " ").trim()).join("|")`); !strings.Contains(got, "GREET_STYLE set") || !strings.Contains(got, "GREET_MISSING missing") {
		t.Errorf("env rows %q: want GREET_STYLE set and GREET_MISSING missing", got)
	}
	// A folder that does not load is listed with its status and error.
	f.waitJS("the broken tool", `[...document.querySelectorAll(".tool.status-error .tool-error")].some((e) => e.textContent.length > 10)`)
	if strings.Contains(f.eval(`document.body.innerText`), "formal") {
		t.Error("the page shows a variable's value")
	}

	f.click(`.tool[data-tool="greet"] details.run > summary`)
	f.waitJS("the run form", `document.querySelector('.tool[data-tool="greet"] .run-box form') !== null`)
	f.typeInto(`.tool[data-tool="greet"] .run-box input[type=text]`, "Ada")
	f.typeInto(`.tool[data-tool="greet"] .run-box input[type=number]`, "2")
	f.click(`.tool[data-tool="greet"] .run-box input[type=checkbox]`)
	f.eval(`(() => { const s = document.querySelector('.tool[data-tool="greet"] .run-box .schema-fields select'); s.value = "0"; return ""; })()`)
	f.clickText(`.tool[data-tool="greet"] .run-box`, "Run")
	f.waitText(`.tool[data-tool="greet"] .outcome`, "Hello, Ada! Hello, Ada! (warm, loud)")
	f.waitText(`.tool[data-tool="greet"] .outcome`, "success")

	// A run whose tool asks: the question comes through the chosen session and is answered
	// on the tools page.
	f.click(`.tool[data-tool="ask_it"] details.run > summary`)
	f.waitJS("ask_it's run form", `document.querySelector('.tool[data-tool="ask_it"] .run-box form') !== null`)
	f.typeInto(`.tool[data-tool="ask_it"] .run-box textarea`, `{"type":"confirm","question":"Run from the tools page?"}`)
	f.eval(`(() => { const s = document.querySelector('.tool[data-tool="ask_it"] select[id$="-session"]'); s.value = s.options[1].value; return ""; })()`)
	f.clickText(`.tool[data-tool="ask_it"] .run-box`, "Run")
	f.waitText(`.tool[data-tool="ask_it"] .run-asks .ask-confirm`, "Run from the tools page?")
	f.waitText(`.tool[data-tool="ask_it"] .run-progress`, "waiting for you 1 / 2")
	f.clickText(`.tool[data-tool="ask_it"] .run-asks`, "Yes")
	f.waitText(`.tool[data-tool="ask_it"] .outcome`, "success")
	f.waitText(`.tool[data-tool="ask_it"] .outcome`, `"answer": true`)

	// A new tool folder appears on the page without a reload of the page.
	f.writeTool(filepath.Join(f.home, "tools"), "late", strings.ReplaceAll(greetTool, "'greet'", "'late_tool'"))
	f.waitJS("the new tool", `document.querySelector('.tool[data-tool="late_tool"]') !== null`)
	f.waitText(".tools-view", "Tools reloaded")
}
