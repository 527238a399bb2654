// Drawing a tool's visualization (REFERENCE §6) for people. Every type takes an optional
// title and collapsed; an unknown or malformed one is shown as its JSON rather than lost.

import { h, icon, plural, prettyJSON } from "./dom.js";
import { highlight, highlightLines, languageOf } from "./highlight.js";
import { renderMarkdown } from "./markdown.js";

const MAX_ROWS = 500; // rows of a table drawn at once; the rest behind "Show all"

const renderers = {
  diff: renderDiff,
  diffs: renderDiffs,
  code: renderCode,
  "file-list": renderFileList,
  table: renderTable,
  markdown: (v) => h("div", { class: "viz-markdown" }, renderMarkdown(v.content || ""),
    v.sourceUrl ? h("p", { class: "viz-source" }, "Source: ", h("a", { href: v.sourceUrl, target: "_blank", rel: "noopener noreferrer nofollow" }, v.sourceUrl)) : null),
  "shell-output": renderShell,
  "todo-list": renderTodos,
  "structured-response": renderStructured,
  none: (v) => h("p", { class: "viz-none" }, v.message || "Nothing to show."),
  images: renderImages,
};

const defaultTitles = {
  diff: (v) => v.path,
  diffs: (v) => plural((v.items || []).length, "changed file"),
  code: (v) => v.path,
  "file-list": (v) => plural(v.total ?? countFiles(v), "file"),
  table: (v) => plural(v.totalRows ?? (v.rows || []).length, "row"),
  markdown: () => "Document",
  "shell-output": (v) => "$ " + firstLine(v.command),
  "todo-list": (v) => `Todo list (${(v.items || []).filter((i) => i.status === "completed").length}/${(v.items || []).length} done)`,
  "structured-response": (v) => v.formatName || "Structured response",
  none: () => "",
  images: (v) => plural((v.images || []).length, "image"),
};

/**
 * renderVisualization draws v; a collapsed one starts closed behind its title. Returns a node
 * with class "viz viz-<type>" and data-viz-type for tests and styling.
 */
export function renderVisualization(v) {
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return h("pre", { class: "viz viz-unknown" }, v);
    }
  }
  if (!v || typeof v !== "object") return null;
  const draw = renderers[v.type];
  let body;
  try {
    body = draw ? draw(v) : h("pre", { class: "json" }, highlight(prettyJSON(v), "json"));
  } catch (err) {
    // A visualization that breaks a renderer is still shown as data, with what went wrong.
    body = h("div", null, h("p", { class: "error" }, `This ${v.type} visualization could not be drawn: ${err.message}`),
      h("pre", { class: "json" }, prettyJSON(v)));
  }
  const type = draw ? v.type : "unknown";
  const title = typeof v.title === "string" && v.title ? v.title : (defaultTitles[v.type] || (() => v.type || "Visualization"))(v);
  if (type === "none" && !v.title) return h("div", { class: "viz viz-none", dataset: { vizType: type } }, body);
  const details = h("details", { class: `viz viz-${type}`, dataset: { vizType: type }, open: v.collapsed !== true },
    h("summary", null, h("span", { class: "viz-title", title }, title), summaryBadges(v)),
    body);
  return details;
}

function summaryBadges(v) {
  if (v.type === "diff") return [" ", h("span", { class: "adds" }, "+" + (v.additions ?? 0)), " ", h("span", { class: "dels" }, "−" + (v.deletions ?? 0))];
  if (v.type === "shell-output") return [" ", exitBadge(v.exitCode)];
  if (v.type === "code" && v.created) return [" ", h("span", { class: "badge" }, "created")];
  return null;
}

function firstLine(s) {
  const t = String(s ?? "");
  const i = t.indexOf("\n");
  return i < 0 ? t : t.slice(0, i) + " …";
}

function countFiles(v) {
  return (v.files || []).length + (v.groups || []).reduce((n, g) => n + (g.files || []).length, 0);
}

