// The MCP servers jean2 connects to, in Settings: each one's state (connected, connecting,
// needs sign-in, error) and, for an HTTP server, a Connect button that starts its OAuth
// sign-in (the authorization page opens in a new tab; its answer comes back to jean2 serve's
// loopback, so this works from a browser on the machine jean2 serve runs on) and a Sign out.

import { api, enc } from "./api.js";
import { h, replace, safeURL } from "./dom.js";
import { errorText, notify } from "./ui.js";

const STATE_BADGE = { connected: "ok", "needs sign-in": "fail", error: "fail", connecting: "" };

/** mcpServersSection is the Settings section; it loads itself and follows sign-ins. */
export function mcpServersSection() {
  const box = h("div", { class: "mcp-servers" });
  const section = h("section", { "aria-labelledby": "mcp-servers-title" },
    h("h3", { id: "mcp-servers-title" }, "MCP servers"), box);
  const catalogBox = h("div", { class: "mcp-catalog" });
  let timer = 0;
  const path = (s) => `/api/mcp/servers/${enc(s.name)}/sign-in` + (s.workspaceId ? `?workspaceId=${enc(s.workspaceId)}` : "");

  async function load() {
    clearTimeout(timer);
    let res;
    try {
      res = await api("GET", "/api/mcp/servers");
    } catch (err) {
      replace(box, h("p", { class: "error" }, errorText(err)));
      return;
    }
    const servers = res.servers || [];
    if (!servers.length) {
      replace(box, h("p", { class: "muted" }, "No MCP server is configured ($JEAN2_HOME/mcp.json, or a workspace's .jean2/mcp.json)."));
      return;
    }
    replace(box, h("div", { class: "table-wrap" }, h("table", { class: "data mcp-servers" },
      h("thead", null, h("tr", null, ["Server", "Address", "State", ""].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", null, servers.map((s) => h("tr", { dataset: { server: s.name, state: s.state } },
        h("td", null, h("strong", null, s.name), s.workspaceId ? h("span", { class: "muted small" }, " (workspace)") : null),
        h("td", { class: "small" }, s.url || s.type),
        h("td", null, h("span", { class: "badge " + (STATE_BADGE[s.state] || "") }, s.signingIn ? "waiting for your sign-in" : s.state),
          s.error ? h("div", { class: "muted small mcp-error" }, s.error) : null),
        h("td", null,
          s.state === "connected" ? h("button", { type: "button", class: "mcp-browse", onclick: () => browse(s) }, "Browse", h("span", { class: "sr-only" }, " " + s.name)) : null,
          s.type === "stdio" ? null : [
            s.state !== "connected" || !s.signedIn ? h("button", { type: "button", class: "mcp-connect", onclick: () => connect(s) }, "Connect", h("span", { class: "sr-only" }, " " + s.name)) : null,
            s.signedIn ? h("button", { type: "button", class: "mcp-signout", onclick: () => signOut(s) }, "Sign out", h("span", { class: "sr-only" }, " " + s.name)) : null,
          ])))))),
      catalogBox);
    // A server that is not connected yet is looked at again, so a sign-in shows when it lands.
    if (servers.some((s) => s.state !== "connected" && s.state !== "error")) timer = setTimeout(() => { if (section.isConnected) load(); }, 2000);
  }

  async function connect(s) {
    // The tab is opened before the request, while the click still allows it, and without
    // an opener: the authorization page is the MCP server's to write, and with
    // window.opener it could send this tab to a look-alike page (reverse tabnabbing).
    const tab = window.open("", "_blank");
    if (tab) tab.opener = null;
    try {
      const res = await api("POST", path(s));
      if (res.authorizationUrl && safeURL(res.authorizationUrl)) {
        if (tab) tab.location.href = res.authorizationUrl;
        else notify(`Open ${res.authorizationUrl} to sign in to ${s.name}.`);
      } else if (tab) {
        tab.close();
      }
    } catch (err) {
      if (tab) tab.close();
      notify(errorText(err), "error");
    }
    load();
  }

  // browse lists what a connected server offers beside its tools: resources (each one can be
  // opened to read its text) and prompts.
  async function browse(s) {
    const q = s.workspaceId ? `?workspaceId=${enc(s.workspaceId)}` : "";
    const base = `/api/mcp/servers/${enc(s.name)}`;
    let cat;
    try {
      cat = await api("GET", `${base}/catalog${q}`);
    } catch (err) {
      replace(catalogBox, h("p", { class: "error" }, errorText(err)));
      return;
    }
    const shown = h("pre", { class: "mcp-resource-text" });
    const read = async (r) => {
      try {
        const res = await api("GET", `${base}/resource?uri=${enc(r.uri)}` + (s.workspaceId ? `&workspaceId=${enc(s.workspaceId)}` : ""));
        shown.textContent = (res.contents || []).map((c) => c.text ?? `[${c.mimeType || "binary"}, ${(c.blob || "").length} base64 characters]`).join("\n");
      } catch (err) {
        shown.textContent = errorText(err);
      }
    };
    replace(catalogBox, h("h4", null, `${s.name}: resources and prompts`),
      (cat.resources || []).length ? h("ul", { class: "mcp-resources" }, cat.resources.map((r) => h("li", { dataset: { uri: r.uri } },
        h("button", { type: "button", class: "link", onclick: () => read(r) }, r.title || r.name || r.uri), " ",
        h("span", { class: "muted small" }, r.uri, r.mimeType ? ` (${r.mimeType})` : ""),
        r.description ? h("div", { class: "small" }, r.description) : null))) : h("p", { class: "muted" }, "No resources."),
      (cat.templates || []).length ? h("ul", { class: "mcp-templates" }, cat.templates.map((t) => h("li", null, t.title || t.name, " ", h("span", { class: "muted small" }, t.uriTemplate)))) : null,
      (cat.prompts || []).length ? h("ul", { class: "mcp-prompts" }, cat.prompts.map((p) => h("li", { dataset: { prompt: p.name } },
        h("strong", null, p.title || p.name), p.description ? [" — ", p.description] : null))) : h("p", { class: "muted" }, "No prompts."),
      shown);
  }

  async function signOut(s) {
    try {
      await api("DELETE", path(s));
    } catch (err) {
      notify(errorText(err), "error");
    }
    load();
  }

  load();
  return section;
}
