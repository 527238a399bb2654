// The skills section of the tools page: the skills a session of the current workspace is
// offered at its next turn ($JEAN2_HOME's and the workspace's own .jean2/skills), each with
// its description, and the broken ones with why they cannot be used. The server reads the
// folders at each request; the app refreshes this on skills.broken from the server's log.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { errorText } from "./ui.js";

export class SkillsSection {
  constructor(app) {
    this.app = app;
    this.el = h("section", { class: "skills-section", "aria-labelledby": "skills-title" });
  }

  async refresh() {
    const wid = this.app.currentWorkspaceId();
    const title = h("h2", { id: "skills-title" }, "Skills");
    let view;
    try {
      view = await api("GET", wid ? `/api/workspaces/${enc(wid)}/skills` : "/api/skills");
    } catch (err) {
      replace(this.el, title, h("p", { class: "muted" }, `Cannot list the skills: ${errorText(err)}`));
      return;
    }
    const skills = view.skills || [];
    const about = h("p", { class: "muted small" },
      `Folders holding a SKILL.md, in ${(view.folders || []).join(" and ")}, read at each turn. ` +
      "Only their names and descriptions are sent to the model, until it loads one.");
    if (!skills.length) {
      replace(this.el, title, about, h("p", { class: "muted" }, "No skills yet."));
      return;
    }
    replace(this.el, title, about, h("ul", { class: "skill-list" }, skills.map((s) => this.item(s))));
  }

  item(s) {
    const notes = [s.scope === "home" ? "every workspace" : "this workspace"];
    if (s.shadowed) notes.push("replaced by the workspace's skill of this name");
    if (s.disableModelInvocation) notes.push("not offered to the model");
    return h("li", { class: `skill${s.error ? " skill-broken" : ""}`, dataset: { skill: s.name, scope: s.scope } },
      h("strong", {}, s.name), " ", h("span", { class: "muted small" }, `(${notes.join("; ")})`),
      s.error ? h("p", { class: "error" }, `Cannot be used: ${s.error}`) : h("p", {}, s.description),
      h("p", { class: "muted small skill-path" }, s.path));
  }
}
