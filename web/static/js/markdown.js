// A small Markdown renderer that builds DOM nodes directly (never markup strings): headings,
// paragraphs, emphasis, strong, strikethrough, inline code, fenced and indented code (with
// highlighting), block quotes, ordered/unordered/task lists with nesting, GFM tables, rules,
// links and autolinks. Raw HTML in the source is shown as text. Images are never fetched
// (no request may leave the machine): they become a link that names them.

import { h } from "./dom.js";
import { highlight } from "./highlight.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const LIST_ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+(.*))?$/;
const TABLE_SEP = /^ {0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const MAX_DEPTH = 12; // nesting beyond this is shown flat, so hostile input cannot exhaust the stack

/** renderMarkdown returns a <div class="md"> holding the rendered source. */
export function renderMarkdown(source) {
  const root = h("div", { class: "md" });
  for (const node of blocks(String(source ?? "").replace(/\r\n?/g, "\n").split("\n"), 0)) root.appendChild(node);
  return root;
}

function blocks(lines, depth) {
  const out = [];
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) out.push(h("p", null, inline(para.join("\n").trim(), depth)));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*$/.test(line)) {
      flush();
      i++;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      flush();
      const fence = m[1];
      const lang = m[2] || "";
      const body = [];
      i++;
      while (i < lines.length && !new RegExp("^ {0,3}" + fence[0] + "{" + fence.length + ",}\\s*$").test(lines[i])) {
        body.push(lines[i]);
        i++;
      }
      i++; // the closing fence (or the end)
      out.push(codeBlock(body.join("\n"), lang));
      continue;
    }
    if (para.length === 0 && /^( {4}|\t)/.test(line)) {
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || /^\s*$/.test(lines[i]))) {
        body.push(lines[i].replace(/^( {4}|\t)/, ""));
        i++;
      }
      while (body.length && /^\s*$/.test(body[body.length - 1])) body.pop();
      out.push(codeBlock(body.join("\n"), ""));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      flush();
      out.push(h("h" + m[1].length, null, inline(m[2] || "", depth)));
      i++;
      continue;
    }
    if (RULE.test(line)) {
      flush();
      out.push(h("hr"));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      flush();
      const body = [];
      while (i < lines.length && !/^\s*$/.test(lines[i])) {
        const q = QUOTE.exec(lines[i]);
        body.push(q ? q[1] : lines[i]);
        i++;
      }
      out.push(h("blockquote", null, depth < MAX_DEPTH ? blocks(body, depth + 1) : h("p", null, body.join("\n"))));
      continue;
    }
    if ((m = LIST_ITEM.exec(line)) && (para.length === 0 || m[4])) {
      flush();
      const [node, next] = list(lines, i, depth);
      out.push(node);
      i = next;
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      flush();
      const [node, next] = table(lines, i, depth);
      out.push(node);
      i = next;
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
  return out;
}

function codeBlock(code, lang) {
  const attrs = { class: "code-block" };
  if (lang) attrs["data-lang"] = lang;
  return h("pre", attrs, h("code", null, highlight(code, lang)));
}

