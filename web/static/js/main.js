// jean2's web client: the page frame (menu of workspaces and sessions, navigation), the
// router (#/s/<session>, #/tools, #/schedules, #/settings), the server's own event log (tool reloads,
// asks of tool runs) and the keyboard shortcuts.

import { api, enc, EventStream, onDatabase, onUnauthorized } from "./api.js";
import { h, replace } from "./dom.js";
import { SessionView } from "./chat.js";
import { ToolsView } from "./tools.js";
import { TerminalView } from "./terminal.js";
import { FilesView } from "./files.js";
import { SettingsView, showShortcuts } from "./settings.js";
import { SchedulesView } from "./schedules.js";
import { mcpTrustNotice } from "./mcptrust.js";
import { confirmAction, databaseBanner, errorText, notify, openDialog, promptText } from "./ui.js";
import { providerNotice, searchBox, sessionMeta } from "./agent.js";
import "./pwa.js";

class App {
  constructor(root) {
    this.root = root;
    this.ws = []; // workspaces
    this.sessions = new Map(); // workspaceId → [Session]
    this.view = null;
    this.currentSession = null;
  }

  async start() {
    onUnauthorized(() => this.showSignIn());
    onDatabase(databaseBanner);
    try {
      await api("GET", "/api/settings");
    } catch (err) {
      if (err.status === 401) return; // the sign-in page is shown
    }
    if (this.signedOut) return;
    this.buildFrame();
    window.addEventListener("hashchange", () => this.route());
    document.addEventListener("keydown", (e) => this.onKey(e));
    await this.loadNav();
    this.serverLog = new EventStream("/api/ws", 0, {
      onHello: (f) => {
        // The log's history does not matter to the page (it loads the current state); only
        // what happens from now on does.
        if (this.serverLog) this.serverLog.after = Math.max(this.serverLog.after, f.lastSeq || 0);
      },
      onEvent: (ev) => this.onServerEvent(ev),
    });
    this.route();
  }

  /**
   * showSignIn replaces the page with how to sign in: the server answers nothing without its
   * token, which a browser gets once from a one-time address (docs/api.md#auth).
   */
  showSignIn() {
    if (this.signedOut) return;
    this.signedOut = true;
    this.serverLog?.close?.();
    const failed = location.hash === "#signin-failed";
    const code = (text) => h("code", null, text);
    document.title = "Sign in — jean2";
    replace(this.root, h("main", { class: "signin", id: "main" },
      h("h1", null, "Sign in to jean2"),
      failed ? h("p", { class: "error", role: "alert" }, "That sign-in address was used already or is older than an hour. Get a new one as below.") : null,
      h("p", null, "This jean2 server answers only browsers and programs that hold its token. This browser does not have it yet (or its sign-in expired)."),
      h("ol", null,
        h("li", null, "Open the sign-in address that ", code("jean2 serve"), " printed when it started (", code("http://…/auth?code=…"), "). It works once, within an hour."),
        h("li", null, "Or run ", code("jean2 signin"), " on the machine where the server runs: it prints a new address (", code("jean2 signin --open"), " opens it in the browser)."),
        h("li", null, "From another machine: ", code("jean2 serve --new-token"), " prints a token; open ", code("/auth?token=<token>"), " on this server once.")),
      h("p", { class: "muted small" }, "The browser then keeps the token in a cookie that pages of other sites cannot use, for 90 days."),
      h("p", null, h("button", { type: "button", class: "primary", onclick: () => { location.hash = ""; location.reload(); } }, "I signed in — try again"))));
  }

  buildFrame() {
    this.menuBtn = h("button", { type: "button", class: "menu-btn icon-btn", "aria-controls": "sidebar", "aria-expanded": "false", "aria-label": "Workspaces and sessions", onclick: () => this.toggleMenu() }, "☰");
    this.nav = h("nav", { class: "top-nav", "aria-label": "Pages" },
      h("a", { href: "#/", dataset: { page: "chat" } }, "Chat"),
      h("a", { href: "#/files", dataset: { page: "files" } }, "Files"),
      h("a", { href: "#/tools", dataset: { page: "tools" } }, "Tools"),
      h("a", { href: "#/schedules", dataset: { page: "schedules" } }, "Schedules"),
      h("a", { href: "#/settings", dataset: { page: "settings" } }, "Settings"),
      h("button", { type: "button", class: "icon-btn", "aria-label": "Keyboard shortcuts", title: "Keyboard shortcuts (?)", onclick: () => showShortcuts() }, "?"));
    this.sidebar = h("aside", { id: "sidebar", class: "sidebar", "aria-label": "Workspaces and sessions" });
    this.main = h("main", { id: "main", tabindex: "-1" });
    replace(this.root,
      h("a", { class: "skip-link", href: "#main", onclick: (e) => { e.preventDefault(); this.main.focus(); } }, "Skip to content"),
      h("header", { class: "topbar" }, this.menuBtn, h("h1", { class: "brand" }, "jean2"), this.nav),
      h("div", { class: "layout" }, this.sidebar, h("div", { class: "scrim", onclick: () => this.toggleMenu(false) }), this.main));
  }

