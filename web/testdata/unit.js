// In-browser unit tests of the client's modules, run by web/browser_test.go. Each test
// records {name, ok, msg}; window.__done is set when all ran.
import { renderMarkdown } from "/js/markdown.js";
import { tokenize, highlight, languageOf } from "/js/highlight.js";
import { diffLines, fileDiff, splitLines } from "/js/diff.js";
import { renderVisualization } from "/js/viz.js";
import { schemaForm } from "/js/schemaform.js";
import { renderAsk } from "/js/asks.js";
import { h, safeURL, formatDuration } from "/js/dom.js";
import { fuzzy, Mentions } from "/js/mentions.js";

const results = [];
window.__results = results;
// Anything the page's Content-Security-Policy blocks is a failure: the client must work under it.
document.addEventListener("securitypolicyviolation", (e) => results.push({ name: "content security policy", ok: false, msg: `${e.violatedDirective} blocked ${e.blockedURI || "inline code"}` }));
const out = document.getElementById("out");

async function test(name, fn) {
  try {
    await fn();
    results.push({ name, ok: true });
  } catch (err) {
    results.push({ name, ok: false, msg: String(err && err.stack || err) });
  }
}
function eq(a, b, what) {
  const sa = JSON.stringify(a), sb = JSON.stringify(b);
  if (sa !== sb) throw new Error(`${what}: got ${sa}, want ${sb}`);
}
function ok(cond, what) {
  if (!cond) throw new Error(what);
}
function mount(node) {
  const box = h("div", { class: "case" }, node);
  out.appendChild(box);
  return box;
}

// ---- markdown ------------------------------------------------------------------------------

await test("markdown keeps markup as text", () => {
  const box = mount(renderMarkdown('<script>window.__pwned=1</script>\n\n<img src=x onerror="window.__pwned=2">\n\n**bold <b>x</b>**'));
  ok(!box.querySelector("script, img, b"), "no element made from the source's markup");
  ok(box.textContent.includes("<script>window.__pwned=1</script>"), "script tag shown as text");
  ok(box.querySelector("strong").textContent === "bold <b>x</b>", "strong holds the tag as text");
  ok(window.__pwned === undefined, "nothing ran");
});

await test("markdown refuses unsafe links", () => {
  const box = mount(renderMarkdown("[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](data:text/html,x) [d](https://example.com/x) [e](/local) <http://h.test/p>"));
  const links = [...box.querySelectorAll("a")];
  const hrefs = links.map((a) => a.getAttribute("href"));
  eq(hrefs.filter(Boolean), ["https://example.com/x", "/local", "http://h.test/p"], "only safe hrefs are set");
  ok(links.every((a) => !a.getAttribute("href") || a.rel.includes("noopener")), "links open with noopener");
});

await test("markdown never loads images", () => {
  const box = mount(renderMarkdown("![a cat](https://example.com/cat.png)"));
  ok(!box.querySelector("img"), "no <img>");
  const a = box.querySelector("a.md-image");
  ok(a && a.textContent.includes("a cat"), "the image becomes a link naming it");
});

await test("markdown blocks", () => {
  const src = [
    "# Title", "", "Some *em* and **strong** and `code` and ~~gone~~.", "",
    "- one", "- two", "  - nested", "- [x] done", "", "1. first", "2. second", "",
    "> quoted", "", "| a | b |", "|---|--:|", "| 1 | 2 |", "", "```go", "func main() {}", "```", "", "---",
  ].join("\n");
  const box = mount(renderMarkdown(src));
  eq(box.querySelector("h1").textContent, "Title", "heading");
  ok(box.querySelector("em").textContent === "em" && box.querySelector("del").textContent === "gone", "emphasis");
  eq(box.querySelectorAll("ul > li").length, 4, "top-level items plus nested");
  ok(box.querySelector("ul ul li").textContent === "nested", "nested list");
  ok(box.querySelector("li.task input[type=checkbox]").checked, "task list");
  eq(box.querySelectorAll("ol > li").length, 2, "ordered list");
  ok(box.querySelector("blockquote").textContent.includes("quoted"), "quote");
  eq([...box.querySelectorAll("td")].map((t) => t.textContent), ["1", "2"], "table cells");
  ok(box.querySelector("pre.code-block .tok-keyword").textContent === "func", "code fence highlighted");
  ok(box.querySelector("hr"), "rule");
});

