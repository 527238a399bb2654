// Asks (REFERENCE §5) as forms a person answers: permission (risk, once / session /
// workspace), single and multi select, text, number, confirm, form, and the client capabilities this
// client does not have. Each form calls answer(value) and shows the server's refusal if the
// answer has the wrong shape (the ask then stays pending).

import { h, append, replace } from "./dom.js";

let uid = 0; // only for pairing labels with controls inside one page
const nextId = (p) => `${p}-${++uid}`;

const riskWords = { low: "Low risk", medium: "Medium risk", high: "High risk", critical: "Critical risk" };

/**
 * renderAsk returns the form of one pending ask. answer(value) must return a promise; while it
 * runs the form is disabled; a rejection is shown beside the form.
 */
/**
 * answeredSummary turns an ask's form into a read-only record of what became of it: the
 * question stays readable in its card, its buttons go, and what was answered is said.
 */
export function answeredSummary(node, resolved) {
  for (const el of node.querySelectorAll("button, input, textarea, select")) {
    if (el.tagName === "BUTTON") el.remove();
    else el.disabled = true;
  }
  node.classList.add("answered");
  const status = node.querySelector(".ask-status");
  const words = { answered: "Answered", timeout: "Timed out", cancelled: "Withdrawn: the call ended before an answer", policy: "Decided by the unattended policy" };
  let what = words[resolved.outcome] || resolved.outcome || "Answered";
  const ans = resolved.answer;
  if (ans && typeof ans === "object" && "granted" in ans) what += ans.granted ? `: allowed${ans.duration ? " (" + ans.duration + ")" : ""}` : ": denied";
  else if (ans !== undefined && ans !== null) what += ": " + answerWords(ans);
  if (status) {
    status.classList.remove("error");
    replace(status, what + ".");
  }
}

/**
 * answerWords says an answer as a person reads it: yes or no, a list, a form's answers
 * question by question; JSON only for a shape it does not know.
 */
export function answerWords(ans) {
  if (typeof ans === "boolean") return ans ? "yes" : "no";
  if (typeof ans === "string" || typeof ans === "number") return String(ans);
  if (Array.isArray(ans)) return ans.map(answerWords).join(", ");
  if (ans && Array.isArray(ans.answers)) return ans.answers.map((q) => `${q.question}: ${q.answer === undefined || q.answer === null ? "no answer" : answerWords(q.answer)}`).join("; ");
  if (ans && "answer" in ans) return answerWords(ans.answer);
  return JSON.stringify(ans);
}

export function renderAsk(pending, answer, opts = {}) {
  const a = pending.ask || {};
  const status = h("p", { class: "ask-status", role: "status", "aria-live": "polite" });
  const send = async (value, form) => {
    const controls = form.querySelectorAll("button, input, textarea, select");
    controls.forEach((c) => (c.disabled = true));
    replace(status, "Sending…");
    status.classList.remove("error");
    try {
      await answer(value);
      // answeredSummary may have said what was answered already.
      if (!status.closest(".ask")?.classList.contains("answered")) replace(status, "Answered.");
    } catch (err) {
      controls.forEach((c) => (c.disabled = false));
      status.classList.add("error");
      replace(status, err.message || String(err));
    }
  };
  const head = h("div", { class: "ask-head" },
    h("span", { class: "badge ask-kind" }, kindWord(a)),
    pending.tool ? h("span", { class: "muted" }, " from ", h("code", null, pending.tool)) : null);
  let body;
  switch (a.type) {
    case "permission":
      body = permissionForm(a, send, opts);
      break;
    case "confirm":
      body = confirmForm(a, send);
      break;
    case "client_capability":
      body = capabilityForm(a, send);
      break;
    case "single_select":
    case "multi_select":
    case "text":
    case "number":
    case "form": {
      body = questionForm(a, send);
      break;
    }
    default:
      body = h("form", { onsubmit: (e) => { e.preventDefault(); send(null, e.currentTarget); } },
        h("p", null, `This ask has a type the web client does not know (${a.type}).`),
        h("button", { type: "submit" }, "Decline"));
  }
  return h("section", { class: `ask ask-${a.type || "unknown"}`, dataset: { askId: pending.id }, "aria-label": "Question from " + (pending.tool || "a tool") },
    head, body, status,
    pending.expiresAt ? h("p", { class: "muted small ask-expires" }, "Waits until ", new Date(pending.expiresAt).toLocaleTimeString(), ", then the call goes on without an answer.") : null);
}

