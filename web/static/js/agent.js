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

/** when formats a time for lists: today's as the time, else the date. */
export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  const now = new Date();
  return d.toDateString() === now.toDateString() ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : d.toLocaleDateString();
}

/** sessionMeta is the date and preview shown under a session's title in lists. */
export function sessionMeta(s) {
  const preview = (s.preview || "").split("\n")[0];
  return h("div", { class: "session-meta muted small" },
    h("time", { datetime: s.updatedAt || "" }, when(s.updatedAt)),
    preview ? h("span", { class: "session-preview" }, " · " + preview) : null);
}

/** usageText says a session's tokens and, when known, its cost. */
export function usageText(s) {
  if (!s || (!s.tokensIn && !s.tokensOut)) return "";
  let t = `${s.tokensIn.toLocaleString()} in / ${s.tokensOut.toLocaleString()} out tokens`;
  if (typeof s.cost === "number") t += ` · $${s.cost.toFixed(s.cost < 1 ? 4 : 2)}`;
  return t;
}

/** marked draws a search snippet: the matched words (between \u0002 and \u0003) in <mark>. */
function marked(snippet) {
  const out = [];
  for (const piece of snippet.split("\u0002")) {
    const i = piece.indexOf("\u0003");
    if (i < 0) out.push(piece);
    else out.push(h("mark", null, piece.slice(0, i)), piece.slice(i + 1));
  }
  return out;
}

/** searchBox is the sidebar's search across sessions (GET /api/search), results below it. */
export function searchBox() {
  const input = h("input", { type: "search", id: "session-search", placeholder: "Search sessions", "aria-label": "Search sessions", autocomplete: "off" });
  const results = h("div", { class: "search-results", id: "search-results", role: "region", "aria-live": "polite", "aria-label": "Search results" });
  let timer = 0;
  let seq = 0;
  const run = async () => {
    const q = input.value.trim();
    const mine = ++seq;
    if (!q) {
      replace(results);
      return;
    }
    let res;
    try {
      res = await api("GET", `/api/search?q=${enc(q)}`);
    } catch (err) {
      if (mine === seq) replace(results, h("p", { class: "error small" }, errorText(err)));
      return;
    }
    if (mine !== seq) return;
    const hits = res.sessions || [];
    replace(results, hits.length ? h("ul", { class: "search-hits" }, hits.map((hit) => h("li", { class: "search-hit" },
      h("a", { href: `#/s/${enc(hit.session.id)}` }, hit.session.title || "Untitled session"),
      h("span", { class: "muted small" }, " " + when(hit.session.updatedAt)),
      (hit.matches || []).map((m) => h("div", { class: "small search-snippet" }, m.role === "user" ? "you: " : "", marked(m.snippet)))))) :
      h("p", { class: "muted small" }, `No session holds “${q}”.`));
  };
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(run, 200);
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      input.value = "";
      run();
    }
  });
  return h("div", { class: "session-search" }, input, results);
}

/** pricesSection is the Settings form for the models' prices (per million tokens). */
export async function pricesSection(box) {
  let st;
  try {
    st = await api("GET", "/api/settings");
  } catch (err) {
    replace(box, h("p", { class: "error" }, errorText(err)));
    return;
  }
  const lines = Object.entries(st.prices || {}).map(([m, p]) => `${m} ${p.input} ${p.output}`).join("\n");
  const text = h("textarea", { id: "set-prices", rows: 4, spellcheck: "false", value: lines, placeholder: "gpt-4o 2.5 10\nclaude-sonnet-4-5 3 15" });
  const err = h("p", { class: "error", role: "alert" });
  replace(box, h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      replace(err);
      const prices = {};
      for (const [i, raw] of text.value.split("\n").entries()) {
        const line = raw.trim();
        if (!line) continue;
        const [model, input, output] = line.split(/\s+/);
        if (!model || !isFinite(Number(input)) || !isFinite(Number(output)) || output === undefined) {
          replace(err, `Line ${i + 1}: write the model, its input price and its output price per million tokens, e.g. “gpt-4o 2.5 10”.`);
          return;
        }
        prices[model] = { input: Number(input), output: Number(output) };
      }
      try {
        await api("PATCH", "/api/settings", { prices });
        notify("Prices saved.");
      } catch (er) {
        replace(err, errorText(er));
      }
    },
  },
  h("label", { for: "set-prices" }, "Model prices per million tokens (one model a line: name, input, output); sessions show their cost when every model they used has one"), text,
  err, h("div", { class: "buttons" }, h("button", { type: "submit", id: "save-prices" }, "Save prices"))));
}
