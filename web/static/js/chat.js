// The session view: the conversation with streaming text, tool-call cards with their
// visualizations, asks, Stop, "Changed N files" under each turn and "Restore to here".
// It loads the messages, then follows the session's event log over a WebSocket.

import { api, enc, EventStream } from "./api.js";
import { h, clear, replace, plural, formatDuration, durationMsOf, prettyJSON } from "./dom.js";
import { highlight } from "./highlight.js";
import { renderMarkdown } from "./markdown.js";
import { renderVisualization, toolOutput } from "./viz.js";
import { renderAsk, showPermissionDialog, answeredSummary } from "./asks.js";
import { fileDiff } from "./diff.js";
import { openDialog, confirmAction, notify, errorText, promptText } from "./ui.js";
import { compactionView, compactSession, instructionsBar, modelPicker, noProviderHelp, turnUsage, usageText } from "./agent.js";
import { messageActions, sendOrQueue, drawQueue, loadQueue, cutFrom } from "./controls.js";
import { pickResource, resourceChip, resourcePartView } from "./mcpresources.js";
import { noteChild, loadChildren, callOfChild, subagentView } from "./subagents.js";
import { AgentControl } from "./agents.js";
import { GoalBadge } from "./goal.js";
import { grantOffer, approveOffer } from "./grants.js";
import { Mentions, acceptDrops } from "./mentions.js";
import { announce, notifyQuestion, askNotifications, isStopped, followBottom, openAtLatest, jumpButton, jumpToLatest } from "./follow.js";

const reasonWords = {
  stopped: "Stopped.",
  budget: "Stopped: the turn used its work budget.",
  ceiling: "Stopped: the turn reached its round ceiling.",
  error: "The turn failed.",
  interrupted: "The turn was interrupted (the server stopped while it ran).",
};

const utf8 = new TextEncoder();

const statusWords = { pending: "waiting", running: "running", complete: "done", error: "failed", streaming: "writing", stopped: "stopped", refused: "not allowed" };

// A call the person refused fails with the code USER_REJECTION, alone or before the reason
// (tool.UserRejection): the model reads the code, the person reads words.
const refusalCode = "USER_REJECTION";
const isRefusal = (error) => typeof error === "string" && error.startsWith(refusalCode);
function toolErrorWords(error) {
  if (!isRefusal(error)) return error;
  const why = error.slice(refusalCode.length).replace(/^[:\s]+/, "");
  return why ? `You did not allow this: ${why}` : "You did not allow this.";
}

export class SessionView {
  /** app gives: onSessionChanged(session), providers(), workspace(id). */
  constructor(app, sessionId) {
    this.app = app;
    this.id = sessionId;
    this.session = null;
    this.messages = new Map(); // id → {msg, el, parts: Map partId → {part, el}}
    this.turns = []; // [{userId, el, body, footer}]
    this.asks = new Map(); // askId → {pending, els: []}
    this.ledgers = new Map(); // messageId → TurnChanges
    this.finished = new Map(); // messageId → turn.finished payload (kept while the page lives)
    this.running = false;
    this.stream = null;
    this.renderQueue = new Set();
    this.rafPending = false;
    this.dialogAsk = null;
    // gone is set when the view is replaced (unmount), which may come while mount is still
    // loading: mount then stops at its next step, so a view left behind never subscribes
    // to the session's events (it would open its questions' dialogs over the new view and
    // scroll the page).
    this.gone = false;
    this.el = h("section", { class: "session-view", "aria-label": "Conversation" });
  }

  async mount(container) {
    replace(container, this.el);
    // Busy until the conversation is drawn, at its latest message, and followed live.
    this.el.setAttribute("aria-busy", "true");
    replace(this.el, h("p", { class: "muted" }, "Loading the conversation…"));
    let msgs;
    try {
      this.session = await api("GET", `/api/sessions/${enc(this.id)}`);
      const res = await api("GET", `/api/sessions/${enc(this.id)}/messages`);
      msgs = res.messages || [];
      // Prefer the snapshot's own seq when the server sends it: exact, no replayed deltas.
      if (typeof res.lastSeq === "number") this.session.lastSeq = res.lastSeq;
    } catch (err) {
      replace(this.el, h("p", { class: "error", role: "alert" }, `Cannot open this session: ${errorText(err)}`));
      this.el.removeAttribute("aria-busy");
      return;
    }
    if (this.gone) return;
    this.build();
    for (const m of msgs) this.upsertMessage(m);
    await this.loadAnsweredAsks();
    await loadChildren(this);
    if (this.gone) return;
    openAtLatest(this);
    this.setRunning(!!this.session.running);
    this.loadLedgers();
    loadQueue(this);
    // Opened by the person (new, switched to, or made with a new workspace): they write next.
    // Before the socket's hello, so that a permission pending there opens beside the message
    // box. Not on a touch screen, where the keyboard would cover the conversation.
    if (this.focusOnOpen && !matchMedia("(pointer: coarse)").matches) this.focusComposer();
    this.stream = new EventStream(`/api/sessions/${enc(this.id)}/ws`, this.session.lastSeq || 0, {
      onHello: (f) => this.onHello(f),
      onEvent: (ev) => this.onEvent(ev),
      onStatus: (s) => this.setConnection(s),
    });
    this.el.removeAttribute("aria-busy");
  }

  unmount() {
    this.gone = true;
    this.stream?.close();
    this.stream = null;
    if (this.dialogAsk?.dialog?.open) this.dialogAsk.dialog.close();
  }