  toggleMenu(open) {
    const want = open === undefined ? !document.body.classList.contains("menu-open") : open;
    document.body.classList.toggle("menu-open", want);
    this.menuBtn.setAttribute("aria-expanded", String(want));
    if (want) this.sidebar.querySelector("a, button")?.focus();
  }

  // ---- navigation data --------------------------------------------------------------------

  async loadNav() {
    try {
      const [wsRes, sRes] = await Promise.all([api("GET", "/api/workspaces"), api("GET", "/api/sessions")]);
      this.ws = wsRes.workspaces || [];
      this.sessions.clear();
      for (const s of sRes.sessions || []) {
        if (!this.sessions.has(s.workspaceId)) this.sessions.set(s.workspaceId, []);
        this.sessions.get(s.workspaceId).push(s);
      }
    } catch (err) {
      replace(this.sidebar, h("p", { class: "error", role: "alert" }, `Cannot load workspaces: ${errorText(err)}`));
      return;
    }
    this.drawSidebar();
  }

  drawSidebar() {
    const items = this.ws.map((w) => {
      // Most recently active first, as the server lists them.
      // A subagent's session is shown under the task call that started it, not here.
      const sessions = (this.sessions.get(w.id) || []).filter((s) => !s.parent).sort((a, b) => (Date.parse(b.updatedAt) || 0) - (Date.parse(a.updatedAt) || 0));
      return h("li", { class: "workspace", dataset: { workspaceId: w.id } },
        h("div", { class: "ws-head" },
          h("span", { class: "ws-name", title: w.path }, w.name),
          h("button", { type: "button", class: "icon-btn", "aria-label": `New session in ${w.name}`, title: "New session", onclick: () => this.newSession(w) }, "+"),
          h("a", { class: "icon-btn term-link", href: `#/w/${enc(w.id)}/terminal`, "aria-label": `Terminal in ${w.name}`, title: "Terminal" }, ">_"),
          h("button", { type: "button", class: "icon-btn", "aria-label": `Rename workspace ${w.name}`, title: "Rename workspace", onclick: () => this.renameWorkspace(w) }, "✎"),
          h("button", { type: "button", class: "icon-btn danger", "aria-label": `Delete workspace ${w.name}`, title: "Delete workspace", onclick: () => this.deleteWorkspace(w) }, "✕")),
        h("div", { class: "ws-path muted small" }, w.path),
        mcpTrustNotice(w),
        h("ul", { class: "sessions" }, sessions.length ? sessions.map((s) => h("li", { class: "session", dataset: { sessionId: s.id } },
          h("a", { href: `#/s/${enc(s.id)}`, "aria-current": this.currentSession === s.id ? "page" : null }, s.title || "Untitled session", sessionBadge(s)),
          h("button", { type: "button", class: "icon-btn", "aria-label": `Rename session ${s.title || "Untitled session"}`, title: "Rename", onclick: () => this.renameSession(s) }, "✎"),
          h("button", { type: "button", class: "icon-btn danger", "aria-label": `Delete session ${s.title || "Untitled session"}`, title: "Delete", onclick: () => this.deleteSession(s) }, "✕"),
          sessionMeta(s)))
          : h("li", { class: "muted small" }, "No sessions yet.")));
    });
    // The list is redrawn on every live update (a session's status, its title), so neither
    // the search box nor the focus may go with it: the search box stays in place (taken out
    // of the page even for a moment, it would lose the focus and the keys typed next), and
    // a focused link or button of the list is focused again in the new list.
    if (!this.searchEl || this.searchEl.parentNode !== this.sidebar) {
      this.searchEl ||= searchBox();
      this.sidebarList = h("div", { class: "sidebar-list" });
      replace(this.sidebar, this.searchEl, this.sidebarList);
    }
    const focused = this.sidebarList.contains(document.activeElement) ? focusKey(document.activeElement) : "";
    replace(this.sidebarList,
      h("div", { class: "sidebar-head" }, h("h2", null, "Workspaces"),
        h("button", { type: "button", id: "new-workspace", onclick: () => this.newWorkspace() }, "New workspace")),
      this.ws.length ? h("ul", { class: "workspaces" }, items) : h("p", { class: "muted small" }, "No workspace yet: a workspace is a folder the tools work in."));
    if (focused) this.sidebarList.querySelector(focused)?.focus({ preventScroll: true });
  }

