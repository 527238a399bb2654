// The tools page: every tool with version, runtime, status and error, its declared
// environment variables (set or missing, never their values), and a Run form generated from
// its inputSchema. It follows the server's log, so a reload of the tools shows at once.

import { api, enc, EventStream } from "./api.js";
import { h, replace, formatDuration, durationMsOf, prettyJSON } from "./dom.js";
import { highlight } from "./highlight.js";
import { renderVisualization } from "./viz.js";
import { schemaForm } from "./schemaform.js";
import { errorText } from "./ui.js";
import { renderAsk } from "./asks.js";
import { renderMarkdown } from "./markdown.js";
import { SkillsSection } from "./skills.js";
import { agentsSection } from "./agents.js";
import { permissionsView } from "./grants.js";

export class ToolsView {
  constructor(app) {
    this.app = app;
    this.cards = new Map(); // name → {tool, el}
    this.el = h("section", { class: "tools-view", "aria-labelledby": "tools-title" });
  }

  async mount(container) {
    this.list = h("div", { class: "tool-list" });
    this.live = h("p", { class: "muted small", role: "status", "aria-live": "polite" });
    this.runs = new Set(); // event streams of runs in progress (closed when they end or the page changes)
    this.progress = new Map(); // run ref → function showing that run's progress
    this.search = h("input", { type: "search", id: "tool-search", placeholder: "name or words of the description", oninput: () => this.filter() });
    this.searchCount = h("p", { class: "muted small tool-search-count", role: "status", "aria-live": "polite" });
    replace(this.el, h("h2", { id: "tools-title" }, "Tools"),
      h("div", { class: "tool-search" }, h("label", { for: "tool-search" }, "Search the tools"), this.search, this.searchCount),
      this.live, this.list);
    this.skills = new SkillsSection(this.app);
    this.el.append(this.skills.el, agentsSection());
    replace(container, this.el);
    await Promise.all([this.refresh(), this.skills.refresh()]);
  }

  unmount() {
    for (const s of this.runs) s.close();
    this.runs.clear();
  }

  /** onRunProgress shows tool.run.progress of a run started here (from either log). */
  onRunProgress(p) {
    if (p?.ref && this.progress.has(p.ref)) this.progress.get(p.ref)(p.progress || {});
  }

  /** onToolsChanged is called by the app for tools.changed on the server log. */
  async onToolsChanged(p) {
    const said = [];
    if (p.added?.length) said.push(`added ${p.added.join(", ")}`);
    if (p.changed?.length) said.push(`changed ${p.changed.join(", ")}`);
    if (p.removed?.length) said.push(`removed ${p.removed.join(", ")}`);
    // A changed tool that does not load: its card says why (its last version may still serve).
    const failed = p.failed || [];
    for (const f of failed) said.push(`${f.name} failed to load: ${f.error}`);
    await this.refresh(new Set([...(p.added || []), ...(p.changed || []), ...failed.map((f) => f.name)]));
    replace(this.live, `Tools reloaded${said.length ? ": " + said.join("; ") : ""}.`);
  }

  async refresh(redraw) {
    let tools;
    try {
      tools = (await api("GET", "/api/tools")).tools || [];
    } catch (err) {
      replace(this.live, `Cannot list the tools: ${errorText(err)}`);
      return;
    }
    tools.sort((a, b) => a.name.localeCompare(b.name));
    const names = new Set(tools.map(cardKey));
    for (const [name, c] of this.cards) if (!names.has(name)) {
      c.el.remove();
      this.cards.delete(name);
    }
    if (!tools.length) {
      replace(this.list, h("p", { class: "muted" }, "No tools yet. Put a tool folder in the tools directory ($JEAN2_HOME/tools) or install one with jean2 tools install."));
      return;
    }
    this.list.querySelector(":scope > p")?.remove();
    let prev = null;
    for (const t of tools) {
      let c = this.cards.get(cardKey(t));
      const same = c && JSON.stringify(c.tool) === JSON.stringify(t) && !(redraw && redraw.has(t.name));
      if (!same) {
        const el = this.card(t);
        if (c) c.el.replaceWith(el);
        c = { tool: t, el };
        this.cards.set(cardKey(t), c);
      }
      // Keep alphabetical order.
      const want = prev ? prev.nextSibling : this.list.firstChild;
      if (want !== c.el) this.list.insertBefore(c.el, want);
      prev = c.el;
    }
    this.filter();
  }