await test("markdown survives hostile input", () => {
  const inputs = ["[".repeat(5000), ">".repeat(3000) + " x", "*a".repeat(3000), "__a".repeat(2000), "x`".repeat(3000),
    "- ".repeat(2000) + "x", "| a |\n|---|\n" + "| x |\n".repeat(2000), "![".repeat(2000)];
  for (const s of inputs) {
    const node = renderMarkdown(s);
    ok(node.textContent.length > 0, "rendered something for " + s.slice(0, 10));
  }
});

// ---- highlighting ------------------------------------------------------------------------

await test("highlight covers the text exactly", () => {
  const samples = [["const x = 'a\\'b'; // c\n/* d */ let y = 0x1f;", "js"], ["func f() error { return nil } // x", "go"],
    ['{"a": [1, true, null, "s"]}', "json"], ["echo \"$HOME\" # c", "bash"], ["<a href='x'>t</a><!-- c -->", "html"],
    ["def f(x):\n    '''doc'''\n    return None", "python"], ["SELECT * FROM t WHERE a = 'x';", "sql"], ["k: v # c\nn: 1", "yaml"],
    ["random ]]] text ⟨unicode⟩ \u0000", "nolang"], ["unterminated 'string", "js"], ["/* open comment", "c"]];
  for (const [code, lang] of samples) eq(tokenize(code, lang).map((t) => t.text).join(""), code, "tokens of " + lang);
});

await test("highlight classes", () => {
  const kinds = (code, lang) => tokenize(code, lang).filter((t) => t.cls).map((t) => `${t.cls}:${t.text}`);
  const js = kinds("const s = 'x'; // note\nreturn 42;", "typescript");
  ok(js.includes("tok-keyword:const") && js.includes("tok-string:'x'") && js.includes("tok-comment:// note") && js.includes("tok-number:42"), "js: " + js);
  const json = kinds('{"key": "value", "n": 1}', "json");
  ok(json.includes('tok-property:"key"') && json.includes('tok-string:"value"'), "json: " + json);
  eq(languageOf("", "src/main.go"), "go", "language from extension");
  eq(languageOf("Rust", "x.go"), "rust", "explicit language wins");
  const nodes = highlight("<script>alert(1)</script>", "html");
  const box = mount(h("pre", null, nodes));
  ok(!box.querySelector("script"), "highlighted markup stays text");
});

// ---- diffs -------------------------------------------------------------------------------

await test("line diff", () => {
  const d = fileDiff("a.txt", "a\nb\nc\n", "a\nB\nc\nd\n");
  eq([d.additions, d.deletions], [2, 1], "counts");
  const changes = d.hunks.flatMap((hk) => hk.changes.map((c) => `${c.type[0]}${c.oldLineNumber ?? "-"}/${c.newLineNumber ?? "-"}:${c.content}`));
  eq(changes, ["c1/1:a", "r2/-:b", "a-/2:B", "c3/3:c", "a-/4:d"], "edit script");
  eq(fileDiff("n.txt", "", "x\ny\n").additions, 2, "created file");
  eq(fileDiff("n.txt", "x\n", "").deletions, 1, "deleted file");
  eq(splitLines("a\nb"), ["a", "b"], "no trailing newline");
  const far = diffLines([..."abcdefghij"], [..."klmnopqrst"]);
  eq(far.filter((c) => c.type === "added").length, 10, "disjoint texts");
});

// ---- visualizations ------------------------------------------------------------------------

