// The schedules page (#/schedules): prompts the server sends to a workspace on a cron
// schedule (docs/automation.md, "Scheduled sessions"). Each schedule shows its next run and
// its recent runs — outcome, refusals, a link to the run's session — and can be paused,
// resumed or deleted; a form adds one. The server checks everything and says what is wrong.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { confirmAction, errorText } from "./ui.js";

/** when formats a time on the schedule's own zone's clock. */
function when(iso, zone) {
  if (!iso) return "—";
  try {
    return new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short", timeZone: zone, timeZoneName: "short" }).format(new Date(iso));
  } catch {
    return String(iso);
  }
}

/** rules reads a box of rules, one a line or comma-separated. */
function rules(text) {
  return text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
}

export class SchedulesView {
  constructor(app) {
    this.app = app;
    this.el = h("section", { class: "schedules-view", "aria-labelledby": "schedules-title" });
  }

  async mount(container) {
    this.list = h("div", { class: "schedule-list" });
    this.live = h("p", { class: "muted small", role: "status", "aria-live": "polite" });
    replace(this.el, h("h2", { id: "schedules-title" }, "Schedules"),
      h("p", { class: "muted" }, "Prompts sent to a workspace on a schedule. Each run is a new session; the tools' asks are answered by the schedule's rules, and what they do not cover is refused and listed with the run."),
      this.form(),
      h("div", { class: "buttons" }, h("button", { type: "button", id: "sch-refresh", onclick: () => this.refresh() }, "Refresh")),
      this.live, this.list);
    replace(container, this.el);
    await this.refresh();
  }

  unmount() {}

  form() {
    const ws = h("select", { id: "sch-workspace", required: true },
      this.app.ws.map((w) => h("option", { value: w.id }, w.name || w.path)));
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    this.err = h("p", { class: "error", role: "alert", id: "sch-error" });
    const field = (label, input, help) => h("label", null, label, input, help ? h("span", { class: "help" }, help) : null);
    const f = {
      ws, name: h("input", { id: "sch-name", type: "text" }),
      prompt: h("textarea", { id: "sch-prompt", rows: 3, required: true }),
      cron: h("input", { id: "sch-cron", type: "text", required: true, placeholder: "0 9 * * 1-5" }),
      zone: h("input", { id: "sch-zone", type: "text", required: true, value: zone }),
      allow: h("input", { id: "sch-allow", type: "text", placeholder: "read-*, shell:file" }),
      deny: h("input", { id: "sch-deny", type: "text", placeholder: "deploy" }),
      catchUp: h("select", { id: "sch-catchup" }, h("option", { value: "once" }, "one run for all of them"), h("option", { value: "skip" }, "skip them")),
    };
    return h("form", { class: "schedule-form", onsubmit: (e) => { e.preventDefault(); this.add(f); } },
      h("h3", null, "Add a schedule"),
      field("Workspace", f.ws), field("Name", f.name), field("Prompt", f.prompt),
      field("Cron", f.cron, "minute hour day-of-month month day-of-week, or @hourly, @daily, @weekly…"),
      field("Time zone", f.zone, "an IANA zone, such as Europe/Paris or UTC"),
      field("Allow", f.allow, "permission asks these tools (TOOL or TOOL:RESOURCE) are granted, once each"),
      field("Deny", f.deny, "asks of these tools are refused"),
      field("Runs missed while jean2 was down", f.catchUp),
      this.err, h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary", id: "sch-add" }, "Add")));
  }

  async add(f) {
    replace(this.err);
    try {
      await api("POST", "/api/schedules", {
        workspaceId: f.ws.value, name: f.name.value, prompt: f.prompt.value, cron: f.cron.value, timeZone: f.zone.value,
        catchUp: f.catchUp.value, policy: { allow: rules(f.allow.value), deny: rules(f.deny.value) },
      });
      f.prompt.value = f.name.value = f.cron.value = "";
      replace(this.live, "Schedule added.");
      await this.refresh();
    } catch (e) {
      replace(this.err, errorText(e));
    }
  }

  async refresh() {
    let out;
    try {
      out = await api("GET", "/api/schedules");
    } catch (e) {
      replace(this.list, h("p", { class: "error" }, errorText(e)));
      return;
    }
    if (!out.schedules.length) {
      replace(this.list, h("p", { class: "muted" }, "No schedules yet."));
      return;
    }
    replace(this.list, out.schedules.map((s) => this.card(s)));
  }

  card(s) {
    const ws = this.app.ws.find((w) => w.id === s.workspaceId);
    const act = async (method, path, what) => {
      try {
        await api(method, `/api/schedules/${enc(s.id)}${path}`);
        replace(this.live, what);
        await this.refresh();
      } catch (e) {
        replace(this.live, errorText(e));
      }
    };
    const title = s.name || s.prompt.split("\n")[0].slice(0, 60);
    return h("article", { class: "schedule-card", dataset: { id: s.id } },
      h("h3", null, title),
      h("p", { class: "muted small" }, `${s.cron} (${s.timeZone}) in ${ws ? ws.name || ws.path : s.workspaceId} · `,
        h("span", { class: "schedule-next" }, s.paused ? "paused" : `next run ${when(s.nextRunAt, s.timeZone)}`)),
      h("div", { class: "buttons" },
        s.paused ? h("button", { type: "button", class: "schedule-resume", onclick: () => act("POST", "/resume", "Resumed.") }, "Resume")
          : h("button", { type: "button", class: "schedule-pause", onclick: () => act("POST", "/pause", "Paused.") }, "Pause"),
        h("button", { type: "button", class: "danger schedule-delete", onclick: async () => {
          if (await confirmAction("Delete the schedule?", `"${title}" runs no more. The sessions of its runs stay.`, "Delete")) act("DELETE", "", "Deleted.");
        } }, "Delete")),
      this.runs(s));
  }

  runs(s) {
    if (!s.runs.length) return h("p", { class: "muted small" }, "No runs yet.");
    return h("table", { class: "schedule-runs" },
      h("thead", null, h("tr", null, h("th", null, "Occurrence"), h("th", null, "Outcome"), h("th", null, "Session"))),
      h("tbody", null, s.runs.map((r) => {
        const refused = (r.refusals || []).map((x) => `${x.tool}: ${x.reason}`);
        const outcome = [r.status, r.covers > 1 ? ` (${r.covers} occurrences)` : "", r.error ? ` — ${r.error}` : "",
          refused.length ? ` — refused ${refused.join("; ")}` : ""].join("");
        return h("tr", { class: `run-${r.status}` },
          h("td", null, when(r.occurrenceAt, s.timeZone)),
          h("td", { class: "run-outcome" }, outcome),
          h("td", null, r.sessionId ? h("a", { href: `#/s/${enc(r.sessionId)}` }, "open") : "—"));
      })));
  }
}