function list(lines, start, depth) {
  const first = LIST_ITEM.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const baseIndent = first[1].length;
  const items = [];
  let i = start;
  let loose = false;
  while (i < lines.length) {
    const m = LIST_ITEM.exec(lines[i]);
    if (!m || m[1].length !== baseIndent || /\d/.test(m[2]) !== ordered) break;
    const contentIndent = baseIndent + m[2].length + 1;
    const body = [m[4] || ""];
    i++;
    while (i < lines.length) {
      const l = lines[i];
      if (/^\s*$/.test(l)) {
        // A blank line ends the item unless indented content follows.
        const nextLine = lines[i + 1];
        if (nextLine !== undefined && indentOf(nextLine) >= contentIndent) {
          body.push("");
          loose = true;
          i++;
          continue;
        }
        break;
      }
      const sub = LIST_ITEM.exec(l);
      if (sub && sub[1].length <= baseIndent) break;
      if (indentOf(l) >= Math.min(contentIndent, baseIndent + 2) || !sub) {
        if (!sub && indentOf(l) < baseIndent + 2 && (FENCE.test(l) || HEADING.test(l) || RULE.test(l) || QUOTE.test(l))) break;
        body.push(l.slice(Math.min(indentOf(l), contentIndent)));
        i++;
        continue;
      }
      break;
    }
    items.push(body);
    // Blank lines between items of one list make it loose.
    if (i < lines.length && /^\s*$/.test(lines[i])) {
      const after = LIST_ITEM.exec(lines[i + 1] || "");
      if (after && after[1].length === baseIndent) {
        loose = true;
        i++;
      }
    }
  }
  const attrs = {};
  if (ordered) {
    const n = parseInt(first[2], 10);
    if (n !== 1) attrs.start = n;
  }
  const el = h(ordered ? "ol" : "ul", attrs);
  for (const body of items) {
    const li = h("li");
    const task = /^\[([ xX])\][ \t]+/.exec(body[0]);
    if (task) {
      body[0] = body[0].slice(task[0].length);
      li.classList.add("task");
      li.appendChild(h("input", { type: "checkbox", disabled: true, checked: task[1] !== " ", "aria-label": task[1] !== " " ? "done" : "not done" }));
    }
    if (depth >= MAX_DEPTH) {
      li.appendChild(document.createTextNode(body.join("\n")));
    } else {
      const inner = blocks(body, depth + 1);
      for (const node of inner) {
        // A tight list item shows its text without a paragraph's margins.
        if (!loose && node.tagName === "P") while (node.firstChild) li.appendChild(node.firstChild);
        else li.appendChild(node);
      }
    }
    el.appendChild(li);
  }
  return [el, i];
}

function indentOf(line) {
  const m = /^[ \t]*/.exec(line);
  return m[0].replace(/\t/g, "    ").length;
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cur = "";
  let inCode = false;
  for (let k = 0; k < s.length; k++) {
    const c = s[k];
    if (c === "\\" && s[k + 1] === "|") {
      cur += "|";
      k++;
    } else if (c === "`") {
      inCode = !inCode;
      cur += c;
    } else if (c === "|" && !inCode) {
      cells.push(cur.trim());
      cur = "";
    } else cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

function table(lines, start, depth) {
  const head = splitRow(lines[start]);
  const aligns = splitRow(lines[start + 1]).map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : null));
  let i = start + 2;
  const rows = [];
  while (i < lines.length && lines[i].includes("|") && !/^\s*$/.test(lines[i])) {
    rows.push(splitRow(lines[i]));
    i++;
  }
  const cell = (tag, text, k) => h(tag, aligns[k] ? { style: `text-align:${aligns[k]}` } : null, inline(text, depth));
  const el = h("div", { class: "table-wrap" },
    h("table", null,
      h("thead", null, h("tr", null, head.map((c, k) => cell("th", c, k)))),
      h("tbody", null, rows.map((r) => h("tr", null, head.map((_, k) => cell("td", r[k] ?? "", k)))))));
  return [el, i];
}

