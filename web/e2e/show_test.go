package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/server"
)

// noSideways fails when the page is wider than the window (a sideways scrollbar) or an open
// dialog reaches past the window's edges.
func (f *fixture) noSideways(where string) {
	f.t.Helper()
	got := f.eval(`(() => {
  const d = document.documentElement, out = [];
  if (d.scrollWidth > d.clientWidth) out.push("the page is " + d.scrollWidth + " px wide in a " + d.clientWidth + " px window");
  for (const dlg of document.querySelectorAll("dialog[open]")) {
    const r = dlg.getBoundingClientRect();
    if (r.left < 0 || r.right > innerWidth) out.push("an open dialog spans " + Math.round(r.left) + "–" + Math.round(r.right) + " px of " + innerWidth);
  }
  // Who is too wide: the elements that reach past the window although their parent does not.
  if (out.length) {
    const escaped = [];
    for (const el of document.body.querySelectorAll("*")) {
      const r = el.getBoundingClientRect(), p = el.parentElement.getBoundingClientRect();
      let clipped = false;
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) if (getComputedStyle(a).overflowX !== "visible") clipped = true;
      if (!clipped && r.right > innerWidth + 1) escaped.push("<" + el.tagName.toLowerCase() + " class=" + JSON.stringify(String(el.className)) + "> in <" + el.parentElement.tagName.toLowerCase() + " class=" + JSON.stringify(String(el.parentElement.className)) + ">");
    }
    out.push("too wide: " + escaped.slice(0, 8).join(", "));
  }
  return out.join("; ");
})()`)
	if got != "" {
		f.t.Log(f.eval(`(() => { const d = document.documentElement; const res = []; let node = document.body;
  for (let depth = 0; depth < 12 && node; depth++) { let found = null;
    for (const c of node.children) { const old = c.style.display; c.style.display = "none"; const w = d.scrollWidth; c.style.display = old; if (w <= d.clientWidth) { found = c; break; } }
    if (!found) break; res.push(found.tagName + "." + found.className); node = found; }
  return res.join(" > "); })()`))
		f.t.Errorf("%s: %s", where, got)
	}
}

// TestNoSidewaysScroll: an answer with a long unbroken word, a long link and long inline
// code, a tool card and a permission dialog never make the page scroll sideways, on a
// desktop window or a 390 px phone; the dialog fits the phone's screen.
func TestNoSidewaysScroll(t *testing.T) {
	f := newFixture(t)
	long := "Here: " + strings.Repeat("x", 400) + " then `" + strings.Repeat("y", 300) + "` and https://example.com/" + strings.Repeat("a/", 150) + "\n\n| " + strings.Repeat("c", 200) + " | d |\n|---|---|\n| 1 | 2 |\n"
	permission := `{"ask":{"type":"permission","question":"May I read /` + strings.Repeat("long/", 60) + `file?","risk":"medium","resource":"` + strings.Repeat("r", 200) + `","duration":"session"}}`
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		s := f.session("wide " + size.name)
		opts := []chromedp.EmulateViewportOption{}
		if size.name == "phone" {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		if err := f.b.Do(10*time.Second, chromedp.EmulateViewport(size.w, size.h, opts...)); err != nil {
			t.Fatal(err)
		}
		f.fake.Push(toolCalls([2]string{"ask_it", permission}), text(long))
		f.open("#/s/" + s.ID)
		f.typeInto("#composer-input", "go "+strings.Repeat("z", 200)+"\n")
		f.waitText("dialog[open] .ask-permission", "May I read")
		f.shot(size.name + "-wide-dialog")
		f.noSideways(size.name + " with a permission dialog")
		f.answerDialog("once")
		f.waitText(".message.assistant", "Here:")
		f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
		f.shot(size.name + "-wide-answer")
		f.noSideways(size.name + " with a long answer")
	}
}

// TestHeaderNamesModel: a session that uses the defaults names the provider and the model
// it runs on in its header, not "default provider".
func TestHeaderNamesModel(t *testing.T) {
	f := newFixture(t)
	s := f.session("model")
	f.open("#/s/" + s.ID)
	f.waitJS("the header to name the model", `(document.querySelector(".session-model")?.textContent || "").includes("openai") && document.querySelector(".session-model").textContent.includes("test-model")`)
}