function renderDiff(v) {
  const lang = languageOf(v.language, v.path);
  const rows = [];
  for (const hunk of v.hunks || []) {
    rows.push(h("tr", { class: "hunk" }, h("td", { class: "ln", colspan: 3 }, `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`)));
    for (const c of hunk.changes || []) {
      const sign = c.type === "added" ? "+" : c.type === "removed" ? "−" : " ";
      rows.push(h("tr", { class: "line " + (c.type || "context") },
        h("td", { class: "ln old" }, c.oldLineNumber ?? ""),
        h("td", { class: "ln new" }, c.newLineNumber ?? ""),
        // The sign is drawn for the eye; the line's kind is said in words for a reader.
        h("td", { class: "code" }, h("span", { class: "sign", "aria-hidden": "true" }, sign),
          c.type === "added" || c.type === "removed" ? h("span", { class: "sr-only" }, c.type + ": ") : null,
          highlight(c.content ?? "", lang))));
    }
  }
  if (!rows.length) rows.push(h("tr", null, h("td", { colspan: 3, class: "empty" }, "No line changes.")));
  // The path and the counts are in the summary line above.
  return h("div", null, copyBar(() => unifiedDiff(v)),
    capped(h("div", { class: "diff-wrap" }, h("table", { class: "diff" }, h("tbody", null, rows))), rows.length > CAP_LINES, `${rows.length} lines`));
}

