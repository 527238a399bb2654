// The session's goal (docs/harness.md, "Goal mode"): a badge in the session's header says
// its condition, state and turns used, kept live by goal.changed; hidden without a goal.

import { h, replace } from "./dom.js";

export class GoalBadge {
  constructor(goal) {
    this.el = h("span", { class: "session-goal small", id: "goal", role: "status", hidden: true });
    this.show(goal);
  }

  /** show draws goal (null: the session has none). */
  show(goal) {
    this.el.hidden = !goal;
    if (!goal) return;
    const state = goal.state === "met" ? "✓ met" : goal.state;
    replace(this.el, "Goal: ", h("strong", null, state), ` (${goal.turnsUsed} of ${goal.maxTurns} turns)`);
    const why = goal.lastVerdict?.reason || goal.error || "";
    this.el.title = goal.condition + (why ? `\n${why}` : "");
    this.el.dataset.state = goal.state;
  }
}