const PUNCT = /[!-/:-@[-`{-~]/;

/** inline renders a paragraph's text: code, emphasis, links, autolinks, breaks, escapes. */
export function inline(text, depth = 0) {
  const out = [];
  let buf = "";
  const flush = () => {
    if (buf) out.push(document.createTextNode(buf));
    buf = "";
  };
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text[i];
    if (c === "\\" && i + 1 < n && PUNCT.test(text[i + 1])) {
      buf += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "\\" && text[i + 1] === "\n") {
      flush();
      out.push(h("br"));
      i += 2;
      continue;
    }
    if (c === "`") {
      let run = 1;
      while (text[i + run] === "`") run++;
      const ticks = "`".repeat(run);
      let close = text.indexOf(ticks, i + run);
      while (close >= 0 && text[close + run] === "`") close = text.indexOf(ticks, close + run + 1);
      if (close >= 0) {
        flush();
        let code = text.slice(i + run, close).replace(/\n/g, " ");
        if (/^ .* $/.test(code)) code = code.slice(1, -1);
        out.push(h("code", null, code));
        i = close + run;
        continue;
      }
      buf += ticks;
      i += run;
      continue;
    }
    if ((c === "[" || (c === "!" && text[i + 1] === "[")) && depth < MAX_DEPTH) {
      const link = parseLink(text, c === "!" ? i + 1 : i);
      if (link) {
        flush();
        if (c === "!") {
          // Never fetch: a remote image would be a request leaving the machine.
          out.push(h("a", { class: "md-image", href: link.url, target: "_blank", rel: "noopener noreferrer nofollow", title: link.url },
            "[image: " + (link.label || link.url) + "]"));
        } else {
          const a = h("a", { href: link.url, target: "_blank", rel: "noopener noreferrer nofollow", title: link.title || null }, inline(link.label, depth + 1));
          out.push(a);
        }
        i = link.end;
        continue;
      }
    }
    if (c === "<") {
      const m = /^<((?:https?:\/\/|mailto:)[^>\s]+)>/.exec(text.slice(i, i + 2048));
      if (m) {
        flush();
        out.push(h("a", { href: m[1], target: "_blank", rel: "noopener noreferrer nofollow" }, m[1]));
        i += m[0].length;
        continue;
      }
    }
    if ((c === "h" || c === "H") && (i === 0 || !/[A-Za-z0-9]/.test(text[i - 1]))) {
      const m = /^https?:\/\/[^\s<>"]*[^\s<>".,:;'!?)\]]/i.exec(text.slice(i, i + 2048));
      if (m) {
        flush();
        out.push(h("a", { href: m[0], target: "_blank", rel: "noopener noreferrer nofollow" }, m[0]));
        i += m[0].length;
        continue;
      }
    }
    if ((c === "*" || c === "_" || c === "~") && depth < MAX_DEPTH) {
      const em = parseEmphasis(text, i);
      if (em) {
        flush();
        out.push(h(em.tag, null, inline(em.inner, depth + 1)));
        i = em.end;
        continue;
      }
    }
    if (c === "\n") {
      if (/ {2,}$/.test(buf)) {
        buf = buf.replace(/ +$/, "");
        flush();
        out.push(h("br"));
      } else buf += "\n";
      i++;
      continue;
    }
    buf += c;
    i++;
  }
  flush();
  return out;
}

function parseLink(text, i) {
  // [label](url "title") with balanced brackets in the label.
  let depthB = 0;
  let j = i;
  for (; j < text.length; j++) {
    if (text[j] === "\\") {
      j++;
      continue;
    }
    if (text[j] === "[") depthB++;
    else if (text[j] === "]") {
      depthB--;
      if (depthB === 0) break;
    }
  }
  if (depthB !== 0 || text[j + 1] !== "(") return null;
  const m = /^\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+("[^"]*"|'[^']*'))?\s*\)/.exec(text.slice(j + 1, j + 1 + 4096));
  if (!m) return null;
  let url = m[1];
  if (url.startsWith("<")) url = url.slice(1, -1);
  return { label: text.slice(i + 1, j), url, title: m[2] ? m[2].slice(1, -1) : "", end: j + 1 + m[0].length };
}

function parseEmphasis(text, i) {
  const c = text[i];
  let run = 1;
  while (text[i + run] === c) run++;
  if (c === "~" && run !== 2) return null;
  const len = c === "~" ? 2 : Math.min(run, 2);
  const marker = c.repeat(len);
  const after = text[i + len];
  if (after === undefined || /\s/.test(after)) return null;
  if (c === "_" && i > 0 && /[A-Za-z0-9]/.test(text[i - 1])) return null; // snake_case stays text
  let k = i + len;
  while (k < text.length) {
    const close = text.indexOf(marker, k);
    if (close < 0) return null;
    const before = text[close - 1];
    const next = text[close + len];
    const ok = close > i + len && !/\s/.test(before) && next !== c && !(c === "_" && next !== undefined && /[A-Za-z0-9]/.test(next));
    if (ok) {
      const tag = c === "~" ? "del" : len === 2 ? "strong" : "em";
      return { tag, inner: text.slice(i + len, close), end: close + len };
    }
    k = close + len;
    // Skip a run of the same character, e.g. "***" inside the text.
    while (text[k] === c) k++;
  }
  return null;
}
