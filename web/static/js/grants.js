// Granting a tool, from a call jean2's sandbox refused, a power it does not declare: the
// refusal names the command a person would run (`jean2 tools approve NAME --grant SPEC`),
// and the card offers the same grant behind a button and a confirmation
// (POST /api/tools/{name}/grant).
import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { confirmAction, notify, errorText } from "./ui.js";

// A worker's hint quotes the command; the egress proxy's names a host. sandbox.GrantHints
// reads them the same way.
// The quoted form must end where the worker ends it (a path holding a backtick would end it
// early, naming a different, wider path); sandbox.GrantHints reads hints the same way.
const grantHint = /`jean2 tools approve ([^\s`]+) --grant ([^`\n]+)`(?=$|[\s,;.)])|jean2 tools approve ([^\s`]+) --grant (network=[^\s,;`)]+)/g;
const grantSpec = /^(childProcess|(network|read|write|data)=.+)$/;
// Controls, text-direction marks and line separators: what a person reads would not be
// what is granted (sandbox.ParseGrant refuses them too).
const hiddenChars = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufffd]/;

/** grantHints returns the grants a failed call's message names for the tool name, once each.
 * The message is the tool's own output: a grant to another tool is not offered. */
export function grantHints(message, name) {
  const out = [];
  for (const m of String(message || "").matchAll(grantHint)) {
    const who = m[1] ?? m[3], spec = m[2] ?? m[4];
    if (who === name && grantSpec.test(spec) && !hiddenChars.test(spec) && !out.includes(spec)) out.push(spec);
  }
  return out;
}

/** grantWords says what a grant allows, in a person's words. */
export function grantWords(spec) {
  if (spec === "childProcess") return "start processes";
  const [kind, value] = [spec.slice(0, spec.indexOf("=")), spec.slice(spec.indexOf("=") + 1)];
  return { network: `reach ${value}`, read: `read ${value}`, write: `write ${value}`, data: `use the data folder of ${value}` }[kind] || spec;
}

/** powersWords lists a declaration's or a grant's powers (tool.Permissions) in words. */
export function powersWords(p) {
  if (!p) return [];
  return [...(p.read || []).map((x) => `read ${x}`), ...(p.write || []).map((x) => `write ${x}`),
    p.childProcess ? "start processes" : "", ...(p.network || []).map((x) => `reach ${x}`),
    p.data ? `use the data folder of ${p.data}` : "", p.memoryMB ? `use up to ${p.memoryMB} MB` : ""].filter(Boolean);
}

// A call of a tool whose declared permissions wait for a person's approval ends with the
// host's words (host/sandbox.go).
const approveHint = /have not been approved for this version: a person runs `jean2 tools approve ([^\s`]+)` once/;

/** approveVersion shows what tool t (as the page has it) declares and, once the person
 * confirms, approves that very version (a tool that changed since is refused: 409).
 * Resolves the updated tool, or null when not approved. */
async function approveVersion(t) {
  const what = powersWords(t.permissions?.declared);
  const ok = await confirmAction(`Approve ${t.name}?`,
    [h("p", null, `This version of ${t.name} declares that it needs, beyond its context:`),
      h("ul", null, what.map((w) => h("li", null, w))),
      h("p", { class: "muted small" }, "The approval holds for this version only (a changed tool asks again); jean2's own folder and credential folders stay closed whatever it declares.")],
    "Approve");
  if (!ok) return null;
  try {
    const updated = await api("POST", `/api/tools/${enc(t.name)}/approve`, { hash: t.hash });
    notify(`${t.name} is approved.`, "info");
    return updated;
  } catch (err) {
    notify(`Could not approve ${t.name}: ${errorText(err)}`, "error");
    return null;
  }
}

/** approveOffer is a refused call's "Approve" button when the refusal says the tool's
 * declaration waits for approval, or null. It shows the tool's declaration as the server
 * has it now, and approves that version. */
export function approveOffer(toolName, error) {
  const m = approveHint.exec(String(error || ""));
  if (!m || m[1] !== toolName) return null;
  const slot = h("p", { class: "tool-grant small" });
  replace(slot, h("button", { type: "button", class: "link", onclick: async () => {
    let t;
    try {
      t = await api("GET", `/api/tools/${enc(toolName)}`);
    } catch (err) {
      notify(`Could not read ${toolName}'s declaration: ${errorText(err)}`, "error");
      return;
    }
    if (await approveVersion(t)) replace(slot, h("span", { class: "muted" }, `Approved: ${toolName} may run with what it declares. Ask for the call again.`));
  } }, `Approve what ${toolName} declares…`));
  return slot;
}

