// The MCP servers jean2 connects to, in Settings: each one's state (connected, connecting,
// needs sign-in, error) and, for an HTTP server, a Connect button that starts its OAuth
// sign-in (the authorization page opens in a new tab; its answer comes back to jean2 serve's
// loopback, so this works from a browser on the machine jean2 serve runs on) and a Sign out.

import { api, enc } from "./api.js";
import { h, replace, safeURL } from "./dom.js";
import { errorText, notify, openDialog } from "./ui.js";

const STATE_BADGE = { connected: "ok", "needs sign-in": "fail", error: "fail", connecting: "" };

/** mcpServersSection is the Settings section; it loads itself and follows sign-ins. */
export function mcpServersSection() {
  const box = h("div", { class: "mcp-servers" });
  const section = h("section", { "aria-labelledby": "mcp-servers-title" },
    h("h3", { id: "mcp-servers-title" }, "MCP servers"), box,
    h("div", { class: "buttons" }, h("button", { type: "button", class: "mcp-add", onclick: () => addServerDialog(load) }, "Add MCP server")));
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
          s.type === "stdio" || s.state === "not started" ? null : [
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

/** lines splits a textarea's value into its non-empty lines, trimmed. */
const lines = (text) => text.split("\n").map((l) => l.trim()).filter(Boolean);

/**
 * addServerDialog is the "Add MCP server" form: a server that runs on this machine (a
 * command, its arguments one per line, its environment as NAME=value lines, the hosts it may
 * reach) or one on the web (its URL). The server checks it and writes $JEAN2_HOME/mcp.json
 * (POST /api/mcp/servers); its words are shown when it refuses. reload refreshes the list.
 */
function addServerDialog(reload) {
  const name = h("input", { type: "text", id: "mcp-add-name", required: true, autocomplete: "off", spellcheck: "false", placeholder: "files" });
  const kind = h("select", { id: "mcp-add-kind" },
    h("option", { value: "stdio" }, "a command on this machine (stdio)"), h("option", { value: "http" }, "a server on the web (HTTP)"));
  const command = h("input", { type: "text", id: "mcp-add-command", spellcheck: "false", placeholder: "npx" });
  const args = h("textarea", { id: "mcp-add-args", rows: 3, spellcheck: "false", placeholder: "-y\n@modelcontextprotocol/server-filesystem\n/tmp" });
  const env = h("textarea", { id: "mcp-add-env", rows: 2, spellcheck: "false", placeholder: "DEBUG=1" });
  const network = h("textarea", { id: "mcp-add-network", rows: 2, spellcheck: "false", placeholder: "api.github.com" });
  const url = h("input", { type: "url", id: "mcp-add-url", spellcheck: "false", placeholder: "https://example.com/mcp" });
  const err = h("p", { class: "error", role: "alert" });
  const stdioPart = h("div", { class: "mcp-add-stdio" },
    h("label", { for: "mcp-add-command" }, "Command"), command,
    h("label", { for: "mcp-add-args" }, "Arguments, one per line"), args,
    h("label", { for: "mcp-add-env" }, "Environment, one NAME=value per line"), env,
    h("label", { for: "mcp-add-network" }, "Hosts it may reach, one per line (npx and uvx also reach their package registry)"), network,
    h("p", { class: "muted small" }, "It runs confined: its own folders writable, the network only to these hosts."));
  const httpPart = h("div", { class: "mcp-add-http", hidden: true }, h("label", { for: "mcp-add-url" }, "URL"), url);
  kind.addEventListener("change", () => {
    stdioPart.hidden = kind.value !== "stdio";
    httpPart.hidden = kind.value === "stdio";
  });
  const form = h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      const body = bodyOf();
      if (typeof body === "string") {
        replace(err, body);
        return;
      }
      try {
        const row = await api("POST", "/api/mcp/servers", body);
        d.close();
        notify(row.state === "not started" ? `Added ${row.name}. jean2 connects to it in a few seconds.` : `Added ${row.name}.`);
        reload();
      } catch (er) {
        replace(err, errorText(er));
      }
    },
  },
  h("label", { for: "mcp-add-name" }, "Name"), name,
  h("label", { for: "mcp-add-kind" }, "Where it runs"), kind,
  stdioPart, httpPart, err,
  h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Add"), h("button", { type: "button", onclick: () => d.close() }, "Cancel")));
  const d = openDialog("Add an MCP server", form);

  // bodyOf is the request, or what to fix before sending it.
  function bodyOf() {
    const body = { name: name.value.trim() };
    if (!body.name) return "Give the server a name.";
    if (kind.value !== "stdio") {
      if (!url.value.trim()) return "Give the server's URL.";
      body.url = url.value.trim();
      return body;
    }
    if (!command.value.trim()) return "Give the command that starts the server.";
    body.command = command.value.trim();
    const a = lines(args.value);
    if (a.length) body.args = a;
    const vars = {};
    for (const [i, line] of lines(env.value).entries()) {
      const eq = line.indexOf("=");
      if (eq <= 0) return `Environment line ${i + 1}: write NAME=value.`;
      vars[line.slice(0, eq).trim()] = line.slice(eq + 1);
    }
    if (Object.keys(vars).length) body.env = vars;
    const hosts = lines(network.value);
    if (hosts.length) body.network = hosts;
    return body;
  }
}
