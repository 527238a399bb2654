// The terminal tab of a workspace (#/w/<workspace>/terminal): the person's shell on the
// server, confined as the shell tool's commands (docs/web.md, "Terminal"), drawn by
// xterm.js (vendored in ../vendor/xterm, loaded when a terminal first opens). The shell runs
// on while no page shows it: a page that comes back gets its scrollback replayed.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { errorText } from "./ui.js";

let xtermLoaded = null;

/** loadXterm imports xterm.js and its fit addon, and links their style sheet, once. */
function loadXterm() {
  xtermLoaded ||= (async () => {
    for (const css of ["../vendor/xterm/xterm.css", "../terminal.css"]) document.head.append(h("link", { rel: "stylesheet", href: new URL(css, import.meta.url).pathname }));
    const [{ Terminal }, { FitAddon }] = await Promise.all([import("../vendor/xterm/xterm.mjs"), import("../vendor/xterm/addon-fit.mjs")]);
    return { Terminal, FitAddon };
  })();
  return xtermLoaded;
}

export class TerminalView {
  constructor(app, workspaceId) {
    this.app = app;
    this.workspaceId = workspaceId;
    this.live = null; // the attached terminal: {id, term, fit, ws, ...}
    this.gone = false;
  }

  async mount(container) {
    this.container = container;
    const w = this.app.workspaces().find((x) => x.id === this.workspaceId);
    this.name = w ? w.name : this.workspaceId;
    document.title = `Terminal — ${this.name} — jean2`;
    this.tabs = h("div", { class: "term-tabs", role: "tablist", "aria-label": "Terminals" });
    this.status = h("p", { class: "term-status muted small", role: "status" });
    this.screen = h("div", { class: "term-screen", id: "terminal" });
    replace(container, h("section", { class: "terminal-page", "aria-label": `Terminal of ${this.name}` },
      h("div", { class: "term-head" },
        h("h2", null, `Terminal — ${this.name}`),
        this.tabs,
        h("button", { type: "button", id: "new-terminal", onclick: () => this.open(null) }, "New terminal"),
        h("button", { type: "button", id: "close-terminal", class: "danger", onclick: () => this.closeCurrent() }, "Close terminal")),
      this.status, this.screen));
    try {
      await loadXterm();
      const list = (await api("GET", `/api/workspaces/${enc(this.workspaceId)}/terminals`)).terminals || [];
      if (this.gone) return;
      const last = sessionStorage.getItem(`jean2.terminal.${this.workspaceId}`);
      const pick = list.find((t) => t.id === last) || list[0];
      this.drawTabs(list, pick?.id);
      await this.open(pick || null);
    } catch (err) {
      replace(this.status, `Cannot open a terminal: ${errorText(err)}`);
    }
  }

  unmount() {
    this.gone = true;
    this.detach();
  }

  drawTabs(list, current) {
    replace(this.tabs, list.map((t, i) => h("button", {
      type: "button", role: "tab", class: "term-tab", "aria-selected": String(t.id === current), dataset: { terminalId: t.id },
      onclick: () => this.open(t),
    }, `Shell ${i + 1}`)));
  }

  /** open attaches to terminal t, or opens a new one in the workspace when t is null. */
  async open(t) {
    this.detach();
    const { Terminal, FitAddon } = await loadXterm();
    if (this.gone) return;
    const term = new Terminal({ cursorBlink: true, scrollback: 5000, fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", fontSize: 13 });
    const fit = new FitAddon();
    term.loadAddon(fit);
    replace(this.screen);
    term.open(this.screen);
    fit.fit();
    try {
      if (!t) t = await api("POST", `/api/workspaces/${enc(this.workspaceId)}/terminals`, { rows: term.rows, cols: term.cols });
    } catch (err) {
      term.dispose();
      replace(this.status, `Cannot open a terminal: ${errorText(err)}`);
      return;
    }
    if (this.gone) return term.dispose();
    sessionStorage.setItem(`jean2.terminal.${this.workspaceId}`, t.id);
    const live = { id: t.id, term, fit, ws: null, ended: false, retry: 0 };
    this.live = live;
    const list = (await api("GET", `/api/workspaces/${enc(this.workspaceId)}/terminals`).catch(() => null))?.terminals;
    if (list) this.drawTabs(list, t.id);
    const enc8 = new TextEncoder();
    term.onData((d) => live.ws?.readyState === WebSocket.OPEN && live.ws.send(enc8.encode(d)));
    term.onResize(({ rows, cols }) => live.ws?.readyState === WebSocket.OPEN && live.ws.send(JSON.stringify({ type: "resize", rows, cols })));
    this.resizer = new ResizeObserver(() => { try { fit.fit(); } catch { /* not shown */ } });
    this.resizer.observe(this.screen);
    this.connect(live);
    term.focus();
  }

  /** connect follows the terminal's socket: the scrollback, then its output as it comes. */
  connect(live) {
    if (this.gone || live !== this.live || live.ended) return;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/api/terminals/${enc(live.id)}/ws`);
    ws.binaryType = "arraybuffer";
    live.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      live.retry = 0;
      // What comes first is the scrollback, whole: a screen of an earlier connection goes.
      live.term.reset();
      ws.send(JSON.stringify({ type: "resize", rows: live.term.rows, cols: live.term.cols }));
      replace(this.status, "");
    };
    ws.onmessage = (e) => {
      if (typeof e.data !== "string") return live.term.write(new Uint8Array(e.data));
      if (JSON.parse(e.data).type === "exit") this.ended(live);
    };
    ws.onclose = () => {
      if (this.gone || live !== this.live || live.ended) return;
      if (!opened && live.retry > 2) return this.ended(live); // closed on the server
      live.retry++;
      replace(this.status, "Connection lost; reconnecting…");
      setTimeout(() => this.connect(live), Math.min(5000, 250 * 2 ** live.retry));
    };
  }

  ended(live) {
    live.ended = true;
    live.term.write("\r\n\x1b[2m[the shell ended]\x1b[0m\r\n");
    replace(this.status, "The shell ended. “New terminal” starts another.");
  }

  async closeCurrent() {
    const live = this.live;
    if (!live) return;
    live.ended = true;
    try {
      await api("DELETE", `/api/terminals/${enc(live.id)}`);
    } catch (err) {
      if (err.status !== 404) replace(this.status, `Cannot close the terminal: ${errorText(err)}`);
    }
    this.detach();
    const list = (await api("GET", `/api/workspaces/${enc(this.workspaceId)}/terminals`).catch(() => null))?.terminals || [];
    this.drawTabs(list, list[0]?.id);
    if (list[0]) await this.open(list[0]);
    else replace(this.status, "No terminal open. “New terminal” starts one.");
  }

  /** detach leaves the terminal running on the server and lets go of the page's side. */
  detach() {
    this.resizer?.disconnect();
    this.resizer = null;
    const live = this.live;
    this.live = null;
    if (!live) return;
    live.ws?.close();
    live.term.dispose();
  }
}
