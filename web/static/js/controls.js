// Conversation controls of the session view: a message sent while a turn runs is queued
// (sent when the turn ends), a user message can be edited and sent again (optionally
// putting the files back first: Restore to here), the last answer regenerated, and the
// session forked at any message. Also each message's copy button. docs/api.md,
// "Conversation controls".

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { openDialog, notify, errorText } from "./ui.js";

/** messageActions is the bar under a message: copy, and the controls that fit its role. */
export function messageActions(view, m) {
  const bar = h("div", { class: "msg-actions" });
  const copy = h("button", { type: "button", class: "link small copy-msg", title: "Copy this message's text",
    onclick: () => copyText(messageText(m), copy) }, "Copy");
  const fork = h("button", { type: "button", class: "link small fork-msg", title: "A new session with the conversation up to here",
    onclick: () => forkAt(view, m.msg.id) }, "Fork");
  if (m.msg.role === "user") {
    const edit = h("button", { type: "button", class: "link small edit-msg", title: "Edit this message and send it again from here",
      onclick: () => editMessage(view, m) }, "Edit");
    bar.append(copy, edit, fork);
  } else {
    const regen = h("button", { type: "button", class: "link small regenerate", title: "Answer the last message again",
      onclick: () => regenerate(view) }, "Regenerate");
    bar.append(copy, regen, fork);
  }
  return bar;
}

/** messageText is what a message says, as text (its parts' text; a user's content). */
function messageText(m) {
  const texts = [];
  for (const p of [...m.parts.values()].sort((a, b) => a.part.seq - b.part.seq)) if (p.part.kind === "text") texts.push(p.text || "");
  return texts.join("\n\n") || m.msg.content || "";
}

/** copyText puts text on the clipboard and says so on the button. */
export async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    if (button) {
      const was = button.textContent;
      button.textContent = "Copied";
      setTimeout(() => (button.textContent = was), 1500);
    }
  } catch (err) {
    notify(`Could not copy: ${errorText(err)}`, "error");
  }
}

/** sendOrQueue sends the composer's message: now when idle, else queued for the turn's end. */
export async function sendOrQueue(view, body) {
  const res = await api("POST", `/api/sessions/${enc(view.id)}/queue`, body);
  return res.queued ? "queued" : "sent";
}

/** drawQueue shows the session's queued messages under the composer, each removable. */
export function drawQueue(view, items, error) {
  if (!view.queueEl) return;
  view.queueEl.setAttribute("role", "group");
  if (!items.length && !error) {
    replace(view.queueEl);
    view.queueEl.hidden = true;
    return;
  }
  view.queueEl.hidden = false;
  replace(view.queueEl,
    items.length ? h("p", { class: "muted small" }, items.length === 1 ? "Queued, sent when this turn ends:" : `${items.length} messages queued, sent one by one as turns end:`) : null,
    h("ol", { class: "queue-list" }, items.map((q) => h("li", { class: "queued", dataset: { queueId: q.id } },
      h("span", { class: "queued-text" }, q.text || [q.images ? `${q.images} image(s)` : "", q.resources ? `${q.resources} resource(s)` : ""].filter(Boolean).join(", ")),
      h("button", { type: "button", class: "link small", "aria-label": `Remove queued message: ${q.text.slice(0, 40)}`,
        onclick: async () => {
          try {
            await api("DELETE", `/api/sessions/${enc(view.id)}/queue/${enc(q.id)}`);
          } catch (err) {
            notify(`Could not remove it: ${errorText(err)}`, "error");
          }
        } }, "Remove")))),
    error ? h("p", { class: "error", role: "alert" }, error) : null);
}

/** loadQueue draws the queue as the server has it (on opening a session). */
export async function loadQueue(view) {
  try {
    const res = await api("GET", `/api/sessions/${enc(view.id)}/queue`);
    drawQueue(view, res.items || []);
  } catch {
    // The queue shows with its next change.
  }
}

/** editMessage lets a person change a message of theirs and send it again from there. */
function editMessage(view, m) {
  const text = h("textarea", { id: "edit-text", rows: 5, "aria-label": "Message" });
  text.value = m.msg.content || "";
  const restore = h("input", { type: "checkbox", id: "edit-restore" });
  const err = h("p", { class: "error", role: "alert" });
  const form = h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      if (!text.value.trim()) {
        replace(err, "The message cannot be empty.");
        return;
      }
      try {
        await api("POST", `/api/sessions/${enc(view.id)}/messages/${enc(m.msg.id)}/resend`, { text: text.value, restore: restore.checked });
        d.close();
      } catch (er) {
        replace(err, errorText(er), er.code === "conflict" ? " Untick Restore to keep the files as they are." : "");
      }
    },
  }, text,
  h("p", { class: "help" }, "This message and everything after it are removed, and the conversation goes on from the new text."),
  h("label", { class: "check" }, restore, " Restore to here: put the files back as they were before this message"),
  err,
  h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Send again"), h("button", { type: "button", onclick: () => d.close() }, "Cancel")));
  const d = openDialog("Edit and send again", form, { class: "wide" });
  text.focus();
}

async function regenerate(view) {
  try {
    await api("POST", `/api/sessions/${enc(view.id)}/regenerate`, {});
  } catch (err) {
    notify(`Could not regenerate: ${errorText(err)}`, "error");
  }
}

async function forkAt(view, messageId) {
  try {
    const s = await api("POST", `/api/sessions/${enc(view.id)}/fork`, { messageId });
    view.app.onSessionChanged?.(s);
    location.hash = `#/s/${encodeURIComponent(s.id)}`;
  } catch (err) {
    notify(`Could not fork: ${errorText(err)}`, "error");
  }
}

/** cutFrom drops the messages from seq on (messages.cut: an edit or a regenerate). */
export function cutFrom(view, seq) {
  for (const [id, m] of [...view.messages]) {
    if (m.msg.seq >= seq) {
      m.el.remove();
      view.messages.delete(id);
      m.turn.messageIds = m.turn.messageIds.filter((x) => x !== id);
    }
  }
  for (const t of [...view.turns]) {
    if (!t.messageIds.length) {
      t.el.remove();
      view.turns.splice(view.turns.indexOf(t), 1);
    } else {
      for (const el of t.body.querySelectorAll(".turn-end")) el.remove();
    }
  }
}