function kindWord(a) {
  return { permission: "Permission", single_select: "Choose one", multi_select: "Choose", text: "Question", number: "Question", confirm: "Confirm", form: "Form", client_capability: "Client" }[a.type] || "Ask";
}

/**
 * defaultDuration is the grant a permission form offers first: what the tool suggests only
 * for a low-risk ask, else this one call. A key meant for something else must never leave
 * a lasting grant behind (the terminal applies the same rule).
 */
export function defaultDuration(a) {
  return a.risk === "low" && a.duration ? a.duration : "once";
}

function permissionForm(a, send, opts) {
  const suggested = defaultDuration(a);
  const form = h("form", { class: "permission", onsubmit: (e) => e.preventDefault() });
  const grant = (duration) => send({ granted: true, duration }, form);
  const btn = (duration, label) => h("button", {
    type: "button", class: duration === suggested ? "primary" : null, dataset: { duration },
    onclick: () => grant(duration),
  }, label);
  append(form, [
    h("p", { class: "risk risk-" + (a.risk || "unknown") }, riskWords[a.risk] || "Risk not stated", a.resource ? ` · ${a.resource}` : ""),
    h("p", { class: "question" }, a.question || "A tool asks for permission."),
    a.description ? h("p", { class: "description" }, a.description) : null,
    a.paths?.length ? h("div", null, h("p", { class: "muted small" }, "Paths:"), h("ul", { class: "paths" }, a.paths.map((p) => h("li", null, h("code", null, p))))) : null,
    a.patterns?.length ? h("p", { class: "muted small" }, "Remembered as: ", a.patterns.map((p, i) => [i ? ", " : "", h("code", null, p)])) : null,
    h("div", { class: "buttons" },
      btn("once", "Allow once"),
      btn("session", "Allow for this session"),
      btn("workspace", "Allow for this workspace"),
      h("button", { type: "button", class: "danger", dataset: { duration: "deny" }, onclick: () => send({ granted: false }, form) }, "Deny"))]);
  return form;
}

function confirmForm(a, send) {
  const form = h("form", { onsubmit: (e) => e.preventDefault() });
  const def = a.defaultValue;
  append(form, [
    h("p", { class: "question" }, a.question),
    a.description ? h("p", { class: "description" }, a.description) : null,
    h("div", { class: "buttons" },
      h("button", { type: "button", class: def === false ? null : "primary", onclick: () => send(true, form) }, "Yes"),
      h("button", { type: "button", class: def === false ? "primary" : null, onclick: () => send(false, form) }, "No"))]);
  return form;
}

function capabilityForm(a, send) {
  const form = h("form", { onsubmit: (e) => { e.preventDefault(); send(null, e.currentTarget); } });
  append(form, [
    h("p", null, "The tool asks this client for ", h("code", null, a.capability || "?"), ", which the web client does not provide."),
    h("div", { class: "buttons" }, h("button", { type: "submit" }, "Decline"))]);
  return form;
}

