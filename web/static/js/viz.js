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
    h("summary", null, h("span", { class: "viz-title" }, title), summaryBadges(v)),
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
        h("td", { class: "code" }, h("span", { class: "sign", "aria-label": c.type }, sign), highlight(c.content ?? "", lang))));
    }
  }
  if (!rows.length) rows.push(h("tr", null, h("td", { colspan: 3, class: "empty" }, "No line changes.")));
  // The path and the counts are in the summary line above.
  return h("div", { class: "diff-wrap" }, h("table", { class: "diff" }, h("tbody", null, rows)));
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
    h("div", { class: "code-head" }, h("span", { class: "lang" }, lang), " · ", plural(v.lineCount ?? lines.length, "line")),
    h("table", { class: "code-lines" }, h("tbody", null, lines.map((nodes, i) =>
      h("tr", { class: marked.has(i + 1) ? "marked" : null }, h("td", { class: "ln" }, i + 1), h("td", { class: "code" }, nodes))))));
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

function renderTable(v) {
  const cols = (v.columns || []).map((c) => (typeof c === "string" ? { key: c } : c));
  const rows = Array.isArray(v.rows) ? v.rows : [];
  const tbody = h("tbody");
  const drawRows = (limit) => {
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    for (const r of rows.slice(0, limit)) tbody.appendChild(h("tr", null, cols.map((c) => h("td", null, cellText(r?.[c.key])))));
  };
  drawRows(MAX_ROWS);
  const notes = [];
  if (rows.length > MAX_ROWS) {
    const btn = h("button", { type: "button", class: "link", onclick: () => { drawRows(rows.length); btn.remove(); } }, `Show all ${rows.length} rows`);
    notes.push(btn);
  }
  if (typeof v.totalRows === "number" && v.totalRows > rows.length) notes.push(h("p", { class: "muted" }, `Showing ${rows.length} of ${v.totalRows} rows.`));
  else if (v.hasMore) notes.push(h("p", { class: "muted" }, "More rows exist than are shown."));
  return h("div", { class: "table-wrap" },
    h("table", { class: "data" },
      h("thead", null, h("tr", null, cols.map((c) => h("th", { scope: "col", style: c.width ? `width:${cssWidth(c.width)}` : null }, c.label || c.key)))),
      tbody),
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
  return h("div", { class: "shell" },
    h("div", { class: "shell-cmd" }, h("span", { class: "prompt", "aria-hidden": "true" }, "$ "), h("code", null, v.command ?? ""), " ", exitBadge(v.exitCode)),
    v.stdout ? h("pre", { class: "stdout", "aria-label": "standard output" }, v.stdout) : null,
    v.stderr ? h("pre", { class: "stderr", "aria-label": "standard error" }, v.stderr) : null,
    !v.stdout && !v.stderr ? h("p", { class: "muted" }, "No output.") : null);
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
      return h("div", { class: "table-wrap" }, h("table", { class: "data" },
        h("thead", null, h("tr", null, keys.map((k) => h("th", { scope: "col" }, k)))),
        h("tbody", null, value.slice(0, MAX_ROWS).map((x) => h("tr", null, keys.map((k) => h("td", null, cellText(x[k]))))))));
    }
    return h("ol", { class: "value-list" }, value.slice(0, MAX_ROWS).map((x) => h("li", null, renderValue(x, depth + 1))));
  }
  if (value && typeof value === "object") {
    const entries = Object.entries(value);
    if (!entries.length) return h("span", { class: "muted" }, "(empty)");
    return h("dl", { class: "value-map" }, entries.map(([k, x]) => [h("dt", null, k), h("dd", null, renderValue(x, depth + 1))]));
  }
  if (typeof value === "string") return h("span", { class: "value-string" }, value);
  return h("code", { class: "value-scalar" }, String(value));
}
