// The files page (#/files/<workspace>): the workspace's folder as a tree whose folders load
// when opened, each entry with its git mark, and a preview of the chosen file: text with
// highlighting (the code visualization), an image drawn, anything else described. The
// server decides what may be read (docs/api.md, "Files"): nothing outside the workspace,
// no file that may hold secrets.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { renderVisualization } from "./viz.js";
import { imageElement } from "./chat.js";
import { errorText } from "./ui.js";

// What each git mark is called and shown as.
const GIT_MARKS = {
  modified: ["M", "modified"], added: ["A", "added"], untracked: ["U", "untracked"],
  deleted: ["D", "deleted"], changed: ["•", "holds changes"],
};

/** gitMark is an entry's git status as a letter, with its word for screen readers. */
export function gitMark(status) {
  const m = GIT_MARKS[status];
  if (!m) return null;
  return h("span", { class: `git-mark git-${status}`, title: m[1] },
    h("span", { "aria-hidden": "true" }, m[0]), h("span", { class: "sr-only" }, ` (${m[1]})`));
}

export class FilesView {
  constructor(app, workspaceId) {
    this.app = app;
    this.workspaceId = workspaceId || app.currentWorkspaceId();
    this.el = h("section", { class: "files-view", "aria-labelledby": "files-title" });
    this.selected = null; // the button of the file shown
  }

  async mount(container) {
    const ws = this.app.workspaces();
    replace(container, this.el);
    if (!ws.length) {
      replace(this.el, h("h2", { id: "files-title" }, "Files"), h("p", null, "No workspace yet: create one in the menu to browse its files."));
      return;
    }
    const picker = h("select", { id: "files-workspace", onchange: () => { location.hash = `#/files/${enc(picker.value)}`; } },
      ws.map((w) => h("option", { value: w.id, selected: w.id === this.workspaceId }, w.name)));
    this.tree = h("ul", { class: "file-tree", role: "list" });
    this.preview = h("section", { class: "file-preview", "aria-label": "Preview", "aria-live": "polite" },
      h("p", { class: "muted" }, "Choose a file to see it here."));
    this.status = h("p", { class: "muted small", role: "status" });
    replace(this.el,
      h("div", { class: "files-head" }, h("h2", { id: "files-title" }, "Files"),
        h("label", { for: "files-workspace" }, "Workspace"), picker, this.status),
      h("div", { class: "files-layout" },
        h("nav", { class: "file-tree-wrap", "aria-label": "Files of the workspace" }, this.tree), this.preview));
    await this.loadFolder("", this.tree);
  }

  unmount() {}

  /** loadFolder lists a folder of the workspace into list (its entries, folders closed). */
  async loadFolder(path, list) {
    replace(list, h("li", { class: "muted small" }, "Loading…"));
    let res;
    try {
      res = await api("GET", `/api/workspaces/${enc(this.workspaceId)}/files?path=${enc(path)}`);
    } catch (err) {
      replace(list, h("li", { class: "error", role: "alert" }, `Cannot list ${path || "the workspace"}: ${errorText(err)}`));
      return;
    }
    if (path === "") replace(this.status, res.git ? "Marks: git status of the workspace." : "Not a git repository: no marks.");
    const entries = res.entries || [];
    replace(list, entries.length ? entries.map((e) => this.entryItem(e)) : h("li", { class: "muted small" }, "Empty folder."));
  }

  entryItem(e) {
    const mark = gitMark(e.git);
    if (e.git === "deleted" && e.type === "file") {
      return h("li", { class: "file-entry deleted", dataset: { path: e.path } }, h("span", { class: "file-name" }, e.name), mark);
    }
    if (e.type === "dir") {
      const children = h("ul", { role: "list", hidden: true });
      const btn = h("button", {
        type: "button", class: "file-entry-btn dir", "aria-expanded": "false", dataset: { path: e.path },
        onclick: async () => {
          const open = btn.getAttribute("aria-expanded") !== "true";
          btn.setAttribute("aria-expanded", String(open));
          children.hidden = !open;
          if (open && !children.dataset.loaded) {
            children.dataset.loaded = "1";
            await this.loadFolder(e.path, children);
          }
        },
      }, h("span", { class: "twisty", "aria-hidden": "true" }), h("span", { class: "file-name" }, e.name + "/"), mark);
      return h("li", { class: "file-entry" }, btn, children);
    }
    const btn = h("button", { type: "button", class: "file-entry-btn file", dataset: { path: e.path }, onclick: () => this.show(e, btn) },
      h("span", { class: "file-name" }, e.name), e.type === "link" ? h("span", { class: "muted small" }, " → link") : null,
      e.sensitive ? h("span", { class: "muted small" }, " (content withheld)") : null, mark);
    return h("li", { class: "file-entry" }, btn);
  }

  /** show previews a file: text highlighted, an image drawn, anything else described. */
  async show(entry, btn) {
    this.selected?.removeAttribute("aria-current");
    this.selected = btn;
    btn.setAttribute("aria-current", "true");
    const head = (fc) => h("h3", { class: "preview-path" }, h("code", null, entry.path), " ", gitMark(fc?.git || entry.git),
      fc ? h("span", { class: "muted small" }, ` ${sizeText(fc.size)} · ${fc.mediaType}`) : null);
    replace(this.preview, head(null), h("p", { class: "muted small" }, "Loading…"));
    let fc;
    try {
      fc = await api("GET", `/api/workspaces/${enc(this.workspaceId)}/files/content?path=${enc(entry.path)}`);
    } catch (err) {
      replace(this.preview, head(null), h("p", { class: "error", role: "alert" }, errorText(err)));
      return;
    }
    if (this.selected !== btn) return; // another file was chosen meanwhile
    let body;
    if (fc.kind === "text") {
      body = [renderVisualization({ type: "code", path: fc.path, content: fc.text }),
        fc.truncated ? h("p", { class: "muted small" }, `Only the first ${sizeText(fc.text.length)} of ${sizeText(fc.size)} are shown.`) : null];
    } else if (fc.kind === "image" && fc.data) {
      body = h("div", { class: "file-image" }, imageElement(fc.mediaType, fc.data, `${fc.path} (image)`));
    } else if (fc.kind === "image") {
      body = h("p", null, `An image of ${sizeText(fc.size)}: too large to show here.`);
    } else {
      body = h("p", null, `A binary file (${fc.mediaType}, ${sizeText(fc.size)}): not shown.`);
    }
    replace(this.preview, head(fc), body);
  }
}

function sizeText(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1048576).toFixed(1)} MiB`;
}
