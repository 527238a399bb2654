// The session's agent (docs/harness.md, "Agents and plan mode"): a control in the session's
// header names it and switches to the next one (build → plan → the agent files' → build);
// Tab in the empty message box does the same. Agent files that did not load are named
// beside it, so a broken file is seen where the agent is chosen.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { notify, errorText } from "./ui.js";

export class AgentControl {
  /** view is the SessionView: its session (agent, workspaceId) and onAgentChanged. */
  constructor(view) {
    this.view = view;
    this.agents = null; // the last GET /api/workspaces/{id}/agents
    this.btn = h("button", {
      type: "button", class: "link agent-btn", id: "agent", "aria-keyshortcuts": "Tab",
      title: "The session's agent: click (or Tab in the empty message box) to switch to the next",
      onclick: () => this.next(),
    });
    this.problems = h("span", { class: "error small", id: "agent-problems", role: "status", hidden: true });
    this.el = h("span", { class: "session-agent" }, this.btn, this.problems);
    this.show();
    this.load();
  }

  name() {
    return this.view.session?.agent || "build";
  }

  /** show names the session's agent; plan mode is marked read-only. */
  show() {
    const ag = this.agents?.agents?.find((a) => a.name === this.name());
    const readOnly = ag ? ag.readOnly : this.name() === "plan";
    replace(this.btn, "Agent: ", h("strong", null, this.name()), readOnly ? " (read-only)" : "");
    this.btn.classList.toggle("read-only", readOnly);
    if (ag?.description) this.btn.title = `${ag.description} — click (or Tab in the empty message box) to switch`;
  }

  /** load reads the workspace's agents now: files load live, so each switch reads them again. */
  async load() {
    try {
      this.agents = await api("GET", `/api/workspaces/${enc(this.view.session.workspaceId)}/agents`);
    } catch (err) {
      this.problems.hidden = false;
      replace(this.problems, `Agents could not be read: ${errorText(err)}`);
      return;
    }
    const bad = this.agents.problems || [];
    this.problems.hidden = !bad.length;
    replace(this.problems, bad.length ? `${bad.length} agent file${bad.length > 1 ? "s" : ""} not loaded` : "");
    this.problems.title = bad.map((p) => `${p.path}: ${p.error}`).join("\n");
    this.show();
  }

  /** next switches the session to the agent after its own. */
  async next() {
    await this.load();
    const names = (this.agents?.agents || []).map((a) => a.name);
    if (!names.length) return;
    const to = names[(names.indexOf(this.name()) + 1) % names.length];
    try {
      const ses = await api("PATCH", `/api/sessions/${enc(this.view.session.id)}`, { agent: to });
      this.view.session = { ...this.view.session, agent: ses.agent };
      this.show();
      notify(`Agent: ${ses.agent}${ses.agent === "plan" ? " — read-only: edits and commands are refused" : ""}`);
    } catch (err) {
      notify(`Could not switch the agent: ${errorText(err)}`, "error");
    }
  }
}

/**
 * agentsSection lists, on the tools page, the agents each workspace's sessions may run with
 * (read from their files now) and the agent files that did not load, with their errors.
 */
export function agentsSection() {
  const el = h("section", { class: "agents-section", id: "agents", "aria-labelledby": "agents-title" },
    h("h3", { id: "agents-title" }, "Agents"), h("p", { class: "muted small" }, "Loading the agents…"));
  (async () => {
    let wss;
    try {
      wss = (await api("GET", "/api/workspaces")).workspaces || [];
    } catch (err) {
      replace(el, h("h3", { id: "agents-title" }, "Agents"), h("p", { class: "error" }, `Agents could not be read: ${errorText(err)}`));
      return;
    }
    const blocks = await Promise.all(wss.map(async (ws) => {
      try {
        return workspaceAgents(ws, await api("GET", `/api/workspaces/${enc(ws.id)}/agents`));
      } catch (err) {
        return h("p", { class: "error" }, `${ws.path}: ${errorText(err)}`);
      }
    }));
    replace(el, h("h3", { id: "agents-title" }, "Agents"),
      h("p", { class: "muted small" }, "Markdown files in ~/.jean2/agents, a workspace's .jean2/agents or .claude/agents; chosen per session in its header."),
      blocks.length ? blocks : h("p", { class: "muted small" }, "No workspace yet."));
  })();
  return el;
}

function workspaceAgents(ws, res) {
  const rows = (res.agents || []).map((a) => h("li", { class: "agent", dataset: { agent: a.name } },
    h("strong", null, a.name), a.readOnly ? [" ", h("span", { class: "badge" }, "read-only")] : "",
    h("span", { class: "muted small" }, ` ${a.scope}${a.tools ? " · tools: " + (a.tools.join(", ") || "none") : ""}${a.model ? " · model " + a.model : ""}`),
    a.description ? h("div", { class: "small" }, a.description) : "",
    (a.warnings || []).map((w) => h("div", { class: "small warn" }, `warning: ${w}`))));
  const problems = (res.problems || []).map((p) => h("li", { class: "agent-problem error small" }, `${p.path}: ${p.error}`));
  return h("details", { class: "workspace-agents", open: true },
    h("summary", null, ws.name || ws.path),
    h("ul", { class: "agent-list" }, rows),
    problems.length ? h("ul", { class: "agent-problems", "aria-label": "Agent files not loaded" }, problems) : "");
}