  workspaces() {
    return this.ws;
  }

  currentWorkspaceId() {
    const sid = this.lastSessionId();
    for (const [wid, list] of this.sessions) if (list.some((s) => s.id === sid)) return wid;
    return this.ws[0]?.id || "";
  }

  names() {
    const session = (id) => {
      for (const list of this.sessions.values()) {
        const s = list.find((x) => x.id === id);
        if (s) return `“${s.title || "Untitled session"}”`;
      }
      return id ? id.slice(0, 8) : "";
    };
    const workspace = (id) => {
      const w = this.ws.find((x) => x.id === id);
      return w ? `“${w.name}”` : id ? id.slice(0, 8) : "";
    };
    return { session, workspace };
  }

  onSessionChanged(session) {
    const list = this.sessions.get(session.workspaceId) || [];
    const i = list.findIndex((s) => s.id === session.id);
    if (i >= 0) list[i] = { ...list[i], ...session };
    this.drawSidebar();
  }

  // ---- workspace and session actions ------------------------------------------------------

  newWorkspace() {
    const path = h("input", { type: "text", id: "ws-path", required: true, placeholder: "/home/me/project", autofocus: true });
    const name = h("input", { type: "text", id: "ws-name", placeholder: "the folder's name" });
    const err = h("p", { class: "error", role: "alert" });
    const form = h("form", {
      onsubmit: async (e) => {
        e.preventDefault();
        const body = { path: path.value.trim() };
        if (name.value.trim()) body.name = name.value.trim();
        try {
          const w = await api("POST", "/api/workspaces", body);
          d.close();
          if (w.warning) notify(w.warning, "error");
          await this.loadNav();
          await this.newSession(w);
        } catch (er) {
          replace(err, errorText(er));
        }
      },
    }, h("label", { for: "ws-path" }, "Folder (absolute path)"), path, h("label", { for: "ws-name" }, "Name (optional)"), name, err,
      h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Create"), h("button", { type: "button", onclick: () => d.close() }, "Cancel")));
    const d = openDialog("New workspace", form);
  }

  async renameWorkspace(w) {
    const name = await promptText("Rename workspace", "Name", w.name);
    if (name === null) return;
    try {
      await api("PATCH", `/api/workspaces/${enc(w.id)}`, { name });
      await this.loadNav();
    } catch (err) {
      notify(`Rename failed: ${errorText(err)}`, "error");
    }
  }

  async deleteWorkspace(w) {
    const n = (this.sessions.get(w.id) || []).length;
    const ok = await confirmAction(`Delete workspace ${w.name}?`, h("p", null, `This deletes the workspace and its ${n} session${n === 1 ? "" : "s"} from jean2. The folder ${w.path} and its files stay as they are.`), "Delete workspace", { danger: true, focusCancel: true });
    if (!ok) return;
    try {
      await api("DELETE", `/api/workspaces/${enc(w.id)}`);
      if ((this.sessions.get(w.id) || []).some((s) => s.id === this.currentSession)) location.hash = "#/";
      await this.loadNav();
    } catch (err) {
      notify(`Delete failed: ${errorText(err)}`, "error");
    }
  }

  async newSession(w) {
    try {
      const s = await api("POST", `/api/workspaces/${enc(w.id)}/sessions`, {});
      await this.loadNav();
      location.hash = `#/s/${enc(s.id)}`;
    } catch (err) {
      notify(`Cannot create a session: ${errorText(err)}`, "error");
    }
  }

  async renameSession(s) {
    const title = await promptText("Rename session", "Title", s.title || "");
    if (title === null) return;
    try {
      const updated = await api("PATCH", `/api/sessions/${enc(s.id)}`, { title });
      this.onSessionChanged(updated);
      if (this.view instanceof SessionView && this.view.id === s.id) {
        this.view.session = { ...this.view.session, ...updated };
        replace(this.view.titleEl, updated.title);
      }
    } catch (err) {
      notify(`Rename failed: ${errorText(err)}`, "error");
    }
  }

  async deleteSession(s) {
    const ok = await confirmAction("Delete session?", h("p", null, `“${s.title || "Untitled session"}” and its messages will be deleted. Files in the workspace stay as they are.`), "Delete session", { danger: true, focusCancel: true });
    if (!ok) return;
    try {
      await api("DELETE", `/api/sessions/${enc(s.id)}`);
      if (this.currentSession === s.id) location.hash = "#/";
      await this.loadNav();
    } catch (err) {
      notify(`Delete failed: ${errorText(err)}`, "error");
    }
  }

  // ---- routing ----------------------------------------------------------------------------

  route() {
    const hash = location.hash.replace(/^#/, "") || "/";
    const parts = hash.split("/").filter(Boolean);
    // A dialog belongs to the page it was opened on: it goes with it (a new view opens its
    // own again, e.g. a permission still waiting).
    for (const d of document.querySelectorAll("dialog[open]")) d.close();
    this.view?.unmount?.();
    this.view = null;
    this.currentSession = null;
    let page = "chat";
    if (parts[0] === "s" && parts[1]) {
      this.currentSession = decodeURIComponent(parts[1]);
      this.lastSession = this.currentSession;
      this.view = new SessionView(this, this.currentSession);
      // Opened by the person in the page (a new session or workspace, a switch): the message
      // box takes the focus. Not on the page's first load, where the first Tab reaches the
      // skip link.
      this.view.focusOnOpen = this.routedOnce === true;
    } else if (parts[0] === "w" && parts[1] && parts[2] === "terminal") {
      page = "terminal";
      this.view = new TerminalView(this, decodeURIComponent(parts[1]));
    } else if (parts[0] === "files") {
      page = "files";
      this.view = new FilesView(this, parts[1] ? decodeURIComponent(parts[1]) : "");
    } else if (parts[0] === "tools") {
      page = "tools";
      this.view = new ToolsView(this);
    } else if (parts[0] === "schedules") {
      page = "schedules";
      this.view = new SchedulesView(this);
    } else if (parts[0] === "settings") {
      page = "settings";
      this.view = new SettingsView(this);
    }
    for (const a of this.nav.querySelectorAll("a")) {
      if (a.dataset.page === page) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    this.routedOnce = true;
    this.toggleMenu(false);
    this.drawSidebar();
    if (this.view) this.view.mount(this.main);
    else this.home();
    this.pageTitle = page === "chat" ? "jean2" : `jean2 — ${page}`;
    this.showTitle();
  }

  home() {
    const recent = [...this.sessions.values()].flat().sort((a, b) => String(b.updatedAt).localeCompare(String(a.updatedAt))).slice(0, 8);
    replace(this.main, h("section", { class: "home" },
      h("h2", null, "Welcome to jean2"),
      providerNotice(),
      this.ws.length ? h("p", null, "Choose a session in the menu, start a new one with + beside a workspace, or open a recent one:")
        : h("p", null, "Create a workspace — a folder the tools may work in — to start a conversation."),
      recent.length ? h("ul", { class: "recent" }, recent.map((s) => h("li", null, h("a", { href: `#/s/${enc(s.id)}` }, s.title || "Untitled session"), sessionMeta(s)))) : null,
      h("p", null, h("button", { type: "button", class: "primary", onclick: () => this.newWorkspace() }, "New workspace"))));
  }

  // ---- the server's own log ---------------------------------------------------------------

  onServerEvent(ev) {
    const p = ev.payload || {};
    if (ev.type === "session.status") this.sessionStatus(p, ev.createdAt);
    // What another client (a tab, the terminal) did to the lists shows here too.
    if (ev.type === "session.updated" && p.session) this.onSessionChanged(p.session);
    if (ev.type === "session.deleted") {
      const list = this.sessions.get(p.workspaceId);
      if (list) this.sessions.set(p.workspaceId, list.filter((x) => x.id !== p.sessionId));
      this.drawSidebar();
      this.showTitle();
    }
    if (ev.type === "workspaces.changed") this.loadNav();
    if (ev.type === "session.created" && p.session) {
      const list = this.sessions.get(p.session.workspaceId) || [];
      if (!list.some((x) => x.id === p.session.id)) this.sessions.set(p.session.workspaceId, [p.session, ...list]);
      this.drawSidebar();
    }
    if (ev.type === "tools.changed" && this.view instanceof ToolsView) this.view.onToolsChanged(p);
    if (ev.type === "skills.broken" && this.view instanceof ToolsView) this.view.skills?.refresh();
    if (ev.type === "tool.run.progress" && this.view instanceof ToolsView) this.view.onRunProgress(p);
    if ((ev.type === "providers.changed" || ev.type === "settings.changed") && this.view instanceof SettingsView) this.view.onServerEvent(ev);
  }

  /** sessionStatus keeps a session's live status in the list and the tab title (session.status). */
  sessionStatus(p, at) {
    for (const list of this.sessions.values()) {
      const s = list.find((x) => x.id === p.sessionId);
      if (s) {
        // A turn starting or ending is activity: the session moves up its list.
        if (at && s.running !== !!p.running && Date.parse(at) > Date.parse(s.updatedAt || 0)) s.updatedAt = at;
        s.running = !!p.running;
        s.waiting = p.waiting || 0;
      }
    }
    this.drawSidebar();
    this.showTitle();
  }

  /** showTitle puts the number of sessions waiting for an answer in the tab's title. */
  showTitle() {
    const base = this.pageTitle || document.title.replace(/^\(\d+\) /, "");
    const waiting = [...this.sessions.values()].flat().filter((s) => s.waiting > 0).length;
    document.title = waiting ? `(${waiting}) ${base}` : base;
  }

  /** sessionsOf lists the sessions of a workspace, most recently updated first. */
  sessionsOf(workspaceId) {
    return this.sessions.get(workspaceId) || [];
  }

  /** lastSessionId is the session shown last (the tools page runs tools in it by default). */
  lastSessionId() {
    return this.currentSession || this.lastSession || "";
  }

  // ---- keyboard ---------------------------------------------------------------------------

  onKey(e) {
    const t = e.target;
    const typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
    if (e.key === "Escape" && document.body.classList.contains("menu-open") && !document.querySelector("dialog[open]")) {
      this.toggleMenu(false);
      this.menuBtn.focus();
      return;
    }
    if ((e.ctrlKey || e.metaKey) && e.key === ".") {
      if (this.view instanceof SessionView) {
        e.preventDefault();
        this.view.stop();
      }
      return;
    }
    if (e.altKey && (e.key === "ArrowUp" || e.key === "ArrowDown")) {
      const all = [...this.sessions.values()].flat();
      const order = this.ws.flatMap((w) => (this.sessions.get(w.id) || []).map((s) => s.id));
      if (!all.length) return;
      e.preventDefault();
      let i = order.indexOf(this.currentSession);
      i = e.key === "ArrowUp" ? (i <= 0 ? order.length - 1 : i - 1) : (i + 1) % order.length;
      location.hash = `#/s/${enc(order[i])}`;
      return;
    }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "/" && this.view instanceof SessionView) {
      e.preventDefault();
      this.view.focusComposer();
    } else if (e.key === "?") {
      e.preventDefault();
      showShortcuts();
    }
  }
}

/** focusKey is a selector that finds an element of the sidebar again after a redraw: a link
 * by its address, a button by its id or label. */
function focusKey(el) {
  if (el.id) return `#${CSS.escape(el.id)}`;
  if (el.tagName === "A" && el.getAttribute("href")) return `a[href="${CSS.escape(el.getAttribute("href"))}"]`;
  if (el.getAttribute("aria-label")) return `${el.tagName.toLowerCase()}[aria-label="${CSS.escape(el.getAttribute("aria-label"))}"]`;
  return "";
}

/** sessionBadge says in the list whether a session waits for an answer or runs. */
function sessionBadge(s) {
  if (s.waiting > 0) return h("span", { class: "session-status waiting", title: "needs your answer" }, " ", h("span", { "aria-hidden": "true" }, "?"), h("span", { class: "sr-only" }, "(needs your answer)"));
  if (s.running) return h("span", { class: "session-status running", title: "running" }, " ", h("span", { class: "running-dot", "aria-hidden": "true" }, "●"), h("span", { class: "sr-only" }, "(running)"));
  return null;
}

new App(document.getElementById("app")).start();