/** unifiedDiff is a diff visualization as unified diff text, for the clipboard. */
function unifiedDiff(v) {
  const out = [`--- ${v.oldPath || v.path || ""}`, `+++ ${v.path || ""}`];
  for (const hunk of v.hunks || []) {
    out.push(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`);
    for (const c of hunk.changes || []) out.push((c.type === "added" ? "+" : c.type === "removed" ? "-" : " ") + (c.content ?? ""));
  }
  return out.join("\n") + "\n";
}

// CAP_LINES is how many lines (rows) a card shows before the rest waits behind "Show all".
const CAP_LINES = 30;

/**
 * capped holds a tall body to a fixed height with a "Show all" button that lets it grow
 * (and "Show less" to fold it again). Not tall: the body as it is.
 */
export function capped(body, tall, what, opts = {}) {
  if (!tall) return body;
  const box = h("div", { class: opts.tail ? "capped tail" : "capped" }, body);
  const btn = h("button", { type: "button", class: "link small show-all", "aria-expanded": "false",
    onclick: () => {
      const open = box.classList.toggle("expanded");
      btn.setAttribute("aria-expanded", String(open));
      btn.textContent = open ? "Show less" : `Show all (${what})`;
    } }, `Show all (${what})`);
  return h("div", { class: "cap-wrap" }, box, btn);
}

/**
 * resultText is the text a tool found, when its result is text: a string (an MCP tool's
 * text), a read file's or a listing's content, grep's matches, glob's files. Else null: the
 * card shows the JSON sent to the model only.
 */
export function resultText(result) {
  let r = result;
  if (typeof r === "string") {
    try {
      r = JSON.parse(r);
    } catch {
      return r || null;
    }
  }
  if (r && typeof r === "object" && "success" in r && ("result" in r || "data" in r)) r = r.result ?? r.data;
  if (typeof r === "string") return r || null;
  if (!r || typeof r !== "object") return null;
  if (typeof r.content === "string") return r.content || null;
  if (Array.isArray(r.matches)) return r.matches.map((m) => `${m.file}:${m.line}: ${m.content}`).join("\n") || null;
  if (Array.isArray(r.files) && r.files.every((f) => typeof f === "string")) return r.files.join("\n") || null;
  return null;
}

/** toolOutput is a tool's text result, folded under "Output" and held to a height. */
export function toolOutput(result) {
  const text = resultText(result);
  if (!text) return null;
  const n = text.split("\n").length;
  return h("details", { class: "tool-output" }, h("summary", null, "Output ", h("span", { class: "muted small" }, plural(n, "line"))),
    copyBar(() => text), capped(h("pre", { class: "output-text" }, text), n > CAP_LINES, plural(n, "line")));
}

/** copyBar is a small bar with a Copy button that copies what text() returns. */
export function copyBar(text, label = "Copy") {
  const btn = h("button", { type: "button", class: "link small copy", title: "Copy to the clipboard",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(text());
        btn.textContent = "Copied";
      } catch {
        btn.textContent = "Copy failed";
      }
      setTimeout(() => (btn.textContent = label), 1500);
    } }, label);
  return h("div", { class: "copy-bar" }, btn);
}

function renderDiffs(v) {
  const items = Array.isArray(v.items) ? v.items : [];
  if (!items.length) return h("p", { class: "empty" }, "No changes.");
  return h("div", { class: "diffs" }, items.map((d) => renderVisualization({ ...d, type: "diff" })));
}

function renderCode(v) {
  const lang = languageOf(v.language, v.path);
  const marked = new Set((v.highlightLines || []).map(Number));
  const lines = highlightLines(v.content ?? "", lang);
  if (lines.length > 1 && lines[lines.length - 1].length === 0 && String(v.content).endsWith("\n")) lines.pop();
  return h("div", { class: "code-wrap" },
    h("div", { class: "code-head" }, h("span", { class: "lang" }, lang), " · ", plural(v.lineCount ?? lines.length, "line"), copyBar(() => String(v.content ?? ""))),
    capped(h("table", { class: "code-lines" }, h("tbody", null, lines.map((nodes, i) =>
      h("tr", { class: marked.has(i + 1) ? "marked" : null }, h("td", { class: "ln" }, i + 1), h("td", { class: "code" }, nodes))))),
    lines.length > CAP_LINES, plural(lines.length, "line")));
}

const actionIcons = { created: ["+", "created"], modified: ["✎", "modified"], deleted: ["−", "deleted"] };
const groupIcons = { edit: "✎", plus: "+", trash: "✕", search: "⌕" };

function fileItem(f) {
  const [glyph, word] = actionIcons[f.action] || ["•", ""];
  return h("li", { class: "file " + (f.action || "") },
    icon(glyph), " ", h("span", { class: "path" }, f.path || ""),
    f.line !== undefined ? h("span", { class: "line-no" }, `:${f.line}`) : null,
    word ? [" ", h("span", { class: "badge " + word }, word)] : null,
    f.content ? h("pre", { class: "snippet" }, f.content) : null);
}

function renderFileList(v) {
  const parts = [];
  if (Array.isArray(v.files) && v.files.length) parts.push(h("ul", { class: "file-list" }, v.files.map(fileItem)));
  for (const g of v.groups || []) {
    parts.push(h("section", { class: "file-group" },
      h("h4", null, icon(groupIcons[g.icon] || "•"), " ", g.label || "", " ", h("span", { class: "muted" }, `(${(g.files || []).length})`)),
      h("ul", { class: "file-list" }, (g.files || []).map(fileItem))));
  }
  const shown = countFiles(v);
  if (typeof v.total === "number" && v.total > shown) parts.push(h("p", { class: "muted" }, `Showing ${shown} of ${v.total} files.`));
  if (!parts.length) parts.push(h("p", { class: "empty" }, "No files."));
  return h("div", null, parts);
}

function cellText(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** cellValue draws a table cell: text, or nested data as a tree (not JSON in the cell). */
function cellValue(value, depth) {
  if (value && typeof value === "object") return renderValue(value, depth + 1);
  return cellText(value);
}

function renderTable(v) {
  const cols = (v.columns || []).map((c) => (typeof c === "string" ? { key: c } : c));
  const rows = Array.isArray(v.rows) ? v.rows : [];
  const tbody = h("tbody");
  const drawRows = (limit) => {
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    for (const r of rows.slice(0, limit)) tbody.appendChild(h("tr", null, cols.map((c) => h("td", null, cellValue(r?.[c.key], 0)))));
  };
  drawRows(MAX_ROWS);
  const notes = [];
  if (rows.length > MAX_ROWS) {
    const btn = h("button", { type: "button", class: "link", onclick: () => { drawRows(rows.length); btn.remove(); } }, `Show all ${rows.length} rows`);
    notes.push(btn);
  }
  if (typeof v.totalRows === "number" && v.totalRows > rows.length) notes.push(h("p", { class: "muted" }, `Showing ${rows.length} of ${v.totalRows} rows.`));
  else if (v.hasMore) notes.push(h("p", { class: "muted" }, "More rows exist than are shown."));
  return h("div", null, capped(h("div", { class: "table-wrap" },
    h("table", { class: "data" },
      h("thead", null, h("tr", null, cols.map((c) => h("th", { scope: "col", style: c.width ? `width:${cssWidth(c.width)}` : null }, c.label || c.key || "(unnamed)")))),
      tbody)), rows.length > CAP_LINES / 2, plural(rows.length, "row")),
    notes);
}

function cssWidth(w) {
  if (typeof w === "number" && isFinite(w)) return `${w}px`;
  const s = String(w);
  return /^\d+(\.\d+)?(px|%|em|rem|ch)$/.test(s) ? s : "auto";
}

function exitBadge(code) {
  const ok = code === 0;
  return h("span", { class: "badge exit " + (ok ? "ok" : "fail") }, `exit ${code ?? "?"}`);
}

function renderShell(v) {
  const cmd = String(v.command ?? "");
  // The summary line says "$ command" already: the command is repeated here only when the
  // summary could not show it whole (a title of the tool's own, or several lines).
  // The summary is one line, cut with an ellipsis: a long command is shown whole here.
  const showCmd = (typeof v.title === "string" && v.title) || cmd.includes("\n") || cmd.length > 60;
  const lines = (t) => (t ? String(t).split("\n").length : 0);
  const out = [];
  if (v.stdout) out.push(h("pre", { class: "stdout" }, h("span", { class: "sr-only" }, "Standard output: "), ansi(v.stdout)));
  if (v.stderr) out.push(h("pre", { class: "stderr" }, h("span", { class: "sr-only" }, "Standard error: "), ansi(v.stderr)));
  return h("div", { class: "shell" },
    showCmd ? h("div", { class: "shell-cmd" }, h("span", { class: "prompt", "aria-hidden": "true" }, "$ "), h("code", null, cmd)) : null,
    out.length ? copyBar(() => stripANSI([v.stdout, v.stderr].filter(Boolean).join("\n"))) : null,
    // A command's end says how it went: long output is held to its tail.
    out.length ? capped(h("div", null, out), lines(v.stdout) + lines(v.stderr) > CAP_LINES, plural(lines(v.stdout) + lines(v.stderr), "line"), { tail: true }) : null,
    !v.stdout && !v.stderr ? h("p", { class: "muted" }, "No output.") : null);
}

// ANSI escape sequences: SGR (colours, bold) are drawn; every other escape is dropped.
const ESCAPES = /\x1b\[[0-9;?]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

export function stripANSI(text) {
  return String(text).replace(ESCAPES, "");
}

/**
 * ansi draws terminal output with its SGR colours as spans of classes (ansi-fg-N for the
 * 16 colours, ansi-bold, ansi-dim, ansi-italic, ansi-underline); 256-colour and RGB codes
 * fall back to no colour. Text stays text: nothing of it becomes markup.
 */
export function ansi(text) {
  const src = String(text);
  const nodes = [];
  let state = { fg: null, bg: null, bold: false, dim: false, italic: false, underline: false };
  let last = 0;
  const flush = (chunk) => {
    if (!chunk) return;
    const cls = [];
    if (state.fg !== null) cls.push(`ansi-fg-${state.fg}`);
    if (state.bg !== null) cls.push(`ansi-bg-${state.bg}`);
    for (const k of ["bold", "dim", "italic", "underline"]) if (state[k]) cls.push(`ansi-${k}`);
    nodes.push(cls.length ? h("span", { class: cls.join(" ") }, chunk) : document.createTextNode(chunk));
  };
  for (const m of src.matchAll(ESCAPES)) {
    flush(src.slice(last, m.index));
    last = m.index + m[0].length;
    const sgr = /^\x1b\[([0-9;]*)m$/.exec(m[0]);
    if (!sgr) continue;
    const codes = sgr[1] === "" ? [0] : sgr[1].split(";").map(Number);
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c === 0) state = { fg: null, bg: null, bold: false, dim: false, italic: false, underline: false };
      else if (c === 1) state.bold = true;
      else if (c === 2) state.dim = true;
      else if (c === 3) state.italic = true;
      else if (c === 4) state.underline = true;
      else if (c === 22) state.bold = state.dim = false;
      else if (c === 23) state.italic = false;
      else if (c === 24) state.underline = false;
      else if (c >= 30 && c <= 37) state.fg = c - 30;
      else if (c >= 90 && c <= 97) state.fg = c - 90 + 8;
      else if (c === 39) state.fg = null;
      else if (c >= 40 && c <= 47) state.bg = c - 40;
      else if (c >= 100 && c <= 107) state.bg = c - 100 + 8;
      else if (c === 49) state.bg = null;
      else if (c === 38 || c === 48) {
        // 38;5;N or 38;2;R;G;B: skipped (no colour), with their arguments.
        i += codes[i + 1] === 5 ? 2 : codes[i + 1] === 2 ? 4 : 0;
      }
    }
  }
  flush(src.slice(last));
  return nodes;
}

const todoGlyphs = { pending: "○", in_progress: "◐", completed: "●", cancelled: "⊘" };
const todoWords = { pending: "pending", in_progress: "in progress", completed: "completed", cancelled: "cancelled" };

function renderTodos(v) {
  const items = Array.isArray(v.items) ? v.items : [];
  if (!items.length) return h("p", { class: "empty" }, "No items.");
  return h("ul", { class: "todos" }, items.map((t) =>
    h("li", { class: `todo ${t.status || ""}` },
      h("span", { class: "todo-status", title: todoWords[t.status] || t.status }, icon(todoGlyphs[t.status] || "○"), h("span", { class: "sr-only" }, todoWords[t.status] || t.status || "")),
      " ", h("span", { class: "todo-content" }, t.content ?? ""),
      t.priority ? [" ", h("span", { class: `badge priority ${t.priority}` }, t.priority)] : null)));
}

function renderStructured(v) {
  return h("div", { class: "structured" },
    v.formatName ? h("p", { class: "muted" }, "Format: ", h("strong", null, v.formatName)) : null,
    renderValue(v.data, 0),
    h("details", { class: "raw" }, h("summary", null, "JSON"), h("pre", { class: "json" }, highlight(prettyJSON(v.data), "json"))),
    v.schema ? h("details", { class: "raw" }, h("summary", null, "Schema"), h("pre", { class: "json" }, highlight(prettyJSON(v.schema), "json"))) : null);
}

/** renderValue draws JSON data for reading: objects as key/value lists, arrays as lists. */
export function renderValue(value, depth) {
  if (depth > 8) return h("code", null, JSON.stringify(value));
  if (Array.isArray(value)) {
    if (!value.length) return h("span", { class: "muted" }, "(empty list)");
    if (value.every((x) => x && typeof x === "object" && !Array.isArray(x)) && value.length > 1) {
      const keys = [...new Set(value.flatMap((x) => Object.keys(x)))].slice(0, 20);
      // Rows of flat records read best as a table; nested values in it are drawn as trees.
      return h("div", { class: "table-wrap" }, h("table", { class: "data" },
        h("thead", null, h("tr", null, keys.map((k) => h("th", { scope: "col" }, k || "(unnamed)")))),
        h("tbody", null, value.slice(0, MAX_ROWS).map((x) => h("tr", null, keys.map((k) => h("td", null, cellValue(x[k], depth))))))));
    }
    return h("ol", { class: "value-list" }, value.slice(0, MAX_ROWS).map((x) => h("li", null, renderValue(x, depth + 1))));
  }
  if (value && typeof value === "object") {
    const entries = Object.entries(value);
    if (!entries.length) return h("span", { class: "muted" }, "(empty)");
    const map = h("dl", { class: "value-map" }, entries.map(([k, x]) => [h("dt", null, k), h("dd", null, renderValue(x, depth + 1))]));
    // Below the top, a nested object is a branch of the tree that can be folded.
    if (depth === 0) return map;
    return h("details", { class: "value-tree", open: depth < 3 }, h("summary", { class: "muted small" }, plural(entries.length, "field")), map);
  }
  if (typeof value === "string") return h("span", { class: "value-string" }, value);
  return h("code", { class: "value-scalar" }, String(value));
}

// Raster types only: an SVG could carry script.
const SHOWN_IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/** renderImages draws an images visualization (an MCP tool's image results). */
function renderImages(v) {
  const images = (v.images || []).map((im, i) => {
    const alt = typeof im.alt === "string" && im.alt ? im.alt : `Image ${i + 1} of the result`;
    if (!SHOWN_IMAGE_TYPES.includes(im.mimeType) || typeof im.data !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(im.data)) {
      return h("p", { class: "muted small" }, `[an image that cannot be shown: ${im.mimeType || "no media type"}]`);
    }
    const img = h("img", { class: "viz-image", alt });
    // Set here, not through h (whose src allows http, https and relative URLs only): a data
    // URL of a checked raster type and base64 bytes can only be that image.
    img.src = `data:${im.mimeType};base64,${im.data}`;
    return img;
  });
  const omitted = Number(v.omitted) > 0 ? h("p", { class: "muted small" }, `${plural(Number(v.omitted), "more image")} not shown (too large, or of a type not drawn here).`) : null;
  return h("div", { class: "viz-images" }, images, omitted);
}
