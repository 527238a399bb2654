// Settings: the LLM providers (default, models, keys — write-only), how the server decides
// with nobody attached, and the permission grants remembered so far (each revocable).

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { confirmAction, errorText, notify, openDialog } from "./ui.js";
import { SHORTCUTS } from "./shortcuts.js";
import { mcpServersSection } from "./mcpservers.js";
import { notificationsSection } from "./notifications.js";
import { pricesSection, systemPromptSection, testConnection, titlesSection } from "./agent.js";

export class SettingsView {
  constructor(app) {
    this.app = app;
    this.el = h("section", { class: "settings-view", "aria-labelledby": "settings-title" });
  }

  async mount(container) {
    this.providersBox = h("div");
    this.settingsBox = h("div");
    this.grantsBox = h("div");
    this.promptBox = h("div");
    this.pricesBox = h("div");
    this.titlesBox = h("div");
    replace(this.el, h("h2", { id: "settings-title" }, "Settings"),
      h("section", { "aria-labelledby": "providers-title" }, h("h3", { id: "providers-title" }, "Provider and model"), this.providersBox),
      h("section", { "aria-labelledby": "prompt-title" }, h("h3", { id: "prompt-title" }, "System prompt"), this.promptBox),
      h("section", { "aria-labelledby": "prices-title" }, h("h3", { id: "prices-title" }, "Prices"), this.pricesBox),
      h("section", { "aria-labelledby": "titles-title" }, h("h3", { id: "titles-title" }, "Session names"), this.titlesBox),
      h("section", { "aria-labelledby": "grants-title" }, h("h3", { id: "grants-title" }, "Permission grants"), this.grantsBox),
      h("section", { "aria-labelledby": "server-settings-title" }, h("h3", { id: "server-settings-title" }, "When no one is watching"), this.settingsBox),
      mcpServersSection(),
      notificationsSection(),
      h("section", { "aria-labelledby": "keys-title" }, h("h3", { id: "keys-title" }, "Keyboard shortcuts"), shortcutTable()));
    replace(container, this.el);
    await Promise.all([this.loadProviders(), this.loadSettings(), this.loadGrants(), systemPromptSection(this.promptBox), pricesSection(this.pricesBox), titlesSection(this.titlesBox)]);
  }

  unmount() {}

  onServerEvent(ev) {
    if (ev.type === "providers.changed") this.loadProviders();
    if (ev.type === "settings.changed") this.loadSettings();
  }