  /** filter shows the tools whose name, title or description hold every word searched for. */
  filter() {
    const words = (this.search?.value || "").toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const c of this.cards.values()) {
      const hay = [c.tool.name, c.tool.title, c.tool.description].join(" ").toLowerCase();
      c.el.hidden = !words.every((w) => hay.includes(w));
      if (!c.el.hidden) shown++;
    }
    replace(this.searchCount, words.length ? `${shown} of ${this.cards.size} tools match.` : "");
  }

  card(t) {
    const id = "tool-" + cardKey(t).replace(/[^A-Za-z0-9_-]/g, "_");
    const env = t.env?.length ? h("table", { class: "env" },
      h("caption", { class: "small muted" }, "Environment variables"),
      h("tbody", null, t.env.map((e) => h("tr", null, h("td", null, h("code", null, e.name)),
        h("td", null, h("span", { class: "badge " + (e.set ? "ok" : "fail") }, e.set ? "set" : "missing"),
          e.withheld ? h("span", { class: "muted small" }, " withheld from tools (a provider key)") : null))))) : null;
    const perms = permissionsView(t, () => this.refresh());
    const runBox = h("div", { class: "run-box" });
    const runDetails = h("details", { class: "run", ontoggle: () => { if (runDetails.open && !runBox.firstChild) this.runForm(t, runBox); } },
      h("summary", null, "Run ", t.name), runBox);
    return h("article", { class: `tool status-${t.status}`, id, dataset: { tool: t.name } },
      h("header", null,
        h("h3", null, t.title || t.name),
        h("span", { class: "badge", title: "version" }, /^\d/.test(t.version || "") ? "v" + t.version : t.version || "?"),
        h("span", { class: "badge" }, t.runtime || t.kind || ""),
        h("span", { class: "badge " + (t.status === "ok" ? "ok" : "fail") }, t.status)),
      t.title && t.title !== t.name ? h("p", { class: "small" }, h("code", null, t.name)) : null,
      t.error ? h("p", { class: "error tool-error" }, t.error) : null,
      // Descriptions are written for the model in Markdown: drawn as such for the person.
      t.description ? h("div", { class: "description" }, renderMarkdown(t.description)) : null,
      t.folder ? h("p", { class: "muted small" }, "Folder: ", h("code", null, t.folder)) : null,
      env, perms,
      t.status === "ok" || t.hash ? runDetails : null);
  }

  async runForm(t, box) {
    let full = t;
    if (!t.inputSchema) {
      try {
        full = await api("GET", `/api/tools/${enc(t.name)}`);
      } catch (err) {
        replace(box, h("p", { class: "error" }, errorText(err)));
        return;
      }
    }
    const form = schemaForm(full.inputSchema || { type: "object" });
    const workspaces = this.app.workspaces();
    const uid = "run-" + t.name.replace(/[^A-Za-z0-9_-]/g, "_");
    const wsSel = h("select", { id: uid + "-ws" },
      workspaces.map((w) => h("option", { value: w.id, selected: w.id === this.app.currentWorkspaceId() }, `${w.name} (${w.path})`)));
    const sesSel = h("select", { id: uid + "-session", "aria-describedby": uid + "-session-help" });
    const fillSessions = () => {
      const last = this.app.lastSessionId();
      replace(sesSel, h("option", { value: "" }, "none — the unattended policy answers"),
        this.app.sessionsOf(wsSel.value).map((s) => h("option", { value: s.id, selected: s.id === last }, s.title || "Untitled session")));
    };
    wsSel.addEventListener("change", fillSessions);
    fillSessions();
    const err = h("p", { class: "error", role: "alert" });
    const asks = h("div", { class: "run-asks" });
    const out = h("div", { class: "run-output", "aria-live": "polite" });
    const btn = h("button", { type: "submit", class: "primary" }, "Run");
    const f = h("form", {
      onsubmit: async (e) => {
        e.preventDefault();
        replace(err);
        const [ok, args] = form.value();
        if (!ok) {
          replace(err, args);
          return;
        }
        if (!wsSel.value) {
          replace(err, "Create a workspace first: a tool runs in a workspace's folder.");
          return;
        }
        btn.disabled = true;
        const progress = h("p", { class: "muted run-progress", role: "status" }, "Running…");
        replace(out, progress);
        // The ref ties the run's progress events (on the session's log, or the server's) to this form.
        const ref = `${t.name}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
        const body = { args, workspaceId: wsSel.value, ref };
        if (sesSel.value) body.sessionId = sesSel.value;
        const onProgress = (pr) => replace(progress, progressText(pr));
        this.progress.set(ref, onProgress);
        const stream = sesSel.value ? await this.followAsks(sesSel.value, asks) : null;
        try {
          const res = await api("POST", `/api/tools/${enc(t.name)}/run`, body);
          replace(out, outcomeView(res));
        } catch (er) {
          replace(out);
          replace(err, errorText(er));
        } finally {
          this.progress.delete(ref);
          btn.disabled = false;
          if (stream) {
            stream.close();
            this.runs.delete(stream);
          }
          replace(asks);
        }
      },
    }, form.node,
    h("label", { for: uid + "-ws" }, "Workspace"), wsSel,
    h("label", { for: uid + "-session" }, "Session (answers the tool's questions)"), sesSel,
    h("p", { class: "help", id: uid + "-session-help" }, "With a session, the tool's questions appear here and in that session; without one, permissions follow Settings and other questions are refused."),
    h("div", { class: "buttons" }, btn), err, asks, out);
    replace(box, f);
  }

  /**
   * followAsks shows the asks of a session while a run waits on them: the run's questions
   * come to that session's log like a turn's.
   */
  async followAsks(sessionId, box) {
    let after = 0;
    try {
      after = (await api("GET", `/api/sessions/${enc(sessionId)}`)).lastSeq || 0;
    } catch {
      return null; // the run itself reports what is wrong with the session
    }
    const shown = new Map();
    const answer = async (id, v) => {
      await api("POST", `/api/sessions/${enc(sessionId)}/asks/${enc(id)}`, { answer: v });
      shown.get(id)?.remove();
      shown.delete(id);
    };
    const add = (p) => {
      if (shown.has(p.id)) return;
      const node = renderAsk(p, (v) => answer(p.id, v));
      shown.set(p.id, node);
      box.appendChild(node);
    };
    // The run must start only once this page is attached to the session: with nobody
    // attached, the server lets the unattended policy answer at once.
    let attached;
    const ready = new Promise((resolve) => (attached = resolve));
    const stream = new EventStream(`/api/sessions/${enc(sessionId)}/ws`, after, {
      onHello: (f) => {
        (f.pendingAsks || []).forEach(add);
        attached();
      },
      onEvent: (ev) => {
        if (ev.type === "tool.run.progress") this.onRunProgress(ev.payload);
        if (ev.type === "ask.pending" && ev.payload?.ask) add(ev.payload.ask);
        if (ev.type === "ask.resolved") {
          shown.get(ev.payload?.askId)?.remove();
          shown.delete(ev.payload?.askId);
        }
      },
    });
    this.runs.add(stream);
    await Promise.race([ready, new Promise((resolve) => setTimeout(resolve, 10000))]);
    return stream;
  }
}

function progressText(pr) {
  const parts = ["Running…"];
  if (pr.message) parts.push(pr.message);
  if (pr.total) parts.push(`${pr.current ?? 0} / ${pr.total}`);
  else if (pr.current) parts.push(String(pr.current));
  return parts.join(" ");
}

function outcomeView(o) {
  const r = o.result || {};
  return h("div", { class: "outcome " + (r.success ? "ok" : "fail") },
    h("p", null, h("span", { class: "badge " + (r.success ? "ok" : "fail") }, r.success ? "success" : "failed"),
      durationMsOf(o) !== undefined ? h("span", { class: "muted small" }, " " + formatDuration(durationMsOf(o))) : null,
      o.toolVersion ? h("span", { class: "muted small" }, " · v" + o.toolVersion) : null),
    r.error ? h("p", { class: "error" }, r.error) : null,
    r.visualization ? renderVisualization(r.visualization) : null,
    o.visualizationError ? h("p", { class: "error small" }, "The tool's visualization was refused: ", o.visualizationError) : null,
    h("details", null, h("summary", null, "What the model would see"), h("pre", { class: "json" }, highlight(prettyJSON(o.modelText ?? ""), "json"))),
    h("details", null, h("summary", null, "Result"), h("pre", { class: "json" }, highlight(prettyJSON({ ...r, visualization: undefined }), "json"))));
}

/** cardKey tells a tool's card apart: a folder shadowed by a built-in of its name has its own. */
function cardKey(t) {
  return t.status === "shadowed" ? `${t.name} (${t.folder})` : t.name;
}
