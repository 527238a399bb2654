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
  // Said while it runs, and only while it runs.
  const busy = notify("Compacting the conversation…");
  try {
    const ci = await api("POST", `/api/sessions/${enc(sessionId)}/compact`);
    notify(`Context compacted: ${ci.messages} messages summarized.`);
  } catch (err) {
    notify(`Could not compact: ${errorText(err)}`, "error");
  } finally {
    busy.remove();
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
        loadPrices(true);
        notify("Prices saved.");
      } catch (er) {
        replace(err, errorText(er));
      }
    },
  },
  h("label", { for: "set-prices" }, "Model prices per million tokens (one model a line: name, input, output); sessions show their cost when every model they used has one"), text,
  err, h("div", { class: "buttons" }, h("button", { type: "submit", id: "save-prices" }, "Save prices"))));
}

/** fillModels fills a datalist with a provider's own models (GET /api/providers/{name}/models). */
async function fillModels(list, providerName, status) {
  replace(list);
  if (!providerName) return;
  try {
    const res = await api("GET", `/api/providers/${enc(providerName)}/models`);
    replace(list, (res.models || []).map((m) => h("option", { value: m.id }, m.contextWindow ? `${m.name || m.id} · ${m.contextWindow.toLocaleString()} tokens` : m.name || null)));
    if (status) replace(status, `${(res.models || []).length} models listed by ${providerName}.`);
  } catch (err) {
    if (status) replace(status, `The model list of ${providerName} could not be read: ${errorText(err)}`);
  }
}

/**
 * modelPicker offers the models of the provider providerOf() names as suggestions of the
 * model input (a datalist: any name can still be typed); watch is an element whose change
 * means another provider. It returns the nodes to add to the form.
 */
export function modelPicker(input, providerOf, watch) {
  const id = `${input.id}-list`;
  const list = h("datalist", { id });
  const status = h("p", { class: "muted small model-list-status", id: `${input.id}-status` });
  input.setAttribute("list", id);
  input.setAttribute("autocomplete", "off");
  const load = () => fillModels(list, providerOf(), status);
  watch?.addEventListener("change", load);
  load();
  return [list, status];
}

/**
 * testConnection is the provider dialog's "Test connection": the entry as typed is probed
 * (POST /api/providers/probe), the result said, and its models offered for the model box.
 */
export function testConnection(entryOf, modelInput) {
  const id = `${modelInput.id}-list`;
  const list = h("datalist", { id });
  modelInput.setAttribute("list", id);
  modelInput.setAttribute("autocomplete", "off");
  const status = h("p", { class: "small", id: "prov-test-status", role: "status" });
  const btn = h("button", {
    type: "button", id: "prov-test", onclick: async () => {
      btn.disabled = true;
      replace(status, "Testing…");
      try {
        const res = await api("POST", "/api/providers/probe", entryOf());
        replace(list, (res.models || []).map((m) => h("option", { value: m.id })));
        status.className = "small " + (res.test?.ok ? "ok" : "error");
        replace(status, res.test?.message || "");
      } catch (err) {
        status.className = "small error";
        replace(status, errorText(err));
      } finally {
        btn.disabled = false;
      }
    },
  }, "Test connection");
  return [btn, status, list];
}

/** noProviderHelp is what the page says when a turn is refused for want of a provider. */
export function noProviderHelp(err) {
  if (err?.code !== "no_provider") return null;
  return h("span", null, errorText(err), " ", h("a", { href: "#/settings", class: "settings-link" }, "Set up a provider in Settings"), ".");
}

/** providerNotice leads a new person from the welcome page to provider setup when no
 * provider (or no default model) is configured; empty otherwise. */
export function providerNotice() {
  const el = h("div", { class: "provider-notice" });
  api("GET", "/api/providers").then((res) => {
    const ps = res.providers || [];
    const def = ps.find((p) => p.name === res.default);
    if (ps.length && def?.model) return;
    replace(el, h("div", { class: "notice", role: "note" },
      h("h3", null, ps.length ? "Choose a default model" : "Connect a model first"),
      h("p", null, ps.length ? `The default provider ${res.default} has no default model: sessions cannot answer until it has one.`
        : "jean2 needs an LLM provider to answer: OpenAI, Anthropic, OpenRouter, or a local server such as Ollama, vLLM or llama.cpp."),
      h("p", null, h("a", { href: "#/settings", class: "button primary", id: "setup-provider" }, ps.length ? "Open Settings" : "Set up a provider")),
      h("p", { class: "muted small" }, "Or start jean2 serve with OPENAI_API_KEY and OPENAI_MODEL (or ANTHROPIC_API_KEY and ANTHROPIC_MODEL) set.")));
  }, () => {});
  return el;
}

/** titlesSection is the Settings form for naming sessions: on or off, and the model asked. */
export async function titlesSection(box) {
  let st;
  try {
    st = await api("GET", "/api/settings");
  } catch (err) {
    replace(box, h("p", { class: "error" }, errorText(err)));
    return;
  }
  const on = h("input", { type: "checkbox", id: "set-autotitle", checked: !!st.autoTitle });
  const model = h("input", { type: "text", id: "set-titlemodel", value: st.titleModel || "", placeholder: "the session's own model" });
  const err = h("p", { class: "error", role: "alert" });
  replace(box, h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      replace(err);
      try {
        await api("PATCH", "/api/settings", { autoTitle: on.checked, titleModel: model.value.trim() });
        notify("Saved.");
      } catch (er) {
        replace(err, errorText(er));
      }
    },
  },
  h("div", { class: "option" }, on, h("label", { for: "set-autotitle" }, "Name new sessions after their first turn, by asking the model")),
  h("label", { for: "set-titlemodel" }, "Model asked for names (a cheaper one of the session's provider)"), model,
  err, h("div", { class: "buttons" }, h("button", { type: "submit", id: "save-titles" }, "Save"))));
}

// Prices by model, read once per page from the settings (Settings saving them reloads the page's view).
let pricesPromise = null;

/** pricesNow returns the models' prices ({} until read, or when unreadable). */
export function loadPrices(refresh = false) {
  if (!pricesPromise || refresh) pricesPromise = api("GET", "/api/settings").then((s) => s.prices || {}, () => ({}));
  return pricesPromise;
}

/** turnUsage draws a turn's tokens (turn.finished's usage), and its cost when the model's price is known. */
export function turnUsage(usage, model) {
  const el = h("p", { class: "turn-usage muted small" });
  if (!usage || (!usage.inputTokens && !usage.outputTokens)) return el;
  replace(el, `This turn: ${usage.inputTokens.toLocaleString()} in / ${usage.outputTokens.toLocaleString()} out tokens`);
  loadPrices().then((prices) => {
    const p = prices[model];
    if (!p) return;
    const cost = (usage.inputTokens * p.input + usage.outputTokens * p.output) / 1e6;
    el.append(` · $${cost.toFixed(cost < 1 ? 4 : 2)}`);
  });
  return el;
}
