// The agent's own pieces of the client (issue 14): compactions in the conversation and the
// Compact button, the AGENTS.md files in effect for a workspace, and the system prompt in
// Settings. Kept apart from chat.js and settings.js, which call these.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { errorText, notify } from "./ui.js";

/** compactionInfo parses a compaction part's args ({upToSeq, messages, tokensBefore, tokensAfter, manual}). */
export function compactionInfo(part) {
  try {
    return JSON.parse(part.args || "{}") || {};
  } catch {
    return {};
  }
}

/** compactionView draws a compaction part: the line, and the summary behind a disclosure. */
export function compactionView(part) {
  const ci = compactionInfo(part);
  const n = ci.messages || 0;
  let line = `Context compacted: ${n} ${n === 1 ? "message" : "messages"} summarized`;
  if (ci.manual) line += " (asked for)";
  const tokens = ci.tokensBefore ? h("span", { class: "muted small" }, ` · about ${ci.tokensBefore} → ${ci.tokensAfter} tokens`) : null;
  return h("div", { class: "compaction", role: "note" },
    h("p", { class: "compaction-line" }, h("strong", null, line), tokens),
    h("details", null, h("summary", null, "Summary the model is sent in their place"),
      h("div", { class: "compaction-summary" }, part.text || "")));
}

/** compactSession asks the server to summarize the session's older messages now. */
export async function compactSession(sessionId, button) {
  if (button) button.disabled = true;
  notify("Compacting the conversation…");
  try {
    const ci = await api("POST", `/api/sessions/${enc(sessionId)}/compact`);
    notify(`Context compacted: ${ci.messages} messages summarized.`);
  } catch (err) {
    notify(`Could not compact: ${errorText(err)}`, "error");
  } finally {
    if (button) button.disabled = false;
  }
}

/** instructionsBar shows which AGENTS.md files join the system prompt of a workspace's sessions. */
export function instructionsBar(workspaceId) {
  const el = h("div", { class: "instructions-bar muted small", "aria-label": "Instruction files in effect" });
  if (!workspaceId) return el;
  api("GET", `/api/workspaces/${enc(workspaceId)}/instructions`).then((res) => {
    const files = res.files || [];
    if (!files.length) return;
    replace(el, "Instructions: ", files.map((f, i) => [i ? ", " : "",
      h("code", { title: f.path + (f.truncated ? " (cut: too long)" : "") + (f.error ? " — " + f.error : ""), class: f.error ? "error" : null },
        shortPath(f)), f.error ? " (not read)" : f.truncated ? " (cut)" : ""]));
  }, () => {});
  return el;
}

function shortPath(f) {
  const parts = f.path.split("/");
  const name = parts.slice(-2).join("/");
  return f.scope === "home" ? "~jean2/AGENTS.md" : name;
}

/** systemPromptSection is the Settings form for the system prompt: the default shown, an override saved. */
export async function systemPromptSection(box) {
  let sp;
  try {
    sp = await api("GET", "/api/settings/system-prompt");
  } catch (err) {
    replace(box, h("p", { class: "error" }, errorText(err)));
    return;
  }
  const text = h("textarea", { id: "set-system-prompt", rows: 12, spellcheck: "false", value: sp.overridden ? sp.current : "", placeholder: sp.default });
  const err = h("p", { class: "error", role: "alert" });
  const status = h("p", { class: "muted small", id: "system-prompt-status" }, sp.overridden ? "Your own prompt is in effect." : "The default prompt is in effect (shown greyed in the box).");
  const save = async (value) => {
    replace(err);
    try {
      await api("PATCH", "/api/settings", { systemPrompt: value });
      notify(value ? "System prompt saved." : "Default system prompt restored.");
      await systemPromptSection(box);
    } catch (e) {
      replace(err, errorText(e));
    }
  };
  replace(box, h("form", { onsubmit: (e) => { e.preventDefault(); save(text.value.trim() ? text.value : ""); } },
    h("label", { for: "set-system-prompt" }, "System prompt for new turns (empty: the default, which says what the built-in tools are for)"), text,
    h("p", { class: "muted small" }, "The workspace folder and the AGENTS.md files are added to it."),
    status, err,
    h("div", { class: "buttons" },
      h("button", { type: "submit", class: "primary", id: "save-system-prompt" }, "Save prompt"),
      h("button", { type: "button", id: "reset-system-prompt", onclick: () => save("") }, "Use the default"))));
}