const vizCases = {
  diff: [{ type: "diff", path: "src/app.ts", language: "typescript", additions: 1, deletions: 1, hunks: [{ oldStart: 1, oldLines: 2, newStart: 1, newLines: 2, changes: [
    { type: "context", content: "const keep = 1;", oldLineNumber: 1, newLineNumber: 1 },
    { type: "removed", content: "const oldName = 2;", oldLineNumber: 2 },
    { type: "added", content: "const newName = 2;", newLineNumber: 2 }] }] }, ["src/app.ts", "oldName", "newName"]],
  diffs: [{ type: "diffs", items: [{ type: "diff", path: "one.txt", additions: 1, deletions: 0, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 1, changes: [{ type: "added", content: "first file line", newLineNumber: 1 }] }] },
    { type: "diff", path: "two.txt", additions: 0, deletions: 1, hunks: [{ oldStart: 1, oldLines: 1, newStart: 0, newLines: 0, changes: [{ type: "removed", content: "second file line", oldLineNumber: 1 }] }] }] }, ["one.txt", "two.txt", "first file line", "second file line"]],
  code: [{ type: "code", path: "hello.py", content: "def hello():\n    return 'hi'\n", created: true, highlightLines: [2] }, ["hello.py", "def hello", "created"]],
  "file-list": [{ type: "file-list", files: [{ path: "a/created.txt", action: "created" }], groups: [{ label: "Matches", icon: "search", files: [{ path: "b/found.txt", line: 7, content: "needle" }] }], total: 5 }, ["a/created.txt", "Matches", "b/found.txt", "needle", "Showing 2 of 5"]],
  table: [{ type: "table", columns: [{ key: "name", label: "Name" }, { key: "qty" }], rows: [{ name: "apples", qty: 3 }, { name: "pears", qty: { n: 1 } }], totalRows: 10 }, ["Name", "qty", "apples", "pears", "1 field", "Showing 2 of 10"]],
  markdown: [{ type: "markdown", content: "## Report\n\n*all good*", sourceUrl: "https://example.com/r" }, ["Report", "all good", "https://example.com/r"]],
  "shell-output": [{ type: "shell-output", command: "ls -la", stdout: "total 0", stderr: "ls: warning", exitCode: 2 }, ["ls -la", "total 0", "ls: warning", "exit 2"]],
  "todo-list": [{ type: "todo-list", items: [{ content: "write tests", status: "completed", priority: "high" }, { content: "ship it", status: "in_progress", priority: "low" }] }, ["write tests", "ship it", "high", "1/2 done"]],
  "structured-response": [{ type: "structured-response", formatName: "Person", data: { name: "Ada", langs: ["en", "fr"] }, schema: { type: "object" } }, ["Person", "Ada", "langs", "fr"]],
  none: [{ type: "none", message: "Nothing to draw here" }, ["Nothing to draw here"]],
  images: [{ type: "images", omitted: 1, images: [{ mimeType: "image/png", data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=" },
    { mimeType: "image/svg+xml", data: "PHN2Zz4=" }] }, ["2 images", "cannot be shown: image/svg+xml", "1 more image not shown"]],
};
for (const [type, [viz, texts]] of Object.entries(vizCases)) {
  await test("viz " + type, () => {
    const box = mount(renderVisualization(viz));
    const text = box.textContent;
    for (const t of texts) ok(text.includes(t), `${type}: "${t}" missing from ${JSON.stringify(text.slice(0, 300))}`);
    ok(box.querySelector(`[data-viz-type="${type}"]`), `${type}: data-viz-type set`);
  });
}

await test("viz images: a raster image as a data URL, never an SVG", () => {
  const box = mount(renderVisualization(vizCases.images[0]));
  const imgs = box.querySelectorAll("img.viz-image");
  eq(imgs.length, 1, "one image drawn");
  ok(imgs[0].src.startsWith("data:image/png;base64,iVBOR"), "the PNG's data URL");
  ok(imgs[0].alt, "the image has an alt text");
});

await test("viz details: diff colours and line numbers", () => {
  const box = mount(renderVisualization(vizCases.diff[0]));
  const removed = box.querySelector("tr.removed");
  const added = box.querySelector("tr.added");
  ok(removed && added, "rows classed by change");
  eq(removed.querySelector("td.ln.old").textContent, "2", "old line number");
  eq(added.querySelector("td.ln.new").textContent, "2", "new line number");
  ok(getComputedStyle(added).backgroundColor !== getComputedStyle(removed).backgroundColor, "added and removed differ in colour");
  ok(box.querySelector("td.code .tok-keyword"), "diff lines highlighted");
  const code = mount(renderVisualization(vizCases.code[0]));
  ok(code.querySelector("tr.marked td.ln").textContent === "2", "highlightLines marks line 2");
});

await test("viz collapsed and title", () => {
  const open = mount(renderVisualization({ type: "markdown", content: "x", title: "Shown" }));
  ok(open.querySelector("details").open, "open by default");
  ok(open.querySelector("summary").textContent.includes("Shown"), "title in the summary");
  const closed = mount(renderVisualization({ type: "markdown", content: "x", collapsed: true }));
  ok(!closed.querySelector("details").open, "collapsed starts closed");
});