  async loadProviders() {
    let res;
    try {
      res = await api("GET", "/api/providers");
    } catch (err) {
      replace(this.providersBox, h("p", { class: "error" }, errorText(err)));
      return;
    }
    const providers = res.providers || [];
    const defSel = h("select", { id: "default-provider" },
      providers.length ? null : h("option", { value: "" }, "(none configured)"),
      providers.map((p) => h("option", { value: p.name, selected: p.name === res.default }, p.name)));
    const rows = providers.map((p) => h("tr", { dataset: { provider: p.name } },
      h("td", null, h("strong", null, p.name), p.name === res.default ? [" ", h("span", { class: "badge ok" }, "default")] : null),
      h("td", null, p.kind),
      h("td", null, p.model || h("span", { class: "muted" }, "—")),
      h("td", null, h("span", { class: "badge " + (p.hasKey ? "ok" : "fail") }, p.hasKey ? "key set" : "no key"), p.keyEnv ? h("span", { class: "muted small" }, ` from ${p.keyEnv}`) : null),
      h("td", { class: "small" }, p.baseUrl || "", h("br"), h("span", { class: "muted" }, p.source === "environment" ? "from the environment" : "saved")),
      h("td", null, h("button", { type: "button", onclick: () => this.editProvider(res, p) }, "Edit", h("span", { class: "sr-only" }, " " + p.name)))));
    replace(this.providersBox,
      providers.length ? h("div", { class: "table-wrap" }, h("table", { class: "data providers" },
        h("thead", null, h("tr", null, ["Name", "Kind", "Default model", "Key", "Address", ""].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", null, rows))) : h("p", { class: "muted" }, "No LLM provider is configured: add one to start chatting."),
      h("form", { class: "inline-form", onsubmit: async (e) => {
        e.preventDefault();
        await this.saveProviders(res, null, defSel.value);
      } }, h("label", { for: "default-provider" }, "Default provider "), defSel, h("button", { type: "submit" }, "Save default")),
      h("p", null, h("button", { type: "button", onclick: () => this.editProvider(res, null) }, "Add a provider")),
      h("p", { class: "muted small" }, "A session can use another provider or model: use “Model” at the top of the conversation."));
  }

  /** saveProviders PUTs the saved providers with one entry replaced or added. */
  async saveProviders(res, entry, def) {
    const saved = (res.providers || []).filter((p) => p.editable).map((p) => {
      const e = { name: p.name, kind: p.kind };
      if (p.baseUrl) e.baseUrl = p.baseUrl;
      if (p.model) e.model = p.model;
      if (p.maxTokens) e.maxTokens = p.maxTokens;
      if (p.contextWindow) e.contextWindow = p.contextWindow;
      if (p.idleTimeoutSeconds) e.idleTimeoutSeconds = p.idleTimeoutSeconds;
      if (p.keyEnv) e.apiKeyEnv = p.keyEnv;
      return e;
    });
    if (entry) {
      const i = saved.findIndex((p) => p.name === entry.name);
      if (i >= 0) saved[i] = entry;
      else saved.push(entry);
    }
    const body = { providers: saved };
    // The file's default must be one of the file's providers: keep the current default only
    // when it is; a default chosen explicitly is sent as chosen (the server says if it cannot be).
    if (def !== undefined && def !== "") body.default = def;
    else if (res.default && saved.some((p) => p.name === res.default)) body.default = res.default;
    try {
      try {
        await api("PUT", "/api/providers", body);
      } catch (err) {
        // A key the entry does not give itself would go to a new address: only a person
        // may allow that, so the server asks, and this dialog is where the person answers.
        const ask = err.code === "confirm_key" ? err.details?.confirm || [] : [];
        if (!ask.length) throw err;
        const ok = await confirmAction("Send an API key to a new address?", h("div", null,
          ask.map((c) => h("p", null, `Provider ${c.provider} would send `,
            c.keyFrom === "stored" ? "its stored API key" : h("span", null, "the API key in ", h("code", null, c.keyFrom)),
            " to ", h("code", null, c.baseUrl), ", where that key was not sent before.")),
          h("p", null, "Whoever runs that address receives the key. Allow it only if you set that address yourself.")),
        "Send the key there", { danger: true, focusCancel: true });
        if (!ok) return "Not saved: the key was not allowed to go to the new address. Give the key for it, or keep the old address.";
        for (const c of ask) {
          const e = body.providers.find((p) => p.name === c.provider);
          if (e) e.confirmKeyTo = c.baseUrl;
        }
        await api("PUT", "/api/providers", body);
      }
      notify("Providers saved.");
      await this.loadProviders();
      return null;
    } catch (err) {
      return errorText(err);
    }
  }

  editProvider(res, p) {
    const v = p || { name: "", kind: "openai", baseUrl: "", model: "" };
    const name = h("input", { type: "text", id: "prov-name", value: v.name, required: true, readonly: p ? true : null });
    const kind = h("select", { id: "prov-kind" }, ["openai", "anthropic"].map((k) => h("option", { value: k, selected: k === v.kind }, k)));
    const base = h("input", { type: "url", id: "prov-base", value: v.baseUrl || "", placeholder: "the kind's usual address" });
    const model = h("input", { type: "text", id: "prov-model", value: v.model || "" });
    const windowIn = h("input", { type: "number", id: "prov-window", min: 1024, step: 1, value: v.contextWindow || "", placeholder: "the model's known window" });
    const idleIn = h("input", { type: "number", id: "prov-idle", min: 1, step: 1, value: v.idleTimeoutSeconds || "", placeholder: "120" });
    const key = h("input", { type: "password", id: "prov-key", autocomplete: "off", placeholder: p?.hasKey ? "(kept — type to replace)" : "" });
    const clearKey = h("input", { type: "checkbox", id: "prov-clear" });
    const err = h("p", { class: "error", role: "alert" });
    const form = h("form", {
      onsubmit: async (e) => {
        e.preventDefault();
        const entry = { name: name.value.trim(), kind: kind.value };
        if (!entry.name) {
          replace(err, "Give the provider a name.");
          return;
        }
        if (base.value.trim()) entry.baseUrl = base.value.trim();
        if (model.value.trim()) entry.model = model.value.trim();
        else {
          replace(err, "Give the provider a default model: type its name, or use Test connection to list the provider's models.");
          return;
        }
        if (key.value) entry.apiKey = key.value;
        if (clearKey.checked) entry.clearKey = true;
        if (p?.maxTokens) entry.maxTokens = p.maxTokens;
        if (windowIn.value) entry.contextWindow = Number(windowIn.value);
        if (idleIn.value) entry.idleTimeoutSeconds = Number(idleIn.value);
        if (p?.keyEnv && !key.value) entry.apiKeyEnv = p.keyEnv;
        const problem = await this.saveProviders(res, entry);
        if (problem) replace(err, problem);
        else d.close();
      },
    },
    h("label", { for: "prov-name" }, "Name"), name,
    h("label", { for: "prov-kind" }, "Kind"), kind,
    h("label", { for: "prov-base" }, "Base URL"), base,
    h("label", { for: "prov-model" }, "Default model (required)"), model,
    h("label", { for: "prov-key" }, "API key"), key,
    testConnection(() => {
      const e = { name: name.value.trim(), kind: kind.value, model: model.value.trim() };
      if (base.value.trim()) e.baseUrl = base.value.trim();
      if (key.value) e.apiKey = key.value;
      return e;
    }, model),
    h("label", { for: "prov-window" }, "Context window in tokens (empty: the model's known window; long sessions are compacted to fit it)"), windowIn,
    h("label", { for: "prov-idle" }, "Seconds the model may send nothing before a request is given up (empty: 120)"), idleIn,
    p?.hasKey ? h("div", { class: "option" }, clearKey, h("label", { for: "prov-clear" }, "Remove the stored key")) : null,
    p?.source === "environment" ? h("p", { class: "muted small" }, "This provider comes from the environment; saving keeps an override of the same name.") : null,
    h("p", { class: "muted small" }, "Keys are stored in $JEAN2_HOME/providers.json (mode 0600) and never shown again."),
    err,
    h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Save"), h("button", { type: "button", onclick: () => d.close() }, "Cancel")));
    const d = openDialog(p ? `Edit provider ${p.name}` : "Add a provider", form);
  }

  async loadSettings() {
    let s;
    try {
      s = await api("GET", "/api/settings");
    } catch (err) {
      replace(this.settingsBox, h("p", { class: "error" }, errorText(err)));
      return;
    }
    const auto = h("select", { id: "set-auto" }, ["none", "low", "medium", "high", "critical"].map((r) =>
      h("option", { value: r, selected: r === s.autoApprove }, r === "none" ? "refuse every permission" : `grant up to ${r} risk (once)`)));
    const num = (id, v, min, max) => h("input", { type: "number", id, min, max, step: 1, value: v ?? "" });
    const timeout = num("set-timeout", s.askTimeoutSeconds, 5, 604800);
    const work = num("set-work", s.workRounds, 1, 1000);
    const max = num("set-max", s.maxRounds, 1, 1000);
    const restart = (names) => names?.length ? h("p", { class: "muted small restart-note" }, `Applies from the next start of jean2 serve: ${names.join(", ")}.`) : null;
    const note = h("div", null, restart(s.restartRequired));
    const err = h("p", { class: "error", role: "alert" });
    replace(this.settingsBox, h("form", {
      onsubmit: async (e) => {
        e.preventDefault();
        replace(err);
        try {
          const saved = await api("PATCH", "/api/settings", { autoApprove: auto.value, askTimeoutSeconds: Number(timeout.value), workRounds: Number(work.value), maxRounds: Number(max.value) });
          replace(note, restart(saved?.restartRequired));
          notify("Settings saved.");
        } catch (er) {
          replace(err, errorText(er));
        }
      },
    },
    h("label", { for: "set-auto" }, "Permissions asked while no client is attached"), auto,
    h("label", { for: "set-timeout" }, "Seconds an ask waits for an answer"), timeout,
    h("label", { for: "set-work" }, "Work budget (rounds per turn)"), work,
    h("label", { for: "set-max" }, "Round ceiling per turn"), max,
    note, err, h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Save settings"))));
  }

  async loadGrants() {
    let grants;
    try {
      grants = (await api("GET", "/api/grants")).grants || [];
    } catch (err) {
      replace(this.grantsBox, h("p", { class: "error" }, errorText(err)));
      return;
    }
    if (!grants.length) {
      replace(this.grantsBox, h("p", { class: "muted" }, "No permission is remembered. Permissions granted for a session or a workspace appear here."));
      return;
    }
    const names = this.app.names();
    replace(this.grantsBox, h("div", { class: "table-wrap" }, h("table", { class: "data grants" },
      h("thead", null, h("tr", null, ["Tool", "Permission", "Scope", "Granted", ""].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", null, grants.map((g) => h("tr", { dataset: { grantId: g.id } },
        h("td", null, h("code", null, g.tool || "?")),
        h("td", null, g.question || g.resource || "",
          g.risk ? h("span", { class: "badge risk-" + g.risk }, " " + g.risk) : null,
          g.paths?.length ? h("div", { class: "small" }, g.paths.map((p, i) => [i ? ", " : "", h("code", null, p)])) : null,
          g.patterns?.length ? h("div", { class: "small muted" }, g.patterns.join(", ")) : null),
        h("td", null, g.duration === "workspace" ? `workspace ${names.workspace(g.workspaceId)}` : g.duration === "session" ? `session ${names.session(g.sessionId)}` : g.duration || ""),
        h("td", { class: "small" }, g.grantedAt ? new Date(g.grantedAt).toLocaleString() : ""),
        h("td", null, h("button", { type: "button", class: "danger", onclick: () => this.revoke(g) }, "Revoke", h("span", { class: "sr-only" }, ` ${g.tool}: ${g.question || g.resource || ""}`)))))))));
  }

  async revoke(g) {
    const ok = await confirmAction("Revoke permission?", h("p", null, `${g.tool} will ask again before: ${g.question || g.resource || "this access"}.`), "Revoke", { danger: true });
    if (!ok) return;
    try {
      await api("DELETE", `/api/grants/${enc(g.id)}`);
      notify("Permission revoked.");
    } catch (err) {
      notify(`Could not revoke: ${errorText(err)}`, "error");
    }
    this.loadGrants();
  }
}

export function shortcutTable() {
  return h("table", { class: "data shortcuts" }, h("tbody", null, SHORTCUTS.map(([keys, what]) =>
    h("tr", null, h("td", null, keys.map((k, i) => [i ? " " : "", h("kbd", null, k)])), h("td", null, what)))));
}

export function showShortcuts() {
  openDialog("Keyboard shortcuts", shortcutTable());
}
