// Resources of imported MCP servers attached to a message: the composer's picker (the
// resources the connected servers list) and how a resource part is drawn in the transcript.
// The server reads a picked resource when the message is sent (POST …/turns "resources").

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { openDialog, errorText } from "./ui.js";

/**
 * pickResource lists the resources of the MCP servers this session can read (connected,
 * from $JEAN2_HOME/mcp.json or its own workspace's) and resolves to the one picked
 * ({server, workspaceId, uri, label}) or null when the dialog closes without one.
 */
export function pickResource(workspaceId) {
  return new Promise((resolve) => {
    let picked = null;
    const list = h("div", { class: "resource-picker", "aria-live": "polite" }, h("p", { class: "muted" }, "Loading the servers' resources…"));
    const d = openDialog("Attach a resource", [list], { class: "resource-dialog", onClose: () => resolve(picked) });
    (async () => {
      let servers;
      try {
        servers = (await api("GET", "/api/mcp/servers")).servers || [];
      } catch (err) {
        replace(list, h("p", { class: "error", role: "alert" }, `Could not list the MCP servers: ${errorText(err)}`));
        return;
      }
      servers = servers.filter((s) => !s.workspaceId || s.workspaceId === workspaceId);
      const connected = servers.filter((s) => s.state === "connected");
      if (!connected.length) {
        replace(list, h("p", { class: "muted" }, servers.length
          ? "No MCP server is connected; connect one in Settings → MCP servers."
          : "No MCP server is configured: add one to mcp.json (see Settings → MCP servers)."));
        return;
      }
      const groups = await Promise.all(connected.map(async (s) => {
        const q = s.workspaceId ? `?workspaceId=${enc(s.workspaceId)}` : "";
        try {
          const cat = await api("GET", `/api/mcp/servers/${enc(s.name)}/catalog${q}`);
          const items = (cat.resources || []).map((r) => h("li", { dataset: { server: s.name, uri: r.uri } },
            h("button", {
              type: "button", class: "link",
              onclick: () => {
                picked = { server: s.name, workspaceId: s.workspaceId || "", uri: r.uri, label: r.title || r.name || r.uri };
                d.close();
              },
            }, r.title || r.name || r.uri),
            " ", h("span", { class: "muted small" }, r.uri, r.mimeType ? ` (${r.mimeType})` : "")));
          return h("section", { class: "resource-group", dataset: { server: s.name } }, h("h3", null, s.name),
            items.length ? h("ul", null, items) : h("p", { class: "muted small" }, "No resources."));
        } catch (err) {
          return h("section", { class: "resource-group", dataset: { server: s.name } }, h("h3", null, s.name),
            h("p", { class: "error" }, errorText(err)));
        }
      }));
      replace(list, groups);
      list.querySelector("button")?.focus();
    })();
  });
}

/** resourceChip is a picked resource in the composer, removable before sending. */
export function resourceChip(res, onRemove) {
  return h("figure", { class: "attachment attachment-resource", dataset: { uri: res.uri } },
    h("span", { "aria-hidden": "true" }, "⧉"),
    h("figcaption", { class: "small", title: `${res.uri} (MCP server ${res.server})` }, res.label),
    h("button", { type: "button", class: "icon-btn", "aria-label": `Remove ${res.label}`, title: "Remove", onclick: onRemove }, "×"));
}

/** resourcePartView draws a resource part: what it is, and its text to unfold. */
export function resourcePartView(part) {
  let info = {};
  try {
    info = JSON.parse(part.args || "{}");
  } catch {
    // A part the store kept always parses; show what there is either way.
  }
  const size = part.text ? new TextEncoder().encode(part.text).length : part.data ? Math.floor(part.data.length * 3 / 4) : 0;
  // A workspace file the person mentioned (@path) names its path; an MCP resource its server.
  const head = h("span", { class: "resource-head" },
    h("code", { class: "resource-uri" }, info.path ? `@${info.path}` : info.uri || "resource"),
    h("span", { class: "muted small" }, info.path ? " · workspace file" : ` · MCP server ${info.server || "?"}`, part.mediaType ? ` · ${part.mediaType}` : "", size ? ` · ${sizeText(size)}` : ""));
  if (info.path && part.data && /^image\/(png|jpeg|gif|webp)$/.test(part.mediaType) && /^[A-Za-z0-9+/]*={0,2}$/.test(part.data)) {
    const img = h("img", { class: "attached-image", alt: `${info.path} (image)` });
    img.src = `data:${part.mediaType};base64,${part.data}`; // a checked image type and base64 bytes only
    return h("div", { class: "resource-part" }, head, img);
  }
  if (!part.text) return h("div", { class: "resource-part" }, head);
  return h("details", { class: "resource-part" }, h("summary", null, head), h("pre", { class: "resource-text" }, part.text));
}

function sizeText(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1048576).toFixed(1)} MiB`;
}
