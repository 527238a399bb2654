// @path mentions in the message box: typing @ offers the workspace's files, matched
// fuzzily as the person types on, in a listbox above the box (↑/↓ to move, Enter or Tab to
// take, Escape to close; the box keeps the focus, aria-activedescendant names the option).
// A sent message names the files it mentions (`files` of the turn), and the server attaches
// their content (docs/api.md). Also: images dropped on the composer are attached.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";

const SHOWN = 8; // options at most
const MAX_FILES = 10; // a message's mentions at most (the server's harness.MaxResources)

export class Mentions {
  /** input is the message box (already in the page); workspaceId gives its session's workspace. */
  constructor(input, workspaceId) {
    this.input = input;
    this.workspaceId = workspaceId;
    this.paths = null; // the workspace's files, loaded at the first @
    this.chosen = new Set(); // paths taken from the list
    this.options = [];
    this.active = -1;
    this.list = h("ul", { id: "mention-list", class: "mention-list", role: "listbox", "aria-label": "Workspace files to mention", hidden: true });
    this.live = h("p", { class: "sr-only", role: "status", "aria-live": "polite" });
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", "mention-list");
    input.before(this.list, this.live);
    input.addEventListener("input", () => this.update());
    input.addEventListener("blur", () => setTimeout(() => { if (document.activeElement !== input) this.close(); }, 150));
  }

  /** query is the @word the caret is in, or null. */
  query() {
    const before = this.input.value.slice(0, this.input.selectionStart);
    const m = /(^|\s)@([^\s@]*)$/.exec(before);
    return m ? { text: m[2], start: before.length - m[2].length - 1 } : null;
  }

  async update() {
    const q = this.query();
    if (!q) return this.close();
    if (!this.paths) {
      const ws = this.workspaceId();
      try {
        const res = await api("GET", `/api/workspaces/${enc(ws)}/files/paths`);
        this.paths = res.paths || [];
      } catch {
        this.paths = [];
      }
      if (!this.query()) return this.close(); // the @ went while the list loaded
    }
    this.options = fuzzy(this.query().text, this.paths).slice(0, SHOWN);
    this.active = this.options.length ? 0 : -1;
    this.draw();
  }

  draw() {
    if (!this.options.length) {
      this.close();
      replace(this.live, "No workspace file matches.");
      return;
    }
    replace(this.list, this.options.map((p, i) => h("li", {
      id: `mention-opt-${i}`, role: "option", class: "mention-option", "aria-selected": String(i === this.active),
      // mousedown, not click: the box keeps the focus (and its caret).
      onmousedown: (e) => { e.preventDefault(); this.take(i); },
    }, p)));
    this.list.hidden = false;
    this.input.setAttribute("aria-activedescendant", `mention-opt-${this.active}`);
    replace(this.live, `${this.options.length} file${this.options.length === 1 ? "" : "s"}: ↑ and ↓ choose, Enter attaches.`);
  }

  close() {
    this.list.hidden = true;
    this.options = [];
    this.active = -1;
    this.input.removeAttribute("aria-activedescendant");
  }

  /** onKey handles the list's keys while it is open; true when the key was the list's. */
  onKey(e) {
    if (this.list.hidden || !this.options.length) return false;
    const n = this.options.length;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      this.active = (this.active + (e.key === "ArrowDown" ? 1 : n - 1)) % n;
      this.draw();
    } else if ((e.key === "Enter" || e.key === "Tab") && !e.shiftKey && !e.isComposing) {
      this.take(this.active);
    } else if (e.key === "Escape") {
      this.close();
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    return true;
  }

  /** take puts the i-th option in place of the @word: "@path ". */
  take(i) {
    const q = this.query();
    const p = this.options[i];
    if (!q || !p) return this.close();
    const v = this.input.value;
    const end = q.start + 1 + q.text.length;
    const inserted = `@${p} `;
    this.input.value = v.slice(0, q.start) + inserted + v.slice(end);
    const caret = q.start + inserted.length;
    this.input.setSelectionRange(caret, caret);
    this.chosen.add(p);
    this.close();
    replace(this.live, `${p} will be attached.`);
  }

  /** filesIn lists the workspace files text mentions: @path words taken from the list or naming a file. */
  filesIn(text) {
    const out = [];
    for (const m of String(text).matchAll(/(?:^|\s)@(\S+)/g)) {
      for (const cand of [m[1], m[1].replace(/[.,;:!?)\]}'"]+$/, "")]) {
        if ((this.chosen.has(cand) || this.paths?.includes(cand)) && !out.some((f) => f.path === cand)) {
          out.push({ path: cand });
          break;
        }
      }
    }
    return out.slice(0, MAX_FILES);
  }
}

/**
 * fuzzy ranks paths by how well query matches them as a subsequence (case-insensitive):
 * letters in a row, at the start of a name or after a separator count more; a shorter path
 * wins a tie. Paths that do not hold the query's letters in order are left out.
 */
export function fuzzy(query, paths) {
  const q = query.toLowerCase();
  const scored = [];
  for (const p of paths) {
    const s = score(q, p);
    if (s !== null) scored.push([s, p]);
  }
  scored.sort((a, b) => b[0] - a[0] || a[1].length - b[1].length || a[1].localeCompare(b[1]));
  return scored.map((x) => x[1]);
}

function score(q, path) {
  if (!q) return 0;
  const lower = path.toLowerCase();
  const nameAt = lower.lastIndexOf("/") + 1;
  let s = 0;
  let j = 0;
  let prev = -2;
  for (let i = 0; i < lower.length && j < q.length; i++) {
    if (lower[i] !== q[j]) continue;
    s += 1;
    if (i === prev + 1) s += 3; // in a row
    if (i === 0 || "/._-".includes(lower[i - 1])) s += 2; // a word's start
    if (i >= nameAt) s += 1; // in the file's own name
    prev = i;
    j++;
  }
  return j === q.length ? s : null;
}

/** acceptDrops attaches the files dropped on the composer (attach refuses what is not an image). */
export function acceptDrops(composer, attach) {
  const hasFiles = (e) => [...(e.dataTransfer?.types || [])].includes("Files");
  composer.addEventListener("dragover", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "copy";
    composer.classList.add("dropping");
  });
  composer.addEventListener("dragleave", () => composer.classList.remove("dropping"));
  composer.addEventListener("drop", (e) => {
    composer.classList.remove("dropping");
    const files = [...(e.dataTransfer?.files || [])];
    if (!files.length) return;
    e.preventDefault();
    attach(files);
  });
}