await test("viz unknown and malformed", () => {
  const unk = mount(renderVisualization({ type: "chart", points: [1, 2] }));
  ok(unk.textContent.includes("points"), "unknown type shown as JSON");
  const bad = mount(renderVisualization({ type: "diff", path: "p", hunks: "nope" }));
  ok(bad.textContent.includes("p"), "malformed diff still drawn");
  const t = mount(renderVisualization({ type: "table", columns: [{ key: "<b>" }], rows: [{ "<b>": "<i>x</i>" }] }));
  ok(!t.querySelector("table b, table i"), "cells stay text");
});

// ---- schema forms --------------------------------------------------------------------------

await test("schema form", () => {
  const f = schemaForm({ type: "object", required: ["path", "count"], properties: {
    path: { type: "string", description: "where" }, count: { type: "integer", minimum: 0 }, force: { type: "boolean" },
    mode: { type: "string", enum: ["fast", "slow"] }, tags: { type: "array", items: { type: "string" } },
    opts: { type: "object", properties: { deep: { type: "boolean" } } }, extra: { oneOf: [{ type: "string" }, { type: "number" }] } } });
  const box = mount(f.node);
  const [missing] = f.value();
  ok(!missing, "required fields are checked");
  const inputs = box.querySelectorAll("input, textarea, select");
  ok(inputs.length >= 7, "a field per property");
  box.querySelector("input[type=text]").value = "src/x.txt"; // path: one line
  box.querySelector("input[type=number]").value = "3";
  box.querySelector("select").value = "1";
  const tags = [...box.querySelectorAll("textarea")].find((t) => t.placeholder === "one per line");
  tags.value = "a\nb\n";
  const [good, args] = f.value();
  ok(good, "valid once filled: " + JSON.stringify(args));
  eq(args, { path: "src/x.txt", count: 3, force: false, mode: "slow", tags: ["a", "b"], opts: { deep: false } }, "arguments");
  box.querySelector("input[type=number]").value = "2.5";
  ok(!f.value()[0], "integer refuses a fraction");
});

// ---- asks ----------------------------------------------------------------------------------

async function answerOf(pending, act) {
  let got;
  const node = renderAsk(pending, async (v) => { got = v; });
  mount(node);
  await act(node);
  await new Promise((r) => setTimeout(r, 0));
  return got;
}
const click = (node, sel) => node.querySelector(sel).click();
const button = (node, text) => [...node.querySelectorAll("button")].find((b) => b.textContent === text).click();

await test("ask permission", async () => {
  const p = { id: "a1", tool: "deploy", ask: { type: "permission", question: "May I deploy?", risk: "high", resource: "network", paths: ["/srv/app"], duration: "session" } };
  eq(await answerOf(p, (n) => button(n, "Allow for this session")), { granted: true, duration: "session" }, "session grant");
  eq(await answerOf(p, (n) => button(n, "Allow once")), { granted: true, duration: "once" }, "once");
  eq(await answerOf(p, (n) => button(n, "Allow for this workspace")), { granted: true, duration: "workspace" }, "workspace");
  eq(await answerOf(p, (n) => button(n, "Deny")), { granted: false }, "deny");
  const n = renderAsk(p, async () => {});
  ok(n.textContent.includes("High risk") && n.textContent.includes("/srv/app"), "risk and paths shown");
  ok(n.querySelector("button.primary").dataset.duration === "once", "high risk: the narrowest grant is the default button, not the suggested session");
  const medium = renderAsk({ ...p, ask: { ...p.ask, risk: "medium" } }, async () => {});
  ok(medium.querySelector("button.primary").dataset.duration === "once", "medium risk: one call is the default button too (only a low-risk ask offers the suggested grant first)");
});

