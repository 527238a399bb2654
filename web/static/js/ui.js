// Shared pieces of the page: modal dialogs (native <dialog>: focus stays inside, Escape
// closes), prompts and confirmations that never block the page, and notices.

import { h, replace } from "./dom.js";

let dialogSeq = 0;

/**
 * openDialog shows a modal with a title and body; returns {dialog, close, body}. Escape or the ×
 * button closes it; onClose runs once when it closes. Focus returns to where it was.
 */
export function openDialog(title, bodyNodes, opts = {}) {
  const id = `dlg-${++dialogSeq}`;
  const returnTo = document.activeElement;
  const body = h("div", { class: "dialog-body" }, bodyNodes);
  const dialog = h("dialog", { class: "dialog " + (opts.class || ""), "aria-labelledby": id + "-t" },
    h("header", null, h("h2", { id: id + "-t" }, title),
      h("button", { type: "button", class: "close", "aria-label": "Close", onclick: () => dialog.close() }, "×")),
    body);
  let closed = false;
  dialog.addEventListener("close", () => {
    if (closed) return;
    closed = true;
    // The close event comes a task after close(): by then the person (or a script) may have put
    // the focus somewhere on purpose, and it is not taken back from there.
    const now = document.activeElement;
    const movedOn = now && now !== document.body && now !== returnTo && !dialog.contains(now);
    dialog.remove();
    opts.onClose?.();
    if (!movedOn && returnTo && returnTo.isConnected && typeof returnTo.focus === "function") returnTo.focus();
  });
  document.body.appendChild(dialog);
  dialog.showModal();
  const first = dialog.querySelector("[autofocus]") || body.querySelector("input, textarea, select, button.primary, button, a[href]");
  first?.focus();
  return { dialog, body, close: () => dialog.open && dialog.close() };
}

/** promptText asks for one line of text; resolves to the text or null when cancelled. */
export function promptText(title, label, value = "", opts = {}) {
  return new Promise((resolve) => {
    let result = null;
    const inp = h("input", { type: "text", value, required: true, autofocus: true, placeholder: opts.placeholder || null });
    const err = h("p", { class: "error", role: "alert" });
    const form = h("form", {
      onsubmit: (e) => {
        e.preventDefault();
        const v = inp.value.trim();
        if (!v) {
          replace(err, `${label} cannot be empty.`);
          return;
        }
        result = v;
        d.close();
      },
    }, h("label", null, label, inp), opts.help ? h("p", { class: "help" }, opts.help) : null, err,
      h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, opts.ok || "Save"), h("button", { type: "button", onclick: () => d.close() }, "Cancel")));
    const d = openDialog(title, form, { onClose: () => resolve(result) });
    inp.select();
  });
}

/** confirmAction asks yes/no; resolves true when confirmed. */
export function confirmAction(title, message, okLabel, opts = {}) {
  return new Promise((resolve) => {
    let result = false;
    const ok = h("button", { type: "button", class: opts.danger ? "danger primary" : "primary", onclick: () => { result = true; d.close(); } }, okLabel);
    const d = openDialog(title, [h("div", { class: "confirm-message" }, message),
      h("div", { class: "buttons" }, ok, h("button", { type: "button", onclick: () => d.close() }, "Cancel"))], { onClose: () => resolve(result) });
    (opts.focusCancel ? d.body.querySelector(".buttons button:last-child") : ok).focus();
  });
}

/** notify shows a short notice in the page's live region; errors stay until dismissed. */
export function notify(message, kind = "info") {
  let box = document.getElementById("notices");
  if (!box) {
    box = h("div", { id: "notices", "aria-live": "polite" });
    document.body.appendChild(box);
  }
  const item = h("div", { class: "notice " + kind, role: kind === "error" ? "alert" : "status" },
    h("span", null, message),
    h("button", { type: "button", class: "close", "aria-label": "Dismiss", onclick: () => item.remove() }, "×"));
  box.appendChild(item);
  if (kind !== "error") setTimeout(() => item.remove(), 5000);
  return item;
}

/** errorText turns an ApiError (or anything thrown) into a sentence for people. */
export function errorText(err) {
  if (!err) return "Something went wrong.";
  return err.message || String(err);
}

/**
 * databaseBanner shows, at the top of the page, that the server's database does not serve
 * calls and that the page sends them again by itself (api.js, onDatabase); it goes when the
 * database answers again. A state of its own, not an error notice: nothing failed for good.
 */
export function databaseBanner(down, err) {
  let el = document.getElementById("database-status");
  if (!down) {
    if (el) {
      el.remove();
      notify("The database is available again.");
    }
    return;
  }
  const d = err?.details || {};
  const why = d.database ? ` The server's ${d.database} database: ${d.reason || "unavailable"}.` : "";
  if (!el) {
    el = h("div", { id: "database-status", role: "status", "aria-live": "polite" });
    document.body.prepend(el);
  }
  replace(el, h("strong", null, "Database unavailable, retrying…"), why, " What you do now is sent when it is back.");
}