  build() {
    const s = this.session;
    this.titleEl = h("h2", { class: "session-title" }, s.title || "Untitled session");
    this.modelEl = h("span", { class: "muted small session-model" });
    this.usageEl = h("span", { class: "muted small session-usage", id: "session-usage" }, usageText(s));
    this.connEl = h("span", { class: "conn muted small", role: "status" });
    this.statusEl = h("span", { class: "run-status", role: "status", "aria-live": "polite" });
    this.announcer = h("p", { class: "sr-only", role: "alert", "aria-live": "assertive" });
    this.transcript = h("div", { class: "transcript", role: "log", "aria-live": "off", "aria-label": "Messages" });
    this.looseAsks = h("div", { class: "loose-asks" });
    this.input = h("textarea", {
      id: "composer-input", rows: 3, "aria-label": "Message", placeholder: "Message — Enter sends, Shift+Enter adds a line",
      onkeydown: (e) => {
        if (this.mentions?.onKey(e)) return; // the @path list's keys
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          this.send();
        }
        // Tab in the empty box switches the agent (Shift+Tab still moves the focus back).
        if (e.key === "Tab" && !e.shiftKey && !e.ctrlKey && !e.altKey && this.input.value === "") {
          e.preventDefault();
          this.agentCtl.next();
        }
      },
      // A key's character can come as an event of its own (remote and synthetic keyboards):
      // the Enter that sent must not leave a new line in the emptied box.
      onkeypress: (e) => {
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) e.preventDefault();
      },
    });
    this.attachments = []; // [{mediaType, data (base64), name, el}] sent with the next message
    this.attachList = h("div", { class: "composer-attachments", role: "group", "aria-label": "Attachments" });
    this.fileInput = h("input", {
      type: "file", id: "attach-input", accept: IMAGE_TYPES.join(","), multiple: true, hidden: true,
      onchange: () => { this.attachFiles([...this.fileInput.files]); this.fileInput.value = ""; },
    });
    const attachBtn = h("button", { type: "button", class: "link", id: "attach", title: "Attach images (or paste them)", onclick: () => this.fileInput.click() }, "Attach image");
    this.resources = []; // [{server, workspaceId, uri, label, el}] MCP resources read when the message is sent
    const attachResBtn = h("button", {
      type: "button", class: "link", id: "attach-resource", title: "Attach a resource of a connected MCP server",
      onclick: async () => {
        const res = await pickResource(this.session.workspaceId);
        if (res) this.attachResource(res);
      },
    }, "Attach resource");
    this.input.addEventListener("paste", (e) => {
      const files = [...(e.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
      if (files.length) {
        e.preventDefault();
        this.attachFiles(files);
      }
    });
    this.sendBtn = h("button", { type: "submit", class: "primary", id: "send" }, "Send");
    this.stopBtn = h("button", { type: "button", class: "danger", id: "stop", hidden: true, onclick: () => this.stop(), "aria-keyshortcuts": "Control+." }, "Stop");
    this.composerErr = h("p", { class: "error", role: "alert" });
    this.queueEl = h("div", { class: "queue", "aria-label": "Queued messages", hidden: true });
    const composer = h("form", { class: "composer", onsubmit: (e) => { e.preventDefault(); this.send(); } },
      this.queueEl, this.input, this.attachList,
      h("div", { class: "composer-actions" }, this.fileInput, attachBtn, attachResBtn, this.statusEl, this.stopBtn, this.sendBtn), this.composerErr);
    this.mentions = new Mentions(this.input, () => this.session.workspaceId);
    acceptDrops(composer, (files) => this.attachFiles(files));
    replace(this.el,
      this.announcer,
      h("header", { class: "session-head" }, this.titleEl,
        h("button", { type: "button", class: "icon-btn", "aria-label": "Rename session", title: "Rename", onclick: () => this.rename() }, "✎"),
        h("button", { type: "button", class: "link", onclick: () => this.chooseModel() }, "Model"), this.modelEl,
        (this.agentCtl = new AgentControl(this)).el, (this.goalBadge = new GoalBadge(this, s.goal)).el, this.usageEl,
        this.compactBtn = h("button", { type: "button", class: "link", id: "compact", title: "Summarize the older messages to free the model's context",
          onclick: () => compactSession(this.id, this.compactBtn) }, "Compact"), askNotifications(), this.connEl),
      instructionsBar(s.workspaceId), this.transcript, this.looseAsks, jumpButton(this), composer);
    this.showModel();
  }

  /**
   * showModel names the provider and model the session runs on. A session on the defaults
   * names what the defaults are now (the server's default provider and its model), so the
   * person sees which model answers rather than "default provider".
   */
  async showModel() {
    const s = this.session;
    const el = this.modelEl;
    let provider = s.provider, model = s.model;
    if (!provider || !model) {
      try {
        const res = await api("GET", "/api/providers");
        provider ||= res.default;
        model ||= (res.providers || []).find((p) => p.name === provider)?.model;
      } catch {
        // Named as far as the session knows; the picker says why the list failed.
      }
    }
    if (el !== this.modelEl) return; // redrawn meanwhile
    replace(el, provider ? `${provider} · ${model || "its default model"}` : "no provider configured");
    el.title = s.provider || s.model ? "Chosen for this session" : "The server's default provider and model";
  }

  setConnection(status) {
    replace(this.connEl, status === "open" ? "" : status === "retrying" ? "Reconnecting…" : "");
    if (status === "retrying" && !this.checking) {
      // A session deleted elsewhere makes every reconnect fail: say so and stop trying.
      this.checking = true;
      api("GET", `/api/sessions/${enc(this.id)}`).then(() => {}, (err) => {
        if (err.status === 404) {
          this.stream?.close();
          this.stream = null;
          replace(this.connEl, "");
          this.transcript.before(h("p", { class: "error", role: "alert" }, "This session was deleted."));
          this.sendBtn.disabled = true;
        }
      }).finally(() => (this.checking = false));
    }
  }

  setRunning(on) {
    this.running = on;
    this.stopBtn.hidden = !on;
    if (this.compactBtn) this.compactBtn.disabled = on;
    // While a turn runs, a message is queued for its end.
    replace(this.sendBtn, on ? "Queue" : "Send");
    // "Stopping…" too goes when the turn has ended.
    if (!on) this.stopping = false;
    this.showRunStatus();
    this.el.classList.toggle("running", on);
  }

  // showRunStatus says what the turn is doing: nothing once it ended (whatever answer comes
  // late), "Stopping…" once a stop was asked for, "Waiting for your answer" while a question
  // waits for the person, else "Working…".
  showRunStatus() {
    if (!this.statusEl) return;
    const words = !this.running ? "" : this.stopping ? "Stopping…" : this.asks.size ? "Waiting for your answer" : "Working…";
    if (this.statusEl.textContent !== words) replace(this.statusEl, words);
  }

  // ---- events ---------------------------------------------------------------------------

  onHello(f) {
    this.setRunning(!!f.running);
    const live = new Set((f.pendingAsks || []).map((p) => p.id));
    for (const id of [...this.asks.keys()]) if (!live.has(id)) this.removeAsk(id);
    for (const p of f.pendingAsks || []) this.addAsk(p);
  }

  onEvent(ev) {
    const p = ev.payload || {};
    switch (ev.type) {
      case "turn.started":
        this.setRunning(true);
        break;
      case "message.created":
        if (p.message) this.upsertMessage(p.message);
        break;
      case "message.updated":
        if (p.message) this.updateMessage(p.message);
        break;
      case "part.created":
      case "part.updated":
        if (p.part) this.upsertPart(p.part);
        break;
      case "part.delta":
        this.appendDelta(p.messageId, p.partId, p.text || "", p.offset);
        break;
      case "tool.progress":
        this.showProgress(p);
        break;
      case "subagent.started":
      case "subagent.finished":
        noteChild(this, p.callId, p.sessionId, p.description);
        break;
      case "ask.pending":
        if (p.ask) this.addAsk(p.ask);
        break;
      case "ask.resolved":
        this.resolveAsk(p);
        break;
      case "turn.finished":
        this.turnFinished(p);
        break;
      case "restore.done":
        this.loadLedgers();
        break;
      case "queue.changed":
        drawQueue(this, p.items || [], p.error);
        break;
      case "messages.cut":
        cutFrom(this, p.fromSeq);
        break;
      case "workspace.updated":
        this.workspaceUpdated(p);
        break;
      case "goal.changed":
        this.session = { ...this.session, goal: p.goal };
        this.goalBadge?.changed(p.goal);
        break;
      case "hook.failed":
        // A hook of config.json failed or timed out: the turn went on as if it allowed.
        notify(`Hook ${p.event}${p.tool ? " (" + p.tool + ")" : ""} failed: ${p.error}`, "error");
        break;
      case "session.updated":
        if (p.session) {
          this.session = { ...this.session, ...p.session };
          replace(this.titleEl, this.session.title || "Untitled session");
          this.showModel();
          this.agentCtl?.show();
          this.app.onSessionChanged(this.session);
        }
        break;
    }
  }

  // ---- messages and parts -----------------------------------------------------------------

  turnFor(msg) {
    if (msg.role === "user" || !this.turns.length) {
      if (msg.role === "user") {
        const existing = this.turns.find((t) => t.userId === msg.id);
        if (existing) return existing;
      }
      const t = { userId: msg.role === "user" ? msg.id : "", seq: msg.seq, messageIds: [] };
      t.body = h("div", { class: "turn-body" });
      t.footer = h("div", { class: "turn-footer" });
      t.el = h("section", { class: "turn", dataset: { userMessageId: t.userId } }, t.body, t.footer);
      // Keep turns in message order even if a message arrives late.
      const after = this.turns.filter((x) => x.seq < t.seq).pop();
      const idx = after ? this.turns.indexOf(after) + 1 : 0;
      this.turns.splice(idx, 0, t);
      const next = this.turns[idx + 1];
      this.transcript.insertBefore(t.el, next ? next.el : null);
      return t;
    }
    let t = this.turns[0];
    for (const x of this.turns) if (x.seq <= msg.seq) t = x;
    return t;
  }

  upsertMessage(msg) {
    // System messages are instructions to the model, not part of the conversation; but a
    // compaction (a system message with a compaction part) is shown where it happened.
    if (msg.role === "system" && !(msg.parts || []).some((p) => p.kind === "compaction")) return;
    let m = this.messages.get(msg.id);
    if (!m) {
      const turn = this.turnFor(msg);
      m = { msg, parts: new Map(), turn };
      m.partsEl = h("div", { class: "parts" });
      m.metaEl = h("div", { class: "msg-meta muted small" });
      m.el = h("article", { class: `message ${msg.role}`, dataset: { messageId: msg.id, seq: msg.seq } },
        h("h3", { class: "sr-only" }, msg.role === "user" ? "You" : msg.role === "system" ? "Context" : "Assistant"),
        m.partsEl, m.metaEl);
      m.el.appendChild(messageActions(this, m));
      this.messages.set(msg.id, m);
      turn.messageIds.push(msg.id);
      // In seq order within the turn.
      const siblings = [...turn.body.children];
      const before = siblings.find((el) => Number(el.dataset.seq) > msg.seq);
      turn.body.insertBefore(m.el, before || null);
      this.placeLedger(msg.id);
    }
    m.msg = { ...m.msg, ...msg };
    const parts = msg.parts || [];
    // A user's text is the message's content; its parts, if any, are images.
    if (msg.role === "user" && msg.content && !parts.some((p) => p.kind === "text")) {
      this.upsertPart({ id: msg.id + "-content", messageId: msg.id, seq: 0, kind: "text", text: msg.content, status: "complete" });
    }
    for (const p of parts) this.upsertPart(p);
    this.showMessageMeta(m);
    this.scrollToEnd();
  }

  updateMessage(msg) {
    const m = this.messages.get(msg.id);
    if (!m) {
      this.upsertMessage(msg);
      return;
    }
    const { parts, ...rest } = msg;
    m.msg = { ...m.msg, ...rest };
    if (parts && parts.length) for (const p of parts) this.upsertPart(p);
    this.showMessageMeta(m);
    for (const p of m.parts.values()) if (p.part.kind === "text") this.queueRender(p);
  }

  showMessageMeta(m) {
    const msg = m.msg;
    m.el.classList.toggle("streaming", msg.status === "streaming");
    m.el.classList.toggle("failed", msg.status === "error" && !isStopped(msg.error));
    const bits = [];
    if (msg.status === "error" && msg.error) bits.push(isStopped(msg.error) ? h("span", { class: "muted stopped" }, "Stopped.") : h("span", { class: "error" }, msg.error));
    if (msg.role === "assistant" && msg.status !== "streaming" && (msg.tokensIn || msg.tokensOut)) {
      bits.push(h("span", null, `${msg.model ? msg.model + " · " : ""}${msg.tokensIn} in / ${msg.tokensOut} out tokens`));
    }
    replace(m.metaEl, bits);
  }

  upsertPart(part) {
    let m = this.messages.get(part.messageId);
    if (!m) return; // a part of a message not loaded (a system message): nothing to show
    let p = m.parts.get(part.id);
    if (!p) {
      p = { part };
      m.parts.set(part.id, p);
      p.el = h("div", { class: "part", dataset: { partId: part.id, seq: part.seq } });
      const before = [...m.partsEl.children].find((el) => Number(el.dataset.seq) > part.seq);
      m.partsEl.insertBefore(p.el, before || null);
    } else {
      // An update without text keeps the text streamed so far (updates may omit it).
      p.part = { ...p.part, ...part };
      if (part.text === undefined && p.part.kind === "text") p.part.text = p.text;
    }
    p.text = p.part.text || "";
    this.drawPart(m, p);
  }

  appendDelta(messageId, partId, text, offset) {
    const m = this.messages.get(messageId);
    const p = m?.parts.get(partId);
    if (!p) return;
    if (typeof offset === "number") {
      // A delta that says where it starts (in UTF-8 bytes) may come again after a reload
      // (events between reading the session and its messages are sent again): keep only
      // what the loaded text lacks.
      const have = utf8.encode(p.text || "");
      const add = utf8.encode(text);
      if (offset + add.length <= have.length) return;
      if (offset < have.length) text = new TextDecoder().decode(add.slice(have.length - offset));
    }
    p.text = (p.text || "") + text;
    p.part.text = p.text;
    this.queueRender(p);
  }

  queueRender(p) {
    // Re-render streaming markdown at most once a frame, however fast deltas come.
    this.renderQueue.add(p);
    if (this.rafPending) return;
    this.rafPending = true;
    requestAnimationFrame(() => {
      this.rafPending = false;
      const batch = [...this.renderQueue];
      this.renderQueue.clear();
      for (const q of batch) {
        const m = this.messages.get(q.part.messageId);
        if (m) this.drawPart(m, q);
      }
      this.scrollToEnd();
    });
  }

  drawPart(m, p) {
    const part = p.part;
    if (part.kind === "compaction") {
      p.el.className = "part part-compaction";
      replace(p.el, compactionView(part));
      return;
    }
    if (part.kind === "text") {
      p.el.className = "part part-text";
      if (m.msg.role === "user") replace(p.el, h("div", { class: "user-text" }, p.text));
      else replace(p.el, renderMarkdown(p.text));
      return;
    }
    if (part.kind === "resource") {
      p.el.className = "part part-resource";
      replace(p.el, resourcePartView(part));
      return;
    }
    if (part.kind === "image") {
      p.el.className = "part part-image";
      // message.created leaves an image's bytes out; the server answers them by the part's id.
      const img = part.data ? imageElement(part.mediaType, part.data, "Attached image")
        : h("img", { class: "attached-image", alt: "Attached image", src: `/api/sessions/${enc(this.id)}/parts/${enc(part.id)}/image` });
      replace(p.el, img);
      return;
    }
    this.drawToolCard(p);
  }

  drawToolCard(p) {
    const part = p.part;
    // A call the person stopped is stopped, not failed.
    const status = part.status === "error" && isStopped(part.error) ? "stopped"
      : part.status === "error" && isRefusal(part.error) ? "refused" : part.status || "pending";
    p.el.className = `part tool-card status-${status}`;
    p.el.dataset.callId = part.callId || "";
    p.el.dataset.tool = part.toolName || "";
    const head = h("header", { class: "tool-head" },
      h("span", { class: "tool-status-dot", "aria-hidden": "true" }),
      h("code", { class: "tool-name" }, part.toolName || "tool"),
      h("span", { class: "tool-status" }, statusWords[status] || status),
      durationMsOf(part) ? h("span", { class: "tool-duration muted" }, formatDuration(durationMsOf(part))) : null);
    const args = part.args ? h("details", { class: "tool-args" },
      h("summary", null, "Arguments ", h("span", { class: "muted small args-preview" }, preview(part.args))),
      h("pre", { class: "json" }, highlight(prettyJSON(part.args), "json"))) : null;
    p.progressEl = p.progressEl || h("p", { class: "tool-progress muted small", role: "status" });
    p.askSlot = p.askSlot || h("div", { class: "ask-slot" });
    const viz = part.visualization ? renderVisualization(part.visualization) : null;
    // What the tool found, as text, folded: the visualization is often one line ("Read: …").
    const output = status === "complete" ? toolOutput(part.result) : null;
    const err = part.error && status !== "stopped" ? h("p", { class: "error tool-error" }, toolErrorWords(part.error)) : null;
    // A refusal of jean2's sandbox offers the grant it names (grants.js); kept across redraws.
    if (part.status === "error" && !p.grantSlot) p.grantSlot = grantOffer(part.toolName, part.error, part.toolHash) || approveOffer(part.toolName, part.error);
    const notes = (p.workspaceNotes || []).map((t) => h("p", { class: "tool-workspace-note small" }, t));
    const result = part.result ? h("details", { class: "tool-result" }, h("summary", null, "Result sent to the model"),
      h("pre", { class: "json" }, highlight(prettyJSON(part.result), "json"))) : null;
    if (status === "complete" || status === "error" || status === "stopped") clear(p.progressEl);
    // Keep the open/closed state of details the person toggled.
    const open = new Set([...p.el.querySelectorAll("details[open]")].map((d) => d.className));
    replace(p.el, head, args, p.progressEl, p.askSlot, notes, viz, output, err, p.grantSlot, result, subagentView(this, p));
    for (const d of p.el.querySelectorAll("details.tool-args, details.tool-output, details.tool-result")) if (open.has(d.className)) d.open = true;
    // Asks that arrived before their card.
    for (const a of this.asks.values()) {
      const mine = a.pending.callId === part.callId || (a.pending.fromSessionId && callOfChild(this, a.pending.fromSessionId) === part.callId);
      if (a.pending.callId && mine && !p.askSlot.contains(a.inline)) this.placeAsk(a);
    }
  }

  // workspaceUpdated says, on the card of the call that did it, that a tool widened or
  // narrowed the workspace for good (ctx.addWorkspacePath / removeWorkspacePath).
  workspaceUpdated(ev) {
    const what = ev.added ? `The workspace now also allows ${ev.added}` : ev.removed ? `The workspace no longer allows ${ev.removed}` : "";
    if (!what) return;
    const card = this.cardFor(ev.callId);
    if (!card) {
      notify(what + ".", "info");
      return;
    }
    (card.workspaceNotes ||= []).push(what);
    this.drawToolCard(card);
  }

  showProgress(ev) {
    const m = this.messages.get(ev.messageId);
    const p = m?.parts.get(ev.partId);
    if (!p || !p.progressEl) return;
    const pr = ev.progress || {};
    const parts = [];
    if (pr.message) parts.push(pr.message);
    if (pr.total) parts.push(`${pr.current ?? 0} / ${pr.total}`);
    else if (pr.current) parts.push(String(pr.current));
    replace(p.progressEl, parts.join(" — "));
    if (pr.total) p.progressEl.appendChild(h("progress", { max: pr.total, value: pr.current ?? 0 }));
  }

  cardFor(callId) {
    if (!callId) return null;
    for (const m of this.messages.values()) for (const p of m.parts.values()) if (p.part.callId === callId && p.askSlot) return p;
    return null;
  }

  // ---- asks -------------------------------------------------------------------------------

  addAsk(pending) {
    if (this.asks.has(pending.id)) return;
    const a = { pending };
    a.inline = renderAsk(pending, (v) => this.answer(pending.id, v));
    this.asks.set(pending.id, a);
    this.placeAsk(a);
    this.showRunStatus();
    const who = pending.tool ? `${pending.tool} asks` : "A tool asks";
    announce(this, `${who}: ${pending.ask?.question || "a question waits for your answer"}`);
    notifyQuestion(this, pending);
    if (pending.ask?.type === "permission" && !(this.dialogAsk && this.dialogAsk.dialog.open)) {
      const dialog = showPermissionDialog(pending, (v) => this.answer(pending.id, v));
      this.dialogAsk = { id: pending.id, dialog };
    } else if (!(this.dialogAsk && this.dialogAsk.dialog.open)) {
      // Focus moves to the new question (unless a dialog holds it).
      a.inline.querySelector("input, textarea, select, button")?.focus({ preventScroll: true });
      a.inline.scrollIntoView({ block: "nearest" });
    }
    this.scrollToEnd();
  }

  // loadAnsweredAsks puts back, in their cards, the questions of this session that were
  // answered (or timed out) before the page was opened, read-only with what became of them.
  // Questions still waiting come with the socket's hello.
  async loadAnsweredAsks() {
    let events;
    try {
      events = (await api("GET", `/api/sessions/${enc(this.id)}/events?types=ask.pending,ask.resolved&limit=500`)).events || [];
    } catch {
      return; // the conversation is shown all the same
    }
    const pending = new Map();
    for (const ev of events) {
      const p = ev.payload || {};
      if (ev.type === "ask.pending" && p.ask) pending.set(p.ask.id, p.ask);
      if (ev.type !== "ask.resolved") continue;
      const ask = pending.get(p.askId);
      const card = ask && this.cardFor(ask.callId);
      if (!card || this.asks.has(p.askId)) continue;
      const node = renderAsk(ask, () => Promise.reject(new Error("This question was answered already.")));
      card.askSlot.appendChild(node);
      answeredSummary(node, p);
    }
  }

  placeAsk(a) {
    // A subagent's question sits on the card of the task call that started it.
    const card = this.cardFor(a.pending.callId) || this.cardFor(callOfChild(this, a.pending.fromSessionId));
    (card ? card.askSlot : this.looseAsks).appendChild(a.inline);
  }

  async answer(askId, value) {
    await api("POST", `/api/sessions/${enc(this.id)}/asks/${enc(askId)}`, { answer: value });
    // The ask.resolved event says so; this covers a socket that is reconnecting.
    this.resolveAsk({ askId, outcome: "answered", answer: value });
  }

  removeAsk(askId) {
    const a = this.asks.get(askId);
    if (!a) return;
    a.inline.remove();
    this.asks.delete(askId);
    this.showRunStatus();
    if (this.dialogAsk?.id === askId && this.dialogAsk.dialog.open) this.dialogAsk.dialog.close();
  }

  resolveAsk(p) {
    const a = this.asks.get(p.askId);
    if (!a) return;
    this.asks.delete(p.askId);
    this.showRunStatus();
    if (this.dialogAsk?.id === p.askId && this.dialogAsk.dialog.open) this.dialogAsk.dialog.close();
    // The question stays readable where it was, with what became of it.
    answeredSummary(a.inline, p);
  }

  // ---- turns ------------------------------------------------------------------------------

  async send() {
    const text = this.input.value;
    const images = this.attachments.slice();
    const resources = this.resources.slice();
    if (!text.trim() && !images.length && !resources.length) {
      replace(this.composerErr, "Write a message first.");
      return;
    }
    replace(this.composerErr);
    // Running from now (unless it was queued): the turn's events may all arrive
    // (turn.finished included) before the POST's answer, so nothing after the answer may
    // set it again.
    const wasRunning = this.running;
    if (!wasRunning) this.setRunning(true);
    // The message leaves the box now: what the person types while it is on its way is the
    // next message, never merged into this one (an Enter then sent the merge).
    this.input.value = "";
    for (const img of images) this.removeAttachment(img);
    for (const res of resources) this.removeResource(res);
    // The person sent: they want to see what comes, wherever they had scrolled.
    jumpToLatest(this);
    try {
      const body = { text };
      if (images.length) body.images = images.map(({ mediaType, data }) => ({ mediaType, data }));
      if (resources.length) body.resources = resources.map(({ server, workspaceId, uri }) => ({ server, workspaceId, uri }));
      const files = this.mentions.filesIn(text);
      if (files.length) body.files = files;
      // Sent now when the session is idle, else queued for the running turn's end.
      await sendOrQueue(this, body);
    } catch (err) {
      if (!wasRunning && err.code !== "busy") this.setRunning(false);
      // Not sent: it goes back in the box, before anything typed since.
      const since = this.input.value;
      this.input.value = since.trim() ? `${text}\n${since}` : text;
      for (const img of images) this.putBackAttachment(img);
      for (const res of resources) this.attachResource(res);
      replace(this.composerErr, noProviderHelp(err) || errorText(err));
    }
  }

  putBackAttachment(img) {
    this.attachments.push(img);
    this.attachList.appendChild(img.el);
  }

  async attachFiles(files) {
    for (const file of files) {
      if (!IMAGE_TYPES.includes(file.type)) {
        replace(this.composerErr, `${file.name || "That file"} is not a PNG, JPEG, GIF or WebP image, so it was not attached.`);
        continue;
      }
      if (file.size > MAX_IMAGE_BYTES) {
        replace(this.composerErr, `${file.name || "The image"} is ${(file.size / 1048576).toFixed(1)} MiB; an image may be at most ${MAX_IMAGE_BYTES / 1048576} MiB, so it was not attached.`);
        continue;
      }
      let data;
      try {
        data = base64Of(new Uint8Array(await file.arrayBuffer()));
      } catch (err) {
        replace(this.composerErr, `${file.name || "The image"} could not be read: ${errorText(err)}`);
        continue;
      }
      const img = { mediaType: file.type, data, name: file.name || "pasted image" };
      img.el = h("figure", { class: "attachment" },
        imageElement(img.mediaType, img.data, img.name),
        h("figcaption", { class: "small muted" }, img.name),
        h("button", { type: "button", class: "icon-btn", "aria-label": `Remove ${img.name}`, title: "Remove", onclick: () => this.removeAttachment(img) }, "×"));
      this.attachments.push(img);
      this.attachList.appendChild(img.el);
    }
  }

  attachResource(res) {
    if (this.resources.some((r) => r.server === res.server && r.workspaceId === res.workspaceId && r.uri === res.uri)) return;
    res.el = resourceChip(res, () => this.removeResource(res));
    this.resources.push(res);
    this.attachList.appendChild(res.el);
  }

  removeResource(res) {
    this.resources = this.resources.filter((r) => r !== res);
    res.el.remove();
  }

  removeAttachment(img) {
    this.attachments = this.attachments.filter((a) => a !== img);
    img.el.remove();
  }

  async stop() {
    if (!this.running) return;
    try {
      await api("POST", `/api/sessions/${enc(this.id)}/stop`);
      // The turn may have ended before this answer came: then there is nothing to stop.
      this.stopping = this.running;
      this.showRunStatus();
    } catch (err) {
      notify(`Could not stop the turn: ${errorText(err)}`, "error");
    }
  }

  turnFinished(p) {
    this.setRunning(false);
    if (p.messageId) this.finished.set(p.messageId, p);
    const turn = this.turnOfMessage(p.messageId) || this.turns[this.turns.length - 1];
    if (turn && p.reason && p.reason !== "done") {
      turn.body.appendChild(h("p", { class: `turn-end reason-${p.reason} ${p.reason === "error" ? "error" : "muted"}`, role: "status" },
        reasonWords[p.reason] || p.reason, p.error ? h("span", { class: "turn-end-error" }, " " + p.error) : ""));
    }
    if (turn) {
      const model = this.messages.get(p.messageId)?.msg.model || this.session.model;
      turn.body.querySelector(".turn-usage")?.remove();
      turn.body.appendChild(turnUsage(p.usage, model));
    }
    this.reconcile();
    this.loadLedgers();
    this.refreshUsage();
  }

  /** refreshUsage redraws the session's tokens and cost after a turn. */
  refreshUsage() {
    api("GET", `/api/sessions/${enc(this.id)}`).then((s) => {
      this.session = { ...this.session, ...s };
      replace(this.usageEl, usageText(this.session));
      this.app.onSessionChanged(this.session);
    }, () => {});
  }

  /** reconcile reloads the messages so the view matches the store exactly after a turn. */
  async reconcile() {
    try {
      const res = await api("GET", `/api/sessions/${enc(this.id)}/messages`);
      for (const msg of res.messages || []) {
        const m = this.messages.get(msg.id);
        if (!m) {
          this.upsertMessage(msg);
          continue;
        }
        m.msg = { ...m.msg, ...msg, parts: undefined };
        for (const part of msg.parts || []) {
          const p = m.parts.get(part.id);
          if (p && p.part.kind === "text" && p.text === (part.text || "") && p.part.status === part.status) continue;
          this.upsertPart(part);
        }
        this.showMessageMeta(m);
      }
    } catch {
      // The live view stays; the next load shows the stored state.
    }
  }

  turnOfMessage(messageId) {
    const m = this.messages.get(messageId);
    return m ? m.turn : null;
  }

  // ---- changes and restore ----------------------------------------------------------------

  async loadLedgers() {
    let res;
    try {
      res = await api("GET", `/api/sessions/${enc(this.id)}/ledgers`);
    } catch {
      return; // the conversation stays usable without the change summaries
    }
    this.ledgers.clear();
    for (const t of res.turns || []) this.ledgers.set(t.messageId, t);
    for (const t of this.turns) this.drawFooter(t);
  }

  placeLedger(messageId) {
    if (this.ledgers.has(messageId)) this.drawFooter(this.turnOfMessage(messageId));
  }

  drawFooter(turn) {
    if (!turn) return;
    const ledgers = turn.messageIds.map((id) => this.ledgers.get(id)).filter(Boolean);
    const items = [];
    for (const l of ledgers) {
      // The count is of what the dialog lists; nothing changed, nothing to say.
      const n = (l.files || []).length;
      if (!n) continue;
      const failed = (l.files || []).filter((f) => f.ok === false).length;
      items.push(h("button", { type: "button", class: "changed-files link", onclick: () => this.showChanges(l) },
        `Changed ${plural(n, "file")}`, failed ? ` (${failed} failed)` : ""));
      if (l.restoredAt) items.push(h("span", { class: "badge" }, "restored"));
    }
    if (turn.userId) {
      items.push(h("button", { type: "button", class: "restore link", onclick: () => this.restore(turn) , title: "Put the workspace's files back as they were before this turn" }, "Restore to here"));
    }
    replace(turn.footer, items);
  }

  showChanges(l) {
    const nodes = [];
    for (const f of l.files || []) nodes.push(fileChangeView(f));
    if (!nodes.length) nodes.push(h("p", { class: "muted" }, "No files changed."));
    openDialog(`Changed ${plural((l.files || []).length, "file")}`, h("div", { class: "changes" }, nodes), { class: "wide" });
  }

  async restore(turn) {
    const body = { messageId: turn.userId };
    let report;
    try {
      report = (await api("POST", `/api/sessions/${enc(this.id)}/restore`, { ...body, dryRun: true })).report || {};
    } catch (err) {
      if (err.code === "conflict" && err.details?.report) report = err.details.report;
      else {
        notify(`Cannot restore: ${errorText(err)}`, "error");
        return;
      }
    }
    const lists = reportLists(report);
    const conflicts = report.conflicts || [];
    const unrestorable = report.unrestorable || [];
    if (!lists.length && !conflicts.length && !unrestorable.length) {
      openDialog("Restore to here", h("p", null, "Nothing would change: the files are already as they were before this turn."));
      return;
    }
    let okLabel = "Restore";
    if (conflicts.length && unrestorable.length) okLabel = "Restore, overwriting outside changes and skipping what cannot be put back";
    else if (conflicts.length) okLabel = "Restore, overwriting outside changes";
    else if (unrestorable.length) okLabel = "Restore what can be put back";
    const ok = await confirmAction("Restore to here?", [
      h("p", null, "Every file this session changed from this turn on goes back to how it was before the turn:"),
      lists,
      problemList("Changed outside jean2 since (these changes would be lost)", conflicts, "conflicts"),
      problemList("Cannot be put back exactly (left as they are)", unrestorable, "unrestorable"),
    ], okLabel, { danger: true, focusCancel: true });
    if (!ok) return;
    try {
      const res = await api("POST", `/api/sessions/${enc(this.id)}/restore`, { ...body, force: conflicts.length > 0, partial: unrestorable.length > 0 });
      const r = res.report || {};
      openDialog("Restored", [
        h("p", { class: "restore-result" }, r.applied === false ? "Nothing needed to change." : "The workspace is back as it was before this turn."),
        reportLists(r),
        problemList("Failed", r.errors || [], "errors"),
        problemList("Left as they are", r.unrestorable || [], "unrestorable")]);
    } catch (err) {
      const rep = err.details?.report || {};
      openDialog("Not restored", [h("p", { class: "error" }, errorText(err)),
        problemList("Changed outside jean2 since", rep.conflicts || [], "conflicts"),
        problemList("Cannot be put back exactly", rep.unrestorable || [], "unrestorable")]);
    }
    this.loadLedgers();
  }

  // ---- session actions --------------------------------------------------------------------

  async rename() {
    const title = await promptText("Rename session", "Title", this.session.title || "");
    if (title === null) return;
    try {
      this.session = { ...this.session, ...(await api("PATCH", `/api/sessions/${enc(this.id)}`, { title })) };
      replace(this.titleEl, this.session.title);
      this.app.onSessionChanged(this.session);
    } catch (err) {
      notify(`Rename failed: ${errorText(err)}`, "error");
    }
  }

  async chooseModel() {
    let providers;
    try {
      providers = await api("GET", "/api/providers");
    } catch (err) {
      notify(errorText(err), "error");
      return;
    }
    const sel = h("select", { id: "session-provider" }, h("option", { value: "" }, `Default (${providers.default || "none configured"})`),
      (providers.providers || []).map((p) => h("option", { value: p.name, selected: p.name === this.session.provider }, `${p.name} (${p.kind})`)));
    const model = h("input", { type: "text", id: "session-model", value: this.session.model || "", placeholder: "the provider's default model" });
    const err = h("p", { class: "error", role: "alert" });
    const form = h("form", {
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          this.session = { ...this.session, ...(await api("PATCH", `/api/sessions/${enc(this.id)}`, { provider: sel.value, model: model.value.trim() })) };
          this.showModel();
          d.close();
        } catch (er) {
          replace(err, errorText(er));
        }
      },
    }, h("label", { for: "session-provider" }, "Provider"), sel, h("label", { for: "session-model" }, "Model"), model,
      modelPicker(model, () => sel.value || providers.default, sel), err,
      h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Save"), h("button", { type: "button", onclick: () => d.close() }, "Cancel")));
    const d = openDialog("Provider and model for this session", form);
  }

  focusComposer() {
    this.input?.focus({ preventScroll: true });
  }

  scrollToEnd() {
    // Follow new output only when the person is following the bottom (follow.js).
    followBottom(this);
  }
}