/** questionForm handles single_select, multi_select, text and form asks. */
function questionForm(a, send) {
  const questions = a.type === "form" ? a.questions || [] : [a];
  const fields = questions.map((q) => questionField(q, a.type === "form"));
  const error = h("p", { class: "error", role: "alert" });
  const form = h("form", {
    onsubmit: (e) => {
      e.preventDefault();
      replace(error);
      const answers = [];
      for (const f of fields) {
        const [ok, v] = f.value();
        if (!ok) {
          replace(error, v);
          f.focus();
          return;
        }
        answers.push(v);
      }
      const value = a.type === "form" ? { type: "form", answers: questions.map((q, i) => ({ question: q.question, answer: answers[i] })) } : answers[0];
      send(value, form);
    },
  });
  append(form, [
    a.type === "form" ? [h("p", { class: "question" }, a.question || "Please fill in:"), a.description ? h("p", { class: "description" }, a.description) : null] : null,
    fields.map((f) => f.node),
    error,
    h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Answer"))]);
  return form;
}

function optionValue(o) {
  return o.value === undefined || o.value === null ? o.label : o.value;
}

/** questionField returns {node, value() → [ok, value | message], focus()} for one question. */
export function questionField(q, inForm) {
  const id = nextId("q");
  const legend = (tag) => h(tag, { class: "question", id: id + "-label" }, q.question || "");
  const desc = q.description ? h("p", { class: "description", id: id + "-desc" }, q.description) : null;
  switch (q.type) {
    case "single_select": {
      const name = nextId("opt");
      const def = JSON.stringify(q.defaultValue);
      const inputs = (q.options || []).map((o, i) => {
        const inp = h("input", { type: "radio", name, id: `${name}-${i}`, checked: def !== undefined && JSON.stringify(optionValue(o)) === def });
        return [inp, o];
      });
      const node = h("fieldset", { class: "field" }, h("legend", null, q.question || ""), desc,
        inputs.map(([inp, o], i) => h("div", { class: "option" }, inp, h("label", { for: `${name}-${i}` }, o.label,
          o.description ? h("span", { class: "muted small" }, " — " + o.description) : null))));
      return {
        node,
        focus: () => inputs[0]?.[0].focus(),
        value: () => {
          const chosen = inputs.find(([inp]) => inp.checked);
          return chosen ? [true, optionValue(chosen[1])] : [false, `Choose one option for "${q.question}".`];
        },
      };
    }
    case "multi_select": {
      const name = nextId("opt");
      let defs = [];
      if (Array.isArray(q.defaultValue)) defs = q.defaultValue.map((d) => JSON.stringify(d));
      const inputs = (q.options || []).map((o, i) => [h("input", { type: "checkbox", name, id: `${name}-${i}`, checked: defs.includes(JSON.stringify(optionValue(o))) }), o]);
      const lo = q.min ?? 0;
      const hi = Math.min(q.max ?? inputs.length, inputs.length);
      const hint = lo || hi < inputs.length ? h("p", { class: "muted small" }, lo === hi ? `Choose ${lo}.` : `Choose ${lo} to ${hi}.`) : null;
      const node = h("fieldset", { class: "field" }, h("legend", null, q.question || ""), desc, hint,
        inputs.map(([inp, o], i) => h("div", { class: "option" }, inp, h("label", { for: `${name}-${i}` }, o.label,
          o.description ? h("span", { class: "muted small" }, " — " + o.description) : null))));
      return {
        node,
        focus: () => inputs[0]?.[0].focus(),
        value: () => {
          const chosen = inputs.filter(([inp]) => inp.checked).map(([, o]) => optionValue(o));
          if (chosen.length < lo || chosen.length > hi) return [false, `Choose ${lo === hi ? lo : `${lo} to ${hi}`} options for "${q.question}" (${chosen.length} chosen).`];
          return [true, chosen];
        },
      };
    }
    case "confirm": {
      const inp = h("input", { type: "checkbox", id, checked: q.defaultValue === true });
      return {
        node: h("div", { class: "field option" }, inp, h("label", { for: id }, q.question || ""), desc),
        focus: () => inp.focus(),
        value: () => [true, inp.checked],
      };
    }
    case "number": {
      // A number within the ask's bounds; the server checks it again.
      const inp = h("input", { type: "number", id, step: q.integer ? "1" : "any", min: q.minimum ?? null, max: q.maximum ?? null });
      if (typeof q.defaultValue === "number") inp.value = String(q.defaultValue);
      return {
        node: h("div", { class: "field" }, h("label", { for: id, class: "question" }, q.question || ""), desc, inp),
        focus: () => inp.focus(),
        value: () => {
          const n = inp.value === "" ? NaN : Number(inp.value);
          if (!Number.isFinite(n) || (q.integer && !Number.isInteger(n))) return [false, `Give ${q.integer ? "a whole number" : "a number"} for "${q.question}".`];
          return [true, n];
        },
      };
    }
    case "text":
    default: {
      const def = typeof q.defaultValue === "string" ? q.defaultValue : "";
      // One line, as the terminal reads it: a text ask wants a name, a path, a short answer.
      const inp = h("input", { type: "text", id, placeholder: q.placeholder || null, "aria-describedby": desc ? id + "-desc" : null });
      inp.value = def;
      inp.addEventListener("keydown", (e) => {
        // Enter answers (like the message box).
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          inp.form?.requestSubmit();
        }
      });
      return {
        node: h("div", { class: "field" }, h("label", { for: id, class: "question" }, q.question || ""), desc, inp),
        focus: () => inp.focus(),
        value: () => [true, inp.value],
      };
    }
  }
}

// The time after a dialog appears during which it takes no key and no click: a key or a
// click meant for what was there before (the space of "now please" in the message box)
// must not answer it. A person reads the question for longer than this anyway.
const ASK_GUARD_MS = 600;

/**
 * showPermissionDialog opens a dialog for a permission ask (Escape closes it; the ask stays
 * pending and its inline form stays in the conversation). Returns the <dialog>.
 *
 * It never takes what was typed before it appeared: when the person is writing (a text
 * field has the focus) it opens beside the conversation without taking the focus, else as
 * a modal whose focus rests on the dialog itself, not on a button; and for its first
 * ASK_GUARD_MS it ignores keys and clicks.
 */
export function showPermissionDialog(pending, answer) {
  const dialog = h("dialog", { class: "ask-dialog", "aria-labelledby": "", tabindex: "-1" });
  const close = h("button", { type: "button", class: "close", "aria-label": "Close (the question stays open)", onclick: () => dialog.close() }, "×");
  const body = renderAsk(pending, async (v) => {
    await answer(v);
    dialog.close();
  });
  const titleId = nextId("dlg");
  dialog.setAttribute("aria-labelledby", titleId);
  dialog.append(h("header", null, h("h2", { id: titleId }, "Permission needed"), close), body);
  dialog.addEventListener("close", () => dialog.remove());
  guardDialog(dialog);
  document.body.appendChild(dialog);
  const writing = document.activeElement;
  if (isWriting(writing)) {
    dialog.classList.add("beside");
    dialog.show();
    // show() moves the focus into the dialog too; it goes back where the person types (a
    // field keeps its caret and selection).
    writing.focus({ preventScroll: true });
  } else {
    dialog.showModal();
    dialog.focus();
  }
  return dialog;
}

// isWriting says whether el is a field a person types text into.
function isWriting(el) {
  if (!el) return false;
  if (el.tagName === "TEXTAREA" || el.isContentEditable) return true;
  return el.tagName === "INPUT" && !["button", "checkbox", "radio", "submit", "reset", "file", "range", "color"].includes(el.type);
}

// guardDialog makes a new dialog deaf for ASK_GUARD_MS (a button activated by a space or
// an Enter fires its click on the key's release, which can come after the dialog took the
// focus), and closes it on Escape, always: Chrome's own Escape handling of a dialog shown
// without a person's gesture sometimes waits for a second press.
function guardDialog(dialog) {
  const opened = performance.now();
  const early = () => performance.now() - opened < ASK_GUARD_MS;
  setTimeout(() => dialog.classList.add("ready"), ASK_GUARD_MS); // for tests, and the style
  for (const type of ["keydown", "keyup", "keypress", "click", "pointerdown", "mousedown"]) {
    dialog.addEventListener(type, (e) => {
      if (e.key === "Escape" && type === "keydown") {
        e.preventDefault();
        dialog.close();
        return;
      }
      if (early()) {
        e.preventDefault();
        e.stopPropagation();
      }
    }, { capture: true });
  }
}