// TestWordsNotCodes: a refused call reads as refused, in words, not USER_REJECTION; an
// answered form says what was answered, question by question, not its JSON; a turn whose
// model request failed shows its error once.
func TestWordsNotCodes(t *testing.T) {
	f := newFixture(t)
	s := f.session("words")
	form := `{"ask":{"type":"form","question":"Details","questions":[{"type":"text","question":"City"},{"type":"confirm","question":"Subscribe"}]}}`
	f.fake.Push(toolCalls([2]string{"refuse", `{}`}, [2]string{"refuse", `{"why":"the person did not allow ` + "`curl`" + ` to reach example.com"}`}),
		toolCalls([2]string{"ask_it", form}), text("Done."),
		providertest.OpenAIError(400, "invalid_request_error", "the model is gone"))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "go\n")
	f.waitText(".ask-form", "Details")
	f.typeInto(".ask-form textarea, .ask-form input[type=text]", "Paris")
	f.click(".ask-form input[type=checkbox]")
	f.clickText(".ask-form", "Answer")
	f.waitText(".message.assistant", "Done.")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	cards := f.eval(`[...document.querySelectorAll('.tool-card[data-tool="refuse"]')].map((c) => c.querySelector(".tool-head").textContent + " / " + (c.querySelector(".tool-error")?.textContent || "")).join(" | ")`)
	if strings.Contains(cards, "USER_REJECTION") || !strings.Contains(cards, "You did not allow this") || !strings.Contains(cards, "the person did not allow `curl` to reach example.com") {
		t.Errorf("refused cards read %q: want words (You did not allow this; the reason), no USER_REJECTION", cards)
	}
	answered := f.eval(`document.querySelector(".ask-form.answered .ask-status")?.textContent || ""`)
	if strings.Contains(answered, "{") || !strings.Contains(answered, "City: Paris") || !strings.Contains(answered, "Subscribe: yes") {
		t.Errorf("the answered form says %q: want its answers in words (City: Paris, Subscribe: yes)", answered)
	}

	// A turn whose model request fails: one error on the page.
	f.typeInto("#composer-input", "again\n")
	f.waitText(".session-view", "the model is gone")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	time.Sleep(time.Second) // anything still coming
	if n := f.eval(`String([...document.querySelectorAll(".transcript .error, .transcript [role=alert], .composer .error")].filter((e) => e.checkVisibility() && e.innerText.includes("the model is gone")).length)`); n != "1" {
		t.Errorf("the failed turn's error is shown %s times, want once: %s", n, f.eval(`[...document.querySelectorAll(".transcript .error, .transcript [role=alert], .composer .error")].filter((e) => e.textContent.includes("the model is gone")).map((e) => e.outerHTML.slice(0, 300)).join("\n")`))
	}
}