// The images a message may carry, and their size limit: the server's (store.CheckImage).
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const MAX_IMAGE_BYTES = 5 << 20;

// imageElement draws an image part from its bytes (base64); anything else is said, not drawn.
export function imageElement(mediaType, data, alt) {
  if (!IMAGE_TYPES.includes(mediaType) || typeof data !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) {
    return h("p", { class: "muted small" }, `[an image that cannot be shown: ${mediaType || "no media type"}]`);
  }
  const img = h("img", { class: "attached-image", alt });
  // Set here, not through h (whose src allows http, https and relative URLs only): a data URL
  // of a checked image type and base64 bytes can only be that image.
  img.src = `data:${mediaType};base64,${data}`;
  return img;
}

function base64Of(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function preview(args) {
  const s = String(args).replace(/\s+/g, " ");
  return s.length > 80 ? s.slice(0, 80) + "…" : s;
}

function fileChangeView(f) {
  const b = f.before || {};
  const a = f.after || {};
  const head = h("p", { class: "change-head" }, h("code", null, f.path), " ",
    h("span", { class: "muted small" }, (f.ops || []).join(", "), f.tools?.length ? ` by ${f.tools.join(", ")}` : ""),
    f.ok === false ? h("span", { class: "badge fail" }, " failed") : null);
  const errs = (f.errors || []).length ? h("ul", { class: "error" }, f.errors.map((e) => h("li", null, e))) : null;
  let body;
  // A path whose every change failed was not changed: what stands there says nothing of it.
  if (f.ok === false) body = h("p", { class: "muted" }, "Not changed: the change failed.");
  else if (b.isDir || a.isDir) body = h("p", { class: "muted" }, `Folder ${!b.exists ? "created" : !a.exists ? "removed" : "changed"}.`);
  else if (b.binary || a.binary) body = h("p", { class: "muted" }, "Binary file: no text diff.");
  else if (b.tooLarge || a.tooLarge) body = h("p", { class: "muted" }, `Too large to show (${a.size ?? b.size ?? "?"} bytes).`);
  else {
    const viz = fileDiff(f.path, b.exists === false ? "" : b.text || "", a.exists === false ? "" : a.text || "");
    viz.title = !b.exists ? `${f.path} (created)` : !a.exists ? `${f.path} (deleted)` : f.path;
    body = renderVisualization(viz);
  }
  return h("section", { class: "file-change" }, head, errs, body);
}

const reportWords = {
  restored: "Put back",
  recreated: "Made again (deleted since)",
  removed: "Removed (created since)",
  unverified: "Not checked for outside changes",
};

/** reportLists draws the path lists of an undo report (docs/api.md, restore). */
function reportLists(report) {
  const out = [];
  for (const [key, title] of Object.entries(reportWords)) {
    const val = report?.[key];
    if (!Array.isArray(val) || !val.length) continue;
    out.push(h("section", { class: `report-list report-${key}` }, h("h3", null, title, ` (${val.length})`),
      h("ul", null, val.map((p) => h("li", null, h("code", null, String(p)))))));
  }
  return out;
}

function problemList(title, problems, cls) {
  if (!problems || !problems.length) return null;
  return h("section", { class: `report-list ${cls}` },
    h("h3", null, title, ` (${problems.length})`),
    h("ul", null, problems.map((c) => h("li", null, h("code", null, c.path), c.reason ? ` — ${c.reason}` : ""))));
}