await test("ask selects, text, confirm, form", async () => {
  const single = { id: "s", ask: { type: "single_select", question: "Pick", options: [{ label: "A", value: "a" }, { label: "B", value: { n: 2 } }] } };
  eq(await answerOf(single, (n) => { n.querySelectorAll("input[type=radio]")[1].click(); n.querySelector("form").requestSubmit(); }), { n: 2 }, "single value");
  const multi = { id: "m", ask: { type: "multi_select", question: "Pick", min: 1, max: 2, options: [{ label: "A" }, { label: "B", value: "b" }, { label: "C", value: "c" }] } };
  eq(await answerOf(multi, (n) => { n.querySelectorAll("input[type=checkbox]")[0].click(); n.querySelectorAll("input[type=checkbox]")[2].click(); n.querySelector("form").requestSubmit(); }), ["A", "c"], "multi values (label when no value)");
  eq(await answerOf(multi, (n) => n.querySelector("form").requestSubmit()), undefined, "min enforced: nothing sent");
  const text = { id: "t", ask: { type: "text", question: "Name?", defaultValue: "Ada" } };
  eq(await answerOf(text, (n) => n.querySelector("form").requestSubmit()), "Ada", "text default");
  const conf = { id: "c", ask: { type: "confirm", question: "Sure?" } };
  eq(await answerOf(conf, (n) => button(n, "No")), false, "confirm no");
  const form = { id: "f", ask: { type: "form", question: "Details", questions: [{ type: "text", question: "Name" }, { type: "confirm", question: "Agree" }, { type: "single_select", question: "Size", options: [{ label: "S", value: "s" }] }] } };
  eq(await answerOf(form, (n) => {
    n.querySelector("input[type=text]").value = "Bob";
    n.querySelector("input[type=checkbox]").click();
    n.querySelector("input[type=radio]").click();
    n.querySelector("form").requestSubmit();
  }), { type: "form", answers: [{ question: "Name", answer: "Bob" }, { question: "Agree", answer: true }, { question: "Size", answer: "s" }] }, "form answer");
});

await test("ask number", async () => {
  const num = { id: "n", ask: { type: "number", question: "Age?", integer: true, minimum: 0, defaultValue: 30 } };
  eq(await answerOf(num, (n) => n.querySelector("form").requestSubmit()), 30, "number default");
  eq(await answerOf(num, (n) => { n.querySelector("input[type=number]").value = "41"; n.querySelector("form").requestSubmit(); }), 41, "number typed");
  eq(await answerOf(num, (n) => { n.querySelector("input[type=number]").value = "2.5"; n.querySelector("form").requestSubmit(); }), undefined, "integer enforced: nothing sent");
});

await test("ask shows the server's refusal and stays answerable", async () => {
  const node = renderAsk({ id: "x", ask: { type: "confirm", question: "Q" } }, async () => { throw new Error("answer is not true or false"); });
  mount(node);
  button(node, "Yes");
  await new Promise((r) => setTimeout(r, 0));
  ok(node.textContent.includes("answer is not true or false"), "refusal shown");
  ok(![...node.querySelectorAll("button")].some((b) => b.disabled), "buttons usable again");
});

await test("dom helpers", () => {
  ok(!safeURL("javascript:x") && !safeURL(" vbscript:x") && !safeURL("//evil.test/x"), "unsafe urls refused");
  ok(safeURL("https://a.test") && safeURL("#x") && safeURL("docs/a.md") && safeURL("mailto:a@b.test"), "safe urls accepted");
  eq([formatDuration(850), formatDuration(2400), formatDuration(65000)], ["850 ms", "2.4 s", "1 m 05 s"], "durations");
  const el = h("a", { href: "javascript:alert(1)" }, "x");
  ok(!el.hasAttribute("href"), "h() drops an unsafe href");
});

await test("viz shell-output: ANSI colours drawn, escapes gone, the command once", () => {
  const box = mount(renderVisualization({ type: "shell-output", command: "make test", exitCode: 1,
    stdout: "\x1b[1;31mFAIL\x1b[0m pkg \x1b[32mok\x1b[39m done\x1b[2K", stderr: "\x1b[38;5;208mwarn\x1b[0m" }));
  const red = box.querySelector(".stdout .ansi-fg-1.ansi-bold");
  ok(red && red.textContent === "FAIL", "bold red FAIL");
  ok(box.querySelector(".stdout .ansi-fg-2")?.textContent === "ok", "green ok");
  ok(!box.textContent.includes("\x1b"), "no escape left in the text");
  ok(box.querySelector(".stderr").textContent.includes("warn"), "a 256-colour code keeps its text");
  eq(box.textContent.split("make test").length - 1, 1, "the command is shown once");
  const multi = mount(renderVisualization({ type: "shell-output", command: "a &&\nb", stdout: "x", exitCode: 0 }));
  ok(multi.querySelector(".shell-cmd"), "a command of several lines is shown whole in the body");
});