// TestNoStaleStates: the composer's status says "Waiting for your answer" while the turn waits
// for the person, not "Working…"; "Stopping…" never outlives the turn (here the stop's answer
// comes after the turn ended); a dialog goes when the person navigates away.
func TestNoStaleStates(t *testing.T) {
	f := newFixture(t)
	s := f.session("stale")
	permission := `{"ask":{"type":"permission","question":"May I look?","risk":"low","resource":"look","duration":"session"}}`
	f.fake.Push(toolCalls([2]string{"ask_it", permission}), text("Looked."),
		toolCalls([2]string{"slow_note", `{"path":"a.txt","text":"a","waitMs":60000}`}), text("never"))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "look\n")
	f.waitText("dialog[open] .ask-permission", "May I look?")
	f.waitJS("the status to say the turn waits for the person", `document.querySelector(".run-status").textContent === "Waiting for your answer"`)
	f.answerDialog("once")
	f.waitText(".message.assistant", "Looked.")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)

	// The stop's answer is held back until after the turn ended.
	f.eval(`(() => { const real = window.fetch; window.fetch = async (...a) => { const r = await real(...a); if (String(a[0]).endsWith("/stop")) await new Promise((ok) => setTimeout(ok, 1500)); return r; }; return ""; })()`)
	f.typeInto("#composer-input", "slow\n")
	f.waitJS("the slow call", `document.querySelector('.tool-card[data-tool="slow_note"].status-running') !== null`)
	f.click("#stop")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	time.Sleep(2500 * time.Millisecond)
	if got := f.eval(`document.querySelector(".run-status").textContent`); got != "" {
		t.Errorf("after the turn ended the status says %q", got)
	}

	// A dialog opened here goes when the person goes to another page.
	f.clickText(".session-head", "Model")
	f.waitJS("the model dialog", `document.querySelector("dialog[open] #session-model") !== null`)
	f.eval(`(() => { location.hash = "#/settings"; return ""; })()`)
	f.waitJS("the settings page", `document.querySelector(".settings-view") !== null`)
	time.Sleep(300 * time.Millisecond)
	if got := f.eval(`String(document.querySelectorAll("dialog[open]").length)`); got != "0" {
		t.Errorf("%s dialogs still open after navigating to Settings", got)
	}
}

// TestAxeCleanMore: what TestAxeClean does not draw passes axe-core too, light and dark:
// diffs with comments, a table with an empty header, a markdown table with an empty header
// cell, questions waiting inline (a form, a choice) and a medium-risk permission in its card.
func TestAxeCleanMore(t *testing.T) {
	src := axeSource(t)
	f := newFixture(t)
	s := f.session("axe more")
	form := `{"ask":{"type":"form","question":"Details","questions":[{"type":"text","question":"City"},{"type":"confirm","question":"Subscribe"},{"type":"single_select","question":"Size","options":[{"label":"S","value":"s"},{"label":"M","value":"m"}]}]}}`
	permission := `{"ask":{"type":"permission","question":"May I read the logs?","risk":"medium","resource":"logs","duration":"session"}}`
	f.fake.Push(toolCalls([2]string{"show", `{"type":"diff-comments"}`}, [2]string{"show", `{"type":"empty-header"}`}, [2]string{"show", `{"type":"code"}`}),
		toolCalls([2]string{"ask_it", permission}),
		toolCalls([2]string{"ask_it", form}),
		text("| | a |\n|---|---|\n| 1 | 2 |\n\n```py\n# a comment\nx = 1\n```\n"))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "draw\n")
	f.waitText("dialog[open] .ask-permission", "May I read the logs?")
	// The dialog closed (Escape-like): the permission waits in its card.
	f.eval(`(() => { document.querySelector("dialog[open]").close(); return ""; })()`)
	f.waitText(".tool-card .ask-permission", "May I read the logs?")
	for _, scheme := range []string{"light", "dark"} {
		if err := f.b.Do(10*time.Second, emulateScheme(scheme)); err != nil {
			t.Fatal(err)
		}
		f.axeCheck(src, scheme+" conversation with a permission waiting in its card")
	}
	f.clickText(".tool-card .ask-permission", "Allow once")
	f.waitText(".tool-card .ask-form", "Details")
	for _, scheme := range []string{"light", "dark"} {
		if err := f.b.Do(10*time.Second, emulateScheme(scheme)); err != nil {
			t.Fatal(err)
		}
		f.axeCheck(src, scheme+" conversation with a form waiting")
	}
	f.typeInto(".ask-form input[type=text], .ask-form textarea", "Paris")
	f.click(".ask-form .option input[type=radio]")
	f.clickText(".ask-form", "Answer")
	f.waitJS("the answer's table", `document.querySelector(".message.assistant .md table") !== null`)
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	for _, scheme := range []string{"light", "dark"} {
		if err := f.b.Do(10*time.Second, emulateScheme(scheme)); err != nil {
			t.Fatal(err)
		}
		f.axeCheck(src, scheme+" conversation after the turn")
		f.open("")
		f.waitJS("the home page", `document.querySelector("#main").textContent.length > 0`)
		f.axeCheck(src, scheme+" home page")
		f.open("#/s/" + s.ID)
	}
	// A phone's width: the menu, the composer's wrapped buttons.
	if err := f.b.Do(10*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		t.Fatal(err)
	}
	f.open("#/s/" + s.ID)
	f.axeCheck(src, "phone conversation")
}

