// Subagents in a conversation: the card of a task call shows the child session it started
// (docs/harness.md, Subagents), a link to open it, and its transcript folded under the card.
// The child's events are in its own log; the parent learns of it from subagent.started, from
// GET /api/sessions/{id}/children when the page opens, and from the finished call's
// visualization.
import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

// noteChild remembers which child a task call started (subagent.started / .finished, or a
// row of the children list) and redraws that call's card.
export function noteChild(chat, callId, sessionId, description) {
  if (!callId || !sessionId) return;
  chat.children ||= new Map();
  chat.children.set(callId, { sessionId, description: description || "" });
  const card = chat.cardFor(callId);
  if (card) {
    chat.drawToolCard(card);
    if (card.subagent?.open) loadTranscript(sessionId, card.subagent.box);
  }
}

// loadChildren reads the session's children once the conversation is drawn.
export async function loadChildren(chat) {
  let res;
  try {
    res = await api("GET", `/api/sessions/${enc(chat.id)}/children`);
  } catch {
    return; // the conversation is shown all the same
  }
  for (const s of res.sessions || []) noteChild(chat, s.parent?.parentCallId, s.id, s.parent?.description);
}

// callOfChild is the task call that started the child session, for its asks to sit on.
export function callOfChild(chat, sessionId) {
  for (const [callId, c] of chat.children || []) if (c.sessionId === sessionId) return callId;
  return "";
}

// subagentView is what a task call's card shows of its child, or null for another call.
export function subagentView(chat, p) {
  if (p.part.toolName !== "task") return null;
  const child = childOf(chat, p.part);
  if (!child) return null;
  p.subagent ||= { box: h("div", { class: "subagent-transcript" }), open: false };
  const details = h("details", { class: "subagent" },
    h("summary", null, "Subagent ", h("a", { href: `#/s/${enc(child)}`, class: "subagent-link" }, child)),
    p.subagent.box);
  details.open = p.subagent.open;
  details.addEventListener("toggle", () => {
    p.subagent.open = details.open;
    if (details.open) loadTranscript(child, p.subagent.box);
  });
  return details;
}

function childOf(chat, part) {
  const known = chat.children?.get(part.callId);
  if (known) return known.sessionId;
  const v = part.visualization;
  return v && v.type === "structured-response" && typeof v.data?.sessionId === "string" ? v.data.sessionId : "";
}

// loadTranscript draws the child's messages compactly: its task, each call with its status,
// its answers.
async function loadTranscript(sessionId, box) {
  let msgs;
  try {
    msgs = (await api("GET", `/api/sessions/${enc(sessionId)}/messages`)).messages || [];
  } catch (err) {
    replace(box, h("p", { class: "error small" }, `Cannot read the subagent's session: ${err.message || err}`));
    return;
  }
  const rows = [];
  for (const m of msgs) {
    if (m.role === "user") rows.push(h("p", { class: "subagent-task small" }, h("strong", null, "Task: "), m.content || ""));
    if (m.role !== "assistant") continue;
    for (const part of m.parts || []) {
      if (part.kind === "tool_call") {
        rows.push(h("p", { class: `subagent-call small status-${part.status || "pending"}` },
          h("code", null, part.toolName || "tool"), ` ${part.status || "pending"}`));
      } else if (part.kind === "text" && part.text) {
        rows.push(h("div", { class: "subagent-text" }, renderMarkdown(part.text)));
      }
    }
  }
  if (!rows.length) rows.push(h("p", { class: "muted small" }, "Nothing yet."));
  replace(box, ...rows);
}
