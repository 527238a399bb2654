// The terminal tab of a workspace (#/w/<workspace>/terminal): the person's shell on the
// server, confined as the shell tool's commands (docs/web.md, "Terminal"), drawn by
// xterm.js (vendored in ../vendor/xterm, loaded when a terminal first opens). The shell runs
// on while no page shows it: a page that comes back gets its scrollback replayed. When a
// command tries a host the server asks every page of the terminal, in a bar above it; the
// first answer counts and the other pages hide the question.

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
    // Questions about the network; announced as they come, without taking the keyboard
    // from the shell (Alt+Shift+A / Alt+Shift+D answer the oldest from the terminal).
    this.asks = h("div", { class: "term-asks", role: "region", "aria-label": "Network requests of the terminal", "aria-live": "polite" });
    replace(container, h("section", { class: "terminal-page", "aria-label": `Terminal of ${this.name}` },
      h("div", { class: "term-head" },
        h("h2", null, `Terminal — ${this.name}`),
        this.tabs,
        h("button", { type: "button", id: "new-terminal", onclick: () => this.open(null) }, "New terminal"),
        h("button", { type: "button", id: "close-terminal", class: "danger", onclick: () => this.closeCurrent() }, "Close terminal")),
      this.status, this.asks, this.screen));
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
    const live = { id: t.id, term, fit, ws: null, ended: false, retry: 0, questions: new Map() };
    this.live = live;
    const list = (await api("GET", `/api/workspaces/${enc(this.workspaceId)}/terminals`).catch(() => null))?.terminals;
    if (list) this.drawTabs(list, t.id);
    const enc8 = new TextEncoder();
    term.onData((d) => live.ws?.readyState === WebSocket.OPEN && live.ws.send(enc8.encode(d)));
    term.attachCustomKeyEventHandler((e) => this.answerKey(live, e));
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
      // The server asks this page again what still waits; what was settled meanwhile goes.
      this.clearQuestions(live);
      ws.send(JSON.stringify({ type: "resize", rows: live.term.rows, cols: live.term.cols }));
      replace(this.status, "");
    };
    ws.onmessage = (e) => {
      if (typeof e.data !== "string") return live.term.write(new Uint8Array(e.data));
      let f;
      try { f = JSON.parse(e.data); } catch { return; }
      if (f.type === "exit") this.ended(live);
      else if (f.type === "network") this.ask(live, f.id, f.target);
      else if (f.type === "network-answered") this.settled(live, f.id);
      else if (f.type === "error") replace(this.status, `The server did not take the page's message: ${f.message}`);
    };
    ws.onclose = () => {
      if (this.gone || live !== this.live || live.ended) return;
      if (!opened && live.retry > 2) return this.ended(live); // closed on the server
      live.retry++;
      replace(this.status, "Connection lost; reconnecting…");
      setTimeout(() => this.connect(live), Math.min(5000, 250 * 2 ** live.retry));
    };
  }

  /** ask shows the server's question id: may the terminal reach target (host:port)? */
  ask(live, id, target) {
    if (live !== this.live || typeof id !== "string" || typeof target !== "string" || live.questions.has(id)) return;
    const label = `term-ask-${id}`;
    const allow = h("button", { type: "button", class: "primary", dataset: { answer: "allow" }, onclick: () => this.answer(live, id, true) }, "Allow");
    const deny = h("button", { type: "button", dataset: { answer: "deny" }, onclick: () => this.answer(live, id, false) }, "Deny");
    const el = h("div", { class: "term-ask", role: "group", "aria-labelledby": label, dataset: { question: id, target },
      onkeydown: (e) => { if (e.key === "Escape") live.term.focus(); } },
      h("span", { id: label }, "This terminal wants to reach ", h("strong", null, target)), " — ", allow, deny);
    live.questions.set(id, el);
    this.asks.append(el);
  }

  /** answer sends the person's answer; the question goes once the server says it is settled. */
  answer(live, id, allow) {
    const el = live.questions.get(id);
    if (!el || live.ws?.readyState !== WebSocket.OPEN) return;
    for (const b of el.querySelectorAll("button")) b.disabled = true;
    live.ws.send(JSON.stringify({ type: "network", id, allow }));
    live.term.focus();
  }

  /** answerKey answers the oldest question from the terminal's keyboard: Alt+Shift+A allows, Alt+Shift+D denies. */
  answerKey(live, e) {
    if (e.type !== "keydown" || !e.altKey || !e.shiftKey || e.ctrlKey || e.metaKey || !["KeyA", "KeyD"].includes(e.code)) return true;
    const [id] = live.questions.keys();
    if (id === undefined) return true;
    e.preventDefault();
    this.answer(live, id, e.code === "KeyA");
    return false;
  }

  settled(live, id) {
    live.questions.get(id)?.remove();
    live.questions.delete(id);
  }

  clearQuestions(live) {
    for (const el of live.questions.values()) el.remove();
    live.questions.clear();
  }

  ended(live) {
    this.clearQuestions(live);
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
    this.clearQuestions(live);
    live.term.dispose();
  }
}