// TestSingleLineFields: a text question and a tool's plain string parameter are answered in
// one-line fields (a text box of several lines suggested an essay for a name); a parameter
// meant to hold text of many lines keeps a text area.
func TestSingleLineFields(t *testing.T) {
	f := newFixture(t)
	s := f.session("fields")
	f.fake.Push(toolCalls([2]string{"ask_it", `{"ask":{"type":"text","question":"Your name?"}}`}), text("Hi."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "ask\n")
	f.waitText(".ask-text", "Your name?")
	if got := f.eval(`[...document.querySelectorAll(".ask-text input, .ask-text textarea")].map((e) => e.tagName + (e.type ? ":" + e.type : "")).join(",")`); got != "INPUT:text" {
		t.Errorf("a text question's fields: %s, want one INPUT:text", got)
	}
	f.typeInto(".ask-text input[type=text]", "Ada\n") // Enter answers
	f.waitText(".message.assistant", "Hi.")

	f.open("#/tools")
	f.click(`.tool[data-tool="greet"] details.run > summary`)
	f.waitJS("the run form", `document.querySelector('.tool[data-tool="greet"] .run-box form') !== null`)
	if got := f.eval(`(() => { const l = [...document.querySelectorAll('.tool[data-tool="greet"] .run-box label')].find((l) => l.textContent.startsWith("name")); const el = l && document.getElementById(l.htmlFor); return el ? el.tagName + ":" + (el.type || "") : "none"; })()`); got != "INPUT:text" {
		t.Errorf("greet's name field is %s, want INPUT:text", got)
	}
	f.click(`.tool[data-tool="write_note"] details.run > summary`)
	f.waitJS("write_note's run form", `document.querySelector('.tool[data-tool="write_note"] .run-box form') !== null`)
	if got := f.eval(`(() => { const l = [...document.querySelectorAll('.tool[data-tool="write_note"] .run-box label')].find((l) => l.textContent.startsWith("text")); const el = l && document.getElementById(l.htmlFor); return el ? el.tagName : "none"; })()`); got != "TEXTAREA" {
		t.Errorf("write_note's text field is %s, want TEXTAREA", got)
	}
}

// TestToolsPageMarkdownAndSearch: a tool's description is drawn as Markdown (its emphasis,
// code and list, not asterisks and backticks); the search box keeps the tools whose name or
// description match, and says how many.
func TestToolsPageMarkdownAndSearch(t *testing.T) {
	f := newFixture(t)
	f.writeTool(filepath.Join(f.home, "tools"), "documented", strings.ReplaceAll(strings.ReplaceAll(greetTool, "'greet'", "'documented'"),
		"'Greet someone.'", "'Reads **bold** words and `inline code`.\\n\\n- first point\\n- second point'"))
	f.open("#/tools")
	f.waitJS("the documented tool", `document.querySelector('.tool[data-tool="documented"]') !== null`)
	if got := f.eval(`(() => { const d = document.querySelector('.tool[data-tool="documented"] .description'); return [d.querySelector("strong")?.textContent, d.querySelector("code")?.textContent, d.querySelectorAll("li").length, d.textContent.includes("**")].join("|"); })()`); got != "bold|inline code|2|false" {
		t.Errorf("the description drawn: %s, want bold|inline code|2|false (Markdown)", got)
	}
	f.typeInto("#tool-search", "second point")
	f.waitJS("only the documented tool shown", `[...document.querySelectorAll(".tool")].filter((e) => !e.hidden).map((e) => e.dataset.tool || "").join(",") === "documented"`)
	f.waitText(".tool-search-count", "1 of")
	f.eval(`(() => { const s = document.querySelector("#tool-search"); s.value = ""; s.dispatchEvent(new Event("input")); return ""; })()`)
	f.typeInto("#tool-search", "GREET")
	f.waitJS("greet found by its name, whatever the case", `[...document.querySelectorAll(".tool")].filter((e) => !e.hidden).map((e) => e.dataset.tool || "").join(",") === "greet"`)
}

// TestToolCardsShowResults: the cards of read-file, grep and ls show what they found (the
// file's lines, the matches, the listing) folded under "Output", as text rather than only as
// the JSON sent to the model; long shell output shows its tail (the end is what matters)
// and its heading is one line cut with an ellipsis, the whole command below.
func TestToolCardsShowResults(t *testing.T) {
	f := newFixtureWith(t, func(_ *fixture, cfg *server.Config) {
		cfg.Host.Builtins = builtin.Tools(builtin.Options{})
	})
	if err := os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("alpha readKeyLine\nbeta grepKeyLine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.session("results")
	f.fake.Push(toolCalls([2]string{"read-file", `{"path":"notes.txt"}`}, [2]string{"grep", `{"pattern":"grepKey","path":"."}`}, [2]string{"ls", `{"path":"."}`}, [2]string{"show", `{"type":"long-shell"}`}), text("Read."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "read\n")
	f.waitText(".message.assistant", "Read.")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	for tool, want := range map[string]string{"read-file": "readKeyLine", "grep": "grepKeyLine", "ls": "notes.txt"} {
		got := f.eval(`(() => { const o = document.querySelector('.tool-card[data-tool="` + tool + `"] details.tool-output'); return o ? (o.open ? "open " : "folded ") + o.querySelector("summary").textContent + " | " + o.querySelector("pre").textContent : "none: " + document.querySelector('.tool-card[data-tool="` + tool + `"]')?.innerText; })()`)
		if !strings.HasPrefix(got, "folded Output") || !strings.Contains(got, want) || strings.Contains(got, `\n`) {
			t.Errorf("%s's card output: %q, want folded Output holding %s as text", tool, got, want)
		}
	}
	f.eval(`(() => { document.querySelector('.tool-card[data-tool="read-file"] details.tool-output').open = true; document.querySelector('.tool-card[data-tool="show"]').scrollIntoView(); return ""; })()`)
	f.shot("tool-results")
	shell := `.tool-card[data-tool="show"] [data-viz-type="shell-output"]`
	// The tail is in view in the capped box, the head is not.
	got := f.eval(`(() => { const box = document.querySelector('` + shell + ` .capped'); if (!box) return "no capped box";
  const r = box.getBoundingClientRect(), seen = (text) => { const tw = document.createTreeWalker(box, NodeFilter.SHOW_TEXT); let n; while ((n = tw.nextNode())) { const i = n.data.indexOf(text); if (i >= 0) { const range = document.createRange(); range.setStart(n, i); range.setEnd(n, i + text.length); const q = range.getBoundingClientRect(); return q.top >= r.top && q.bottom <= r.bottom; } } return false; };
  return "head " + seen("line 1 of") + ", tail " + seen("line 200 of"); })()`)
	if got != "head false, tail true" {
		t.Errorf("long shell output in its capped box: %s, want head false, tail true", got)
	}
	title := f.eval(`(() => { const e = document.querySelector('` + shell + ` > summary .viz-title'); const cs = getComputedStyle(e); return [cs.textOverflow, cs.whiteSpace, e.scrollWidth > e.clientWidth, e.getBoundingClientRect().height < 40].join(" "); })()`)
	if title != "ellipsis nowrap true true" {
		t.Errorf("the shell heading: %s, want ellipsis nowrap true true (one line, cut)", title)
	}
	f.waitText(shell+" .shell-cmd", "longShellCommandEnd")
}

// TestSidebarFollowsOtherClients: what another client (another tab, the terminal) does
// shows in this tab's session list without a reload: a session made, renamed, deleted, a
// workspace made; and a session that gets a turn moves to the top of its workspace.
func TestSidebarFollowsOtherClients(t *testing.T) {
	f := newFixture(t)
	older := f.session("older one")
	// Sessions are ordered by their last activity, kept to the millisecond: two made in the
	// same millisecond have no order between them.
	time.Sleep(5 * time.Millisecond)
	newer := f.session("newer one")
	f.open("#/s/" + newer.ID)
	order := `[...document.querySelectorAll(".sidebar .session a")].map((a) => a.textContent.trim()).join(",")`
	f.waitJS("the two sessions, newest first", order+` === "newer one,older one"`)

	made := f.session("made elsewhere")
	f.waitJS("the session made elsewhere", `[...document.querySelectorAll(".sidebar .session a")].some((a) => a.textContent.includes("made elsewhere"))`)
	if code := f.api("PATCH", "/api/sessions/"+made.ID, map[string]any{"title": "renamed elsewhere"}, nil); code != 200 {
		t.Fatalf("rename: %d", code)
	}
	f.waitJS("the rename", `[...document.querySelectorAll(".sidebar .session a")].some((a) => a.textContent.includes("renamed elsewhere"))`)
	if code := f.api("DELETE", "/api/sessions/"+made.ID, nil, nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	f.waitJS("the deletion", `![...document.querySelectorAll(".sidebar .session a")].some((a) => a.textContent.includes("renamed elsewhere"))`)

	other := filepath.Join(t.TempDir(), "other-project")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if code := f.api("POST", "/api/workspaces", map[string]any{"path": other}, nil); code != 201 {
		t.Fatalf("create workspace: %d", code)
	}
	f.waitText(".sidebar .ws-name", "other-project")

	// A turn in the older session: it moves to the top.
	f.fake.Push(text("Hello."))
	if code := f.api("POST", "/api/sessions/"+older.ID+"/turns", map[string]any{"text": "hi"}, nil); code != 202 {
		t.Fatalf("start a turn: %d", code)
	}
	f.waitJS("the active session on top", order+` === "older one,newer one"`)
}

// TestCompactingNoticeEnds: "Compacting the conversation…" goes when the compaction has
// ended (it stayed its five seconds whatever happened), and the result is said.
func TestCompactingNoticeEnds(t *testing.T) {
	f := newFixture(t)
	s := f.session("compact")
	f.fake.Push(text("First answer."), text("Second answer."), text("The summary of the conversation."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "one\n")
	f.waitText(".message.assistant", "First answer.")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running")`)
	f.typeInto("#composer-input", "two\n")
	f.waitText(".message.assistant", "Second answer.")
	f.waitJS("the turn's end", `!document.querySelector(".session-view").classList.contains("running") && !document.querySelector("#compact").disabled`)
	f.click("#compact")
	f.waitJS("the compaction's result", `[...document.querySelectorAll("#notices .notice")].some((n) => /compacted|Could not compact/.test(n.textContent))`)
	if got := f.eval(`[...document.querySelectorAll("#notices .notice")].map((n) => n.textContent).join(" | ")`); strings.Contains(got, "Compacting") {
		t.Errorf("after the compaction ended the notices say: %s", got)
	}
}

// TestToolsPageShadowedBuiltin: a tool folder with a working built-in's name (todoread, as
// jean2's catalogue has) gets a card of its own beside the built-in's, saying that the
// built-in serves and how to choose the folder's tool.
func TestToolsPageShadowedBuiltin(t *testing.T) {
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		cfg.Host.Builtins = builtin.Tools(builtin.Options{})
		f.writeTool(cfg.Host.Layout.Tools, "todoread", `export const definition = { name: 'todoread', description: 'The catalogue todoread.', inputSchema: { type: 'object' } };
export async function execute() { return { success: true, result: [] }; }
`)
	})
	f.open("#/tools")
	f.waitJS("two todoread cards", `document.querySelectorAll('.tool[data-tool="todoread"]').length === 2`)
	got := f.eval(`[...document.querySelectorAll('.tool[data-tool="todoread"]')].map((e) => e.className + ": " + e.innerText.replace(/\s+/g, " ")).join(" | ")`)
	for _, want := range []string{"status-ok", "status-shadowed", "has the name of jean2's built-in todoread, which serves", "disabledBuiltins"} {
		if !strings.Contains(got, want) {
			t.Errorf("the todoread cards %q lack %q", got, want)
		}
	}
}