await test("viz tall cards are capped with Show all; copy buttons", () => {
  const content = Array.from({ length: 120 }, (_, i) => `line ${i + 1}`).join("\n");
  const box = mount(renderVisualization({ type: "code", path: "big.txt", content }));
  const cap = box.querySelector(".capped");
  ok(cap, "a 120-line code card is capped");
  ok(cap.clientHeight < cap.scrollHeight, "the capped box hides the rest");
  const btn = box.querySelector("button.show-all");
  ok(btn && btn.textContent.includes("120 lines"), "Show all names the lines");
  btn.click();
  ok(cap.clientHeight >= cap.scrollHeight - 1 && btn.getAttribute("aria-expanded") === "true", "Show all shows everything");
  ok(box.querySelector(".copy-bar button.copy"), "code has a Copy button");
  const table = mount(renderVisualization({ type: "table", columns: ["n"], rows: Array.from({ length: 40 }, (_, i) => ({ n: i })) }));
  ok(table.querySelector(".capped") && table.querySelector("button.show-all").textContent.includes("40 rows"), "a 40-row table is capped");
  const small = mount(renderVisualization({ type: "code", path: "s.txt", content: "one\ntwo" }));
  ok(!small.querySelector(".capped"), "a short card is not capped");
  const diff = mount(renderVisualization(vizCases.diff[0]));
  ok(diff.querySelector(".copy-bar button.copy"), "a diff has a Copy button");
  ok(!diff.querySelector(".sign[aria-label]"), "diff signs carry no aria-label (aria-prohibited-attr)");
  ok(diff.querySelector("tr.removed .sr-only")?.textContent.includes("removed"), "a removed line says so in words");
  const shell = mount(renderVisualization({ type: "shell-output", command: "x", stdout: "y", exitCode: 0 }));
  ok(shell.querySelector(".copy-bar button.copy"), "shell output has a Copy button");
});

await test("viz structured-response: nested data as a tree, not JSON in cells", () => {
  const box = mount(renderVisualization({ type: "structured-response", formatName: "Deep", data: {
    owner: { name: "Ada", address: { city: "London" } },
    items: [{ id: 1, meta: { tag: "a" } }, { id: 2, meta: { tag: "b" } }] } }));
  ok(box.querySelector("details.value-tree"), "a nested object is a foldable branch");
  const cells = [...box.querySelectorAll("table.data td")].map((td) => td.textContent);
  ok(cells.length && !cells.some((t) => t.includes("{")), `no JSON in table cells: ${JSON.stringify(cells)}`);
  ok(box.textContent.includes("London") && box.textContent.includes("tag"), "nested values drawn");
});

// ---- @path mentions ------------------------------------------------------------------------

await test("mentions: fuzzy ranks letters in a row and in the file's name first", () => {
  const paths = ["src/main.go", "src/mainly.txt", "docs/manual.md", "README.md", "internal/server/main_test.go"];
  eq(fuzzy("main", paths).slice(0, 2), ["src/main.go", "src/mainly.txt"], "main");
  eq(fuzzy("smn", paths).includes("README.md"), false, "letters out of order leave a path out");
  eq(fuzzy("MAN", paths)[0], "docs/manual.md", "case is ignored");
  eq(fuzzy("", paths).length, paths.length, "an empty query offers every path");
});

await test("mentions: a message names the files taken from the list or written out", () => {
  const input = h("textarea");
  mount(input);
  const m = new Mentions(input, () => "ws_x");
  m.paths = ["src/a.go", "b.txt"];
  m.chosen.add("notes/c.md");
  eq(m.filesIn("see @src/a.go, @b.txt. and @notes/c.md and @nope.txt and mail@b.txt"),
    [{ path: "src/a.go" }, { path: "b.txt" }, { path: "notes/c.md" }], "files");
  ok(input.parentNode.querySelector("[role=listbox]#mention-list") && input.getAttribute("aria-controls") === "mention-list", "the box controls the list beside it");
});

window.__done = true;
