// The session's goal (docs/harness.md, "Goal mode"), in the session's header: a badge says
// its condition, state and turns used, kept live by goal.changed (hidden without a goal);
// "Set goal" opens a form that sets (or replaces) it — PUT …/goal, starting a turn towards it
// at once when asked — and "Clear goal" removes it (DELETE …/goal).

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { errorText, notify, openDialog } from "./ui.js";

// The server's bounds of maxTurns (harness.DefaultGoalTurns, harness.MaxGoalTurns).
const defaultTurns = 10;
const maxTurns = 100;

export class GoalBadge {
  /** view is the SessionView (its id); goal the session's, null for none. */
  constructor(view, goal) {
    this.view = view;
    this.goal = goal || null;
    this.events = 0; // goal.changed events drawn (changed)
    this.badge = h("span", { class: "session-goal small", id: "goal", role: "status", hidden: true });
    this.setBtn = h("button", { type: "button", class: "link", id: "goal-set", onclick: () => this.edit() }, "Set goal");
    this.clearBtn = h("button", { type: "button", class: "link", id: "goal-clear", hidden: true, onclick: () => this.clear() }, "Clear goal");
    this.el = h("span", { class: "session-goal-ctl" }, this.badge, this.setBtn, this.clearBtn);
    this.show(goal);
  }

  /** changed draws the goal a goal.changed event carried: the newest there is. */
  changed(goal) {
    this.events++;
    this.show(goal);
  }

  /** show draws goal (null: the session has none). */
  show(goal) {
    this.goal = goal || null;
    this.badge.hidden = this.clearBtn.hidden = !goal;
    replace(this.setBtn, goal ? "Change goal" : "Set goal");
    this.setBtn.title = goal ? "Replace the goal: its turns start again from none" : "Give the session a completion condition: jean2 goes on until it is met";
    if (!goal) return;
    const state = goal.state === "met" ? "✓ met" : goal.state;
    replace(this.badge, "Goal: ", h("strong", null, state), ` (${goal.turnsUsed} of ${goal.maxTurns} turns)`);
    const why = goal.lastVerdict?.reason || goal.error || "";
    this.badge.title = goal.condition + (why ? `\n${why}` : "");
    this.badge.dataset.state = goal.state;
  }

  /** edit opens the form that sets the goal: its condition, its budget of turns, and whether to start now. */
  edit() {
    const cond = h("textarea", { id: "goal-condition", rows: 3, required: true, autofocus: true,
      placeholder: "e.g. the tests in ./store pass" }, this.goal?.condition || "");
    const turns = h("input", { type: "number", id: "goal-turns", min: 1, max: maxTurns, value: this.goal?.maxTurns || defaultTurns });
    const start = h("input", { type: "checkbox", id: "goal-start", checked: true });
    const err = h("p", { class: "error", role: "alert" });
    const form = h("form", {
      onsubmit: async (e) => {
        e.preventDefault();
        const condition = cond.value.trim();
        if (!condition) {
          replace(err, "The condition cannot be empty.");
          return;
        }
        try {
          const seen = this.events;
          const res = await api("PUT", `/api/sessions/${enc(this.view.id)}/goal`,
            { condition, maxTurns: Number(turns.value) || 0, start: start.checked });
          // The goal as set, unless goal.changed came meanwhile: the turn the PUT started
          // may have been judged before its answer arrived, and the events (the setting's
          // own among them) are newer than the answer.
          if (this.events === seen) this.show(res.goal);
          d.close();
        } catch (er) {
          replace(err, errorText(er));
        }
      },
    }, h("label", { for: "goal-condition" }, "Done when"), cond,
      h("label", { for: "goal-turns" }, "At most this many turns"), turns,
      h("label", null, start, " Start working on it now (when the session is idle)"),
      h("p", { class: "help" }, "After each turn a check asks the model whether the condition is met; jean2 goes on until it is, or the turns run out."),
      err, h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary", id: "goal-save" }, "Set goal"),
        h("button", { type: "button", onclick: () => d.close() }, "Cancel")));
    const d = openDialog("Goal for this session", form);
  }

  /** clear removes the goal: the session's turns are not judged any more. */
  async clear() {
    try {
      await api("DELETE", `/api/sessions/${enc(this.view.id)}/goal`);
      this.show(null);
      notify("Goal cleared");
    } catch (err) {
      notify(`Could not clear the goal: ${errorText(err)}`, "error");
    }
  }
}
