// The question about a workspace's .jean2/mcp.json: its commands start programs of the
// workspace (confined by jean2's sandbox unless its mode is off, each with the abilities
// shown), so the server starts them only once a person trusted that file's exact content (GET/POST /api/workspaces/{id}/mcp-trust). The notice sits
// under the workspace in the menu while its file is untrusted.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { confirmAction, errorText, notify } from "./ui.js";

// The menu is drawn again often; a workspace's state is asked for at most every few seconds.
const states = new Map(); // workspace id → {at, promise}
const freshFor = 5000;

function stateOf(w, force) {
  const known = states.get(w.id);
  if (!force && known && Date.now() - known.at < freshFor) return known.promise;
  const promise = api("GET", `/api/workspaces/${enc(w.id)}/mcp-trust`).catch(() => null);
  states.set(w.id, { at: Date.now(), promise });
  return promise;
}

/** mcpTrustNotice returns an element that fills in with the question when w's file is untrusted. */
export function mcpTrustNotice(w) {
  const box = h("div", { class: "mcp-trust", dataset: { workspaceId: w.id } });
  const draw = async (force) => {
    const st = await stateOf(w, force);
    if (!st || !st.present || st.trusted || st.error) {
      replace(box);
      return;
    }
    const commands = st.commands || [];
    replace(box,
      h("p", { class: "small", role: "status" }, "This workspace's .jean2/mcp.json wants to start: ",
        h("code", null, commands.join("; ") || "(no servers)"), ". Not started until you trust it."),
      h("button", { type: "button", class: "small", onclick: () => ask(st) }, "Trust…"));
  };
  const ask = async (st) => {
    const ok = await confirmAction("Trust this workspace's MCP servers?",
      [h("p", null, st.confined
        ? `${st.file} wants to start these, each confined by jean2's sandbox (what it may write and reach follows the command):`
        : `${st.file} wants to start these, as you, outside the sandbox (the sandbox mode is off):`),
        h("ul", { class: "mcp-trust-commands" }, (st.commands || []).map((c) => h("li", null, h("code", null, c)))),
        h("p", { class: "help" }, "Trust only what you would run yourself. A changed file asks again.")],
      "Trust and start", { focusCancel: true });
    if (!ok) return;
    try {
      await api("POST", `/api/workspaces/${enc(w.id)}/mcp-trust`, { sha256: st.sha256 });
      notify(`Trusted ${w.name}'s mcp.json; its servers are starting.`);
    } catch (err) {
      notify(`Not trusted: ${errorText(err)}`, "error");
    }
    draw(true);
  };
  draw(false);
  return box;
}
