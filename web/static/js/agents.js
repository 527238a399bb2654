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