/** permissionsView is the tools page's account of a tool's powers beyond its context: what
 * it declares (approved or not) and what a person granted its version, with Revoke. */
export function permissionsView(t, onChanged) {
  const st = t.permissions;
  if (!st) return null;
  const declared = powersWords(st.declared);
  const granted = powersWords(st.granted);
  const lines = [h("p", { class: "small" }, "Declares: ", declared.length ? declared.join("; ") : "nothing beyond its context",
    declared.length ? (st.approved ? " (approved)" : h("span", { class: "muted" }, " (not approved) ")) : "",
    declared.length && !st.approved ? h("button", { type: "button", class: "link small", onclick: async () => {
      if (await approveVersion(t)) onChanged();
    } }, "Approve…") : null)];
  if (granted.length) {
    const revoke = h("button", { type: "button", class: "link small", onclick: async () => {
      if (!await confirmAction(`Take back what ${t.name} was allowed?`, `Its grants (${granted.join("; ")}) and the approval of its declaration go, for every version; its next call runs without them.`, "Take back", { danger: true })) return;
      try {
        onChanged(await api("DELETE", `/api/tools/${enc(t.name)}/grant`));
        notify(`${t.name} no longer has its grants.`, "info");
      } catch (err) {
        notify(`Could not take back ${t.name}'s grants: ${errorText(err)}`, "error");
      }
    } }, "Take back…");
    lines.push(h("p", { class: "small tool-granted" }, "Granted to this version: ", granted.join("; "), " ", revoke));
  }
  return h("div", { class: "tool-permissions" }, lines);
}

/** grantOffer is the card's "Allow" button for what the refusal names, or null. */
export function grantOffer(toolName, error, toolHash) {
  const specs = grantHints(error, toolName);
  if (!specs.length) return null;
  const what = specs.map(grantWords);
  const slot = h("p", { class: "tool-grant small" });
  const button = h("button", { type: "button", class: "link", onclick: () => grant() }, `Allow ${toolName} to ${what.join(", ")}…`);
  replace(slot, button);
  async function grant() {
    const ok = await confirmAction(`Allow ${toolName}?`,
      [h("p", null, `This version of ${toolName} does not declare these powers; jean2's sandbox refused them:`),
        h("ul", null, what.map((w) => h("li", null, w))),
        h("p", { class: "muted small" }, "It holds for this version only (an edited tool asks again); jean2's own folder and credential folders stay closed whatever is granted. The Tools page shows it, and `jean2 tools approve " + toolName + " --revoke` takes it back.")],
      "Allow");
    if (!ok) return;
    try {
      // The version that was refused: one that replaced it is refused (409), not granted unseen.
      await api("POST", `/api/tools/${enc(toolName)}/grant`, toolHash ? { grants: specs, hash: toolHash } : { grants: specs });
      replace(slot, h("span", { class: "muted" }, `Allowed: ${toolName} may ${what.join(", ")}. Ask for the call again.`));
      notify(`${toolName} may now ${what.join(", ")}.`, "info");
    } catch (err) {
      notify(`Could not allow ${toolName}: ${errorText(err)}`, "error");
    }
  }
  return slot;
}
