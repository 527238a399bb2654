// The session view's reading position and its calls for attention: it opens at the latest
// message, follows the bottom while the person is there (also while big cards lay out), and
// offers "Jump to latest" when they have scrolled up; a new question is announced to screen
// readers and, when the page is hidden, shown as a browser notification.

import { h, replace } from "./dom.js";

// NEAR is how close to the bottom (px) still counts as following it.
const NEAR = 120;

function atBottom() {
  const sc = document.scrollingElement;
  return !sc || sc.scrollHeight - sc.scrollTop - sc.clientHeight < NEAR;
}

function toBottom() {
  const sc = document.scrollingElement;
  if (sc) sc.scrollTop = sc.scrollHeight;
}

/** jumpButton is the "Jump to latest" button, shown while the person reads further up. */
export function jumpButton(view) {
  view.following = true;
  view.jumpBtn = h("button", { type: "button", class: "jump-latest", hidden: true,
    onclick: () => { view.following = true; toBottom(); view.jumpBtn.hidden = true; } }, "Jump to latest ↓");
  let lastTop = 0;
  const onScroll = () => {
    if (!view.el.isConnected) {
      window.removeEventListener("scroll", onScroll);
      return;
    }
    const top = document.scrollingElement?.scrollTop ?? 0;
    // Only the person scrolling up stops the following: content that grew below between a
    // scroll to the end and its event leaves the page short of the bottom without that.
    if (atBottom()) view.following = true;
    else if (top < lastTop - 2) view.following = false;
    lastTop = top;
    view.jumpBtn.hidden = view.following;
  };
  window.addEventListener("scroll", onScroll, { passive: true });
  // Cards that grow after they are drawn (highlighting, images, a capped card opened) keep
  // the bottom in view while the person follows it.
  if (typeof ResizeObserver === "function") {
    const ro = new ResizeObserver(() => {
      if (!view.el.isConnected) {
        ro.disconnect();
        return;
      }
      if (view.following) toBottom();
    });
    queueMicrotask(() => view.transcript && ro.observe(view.transcript));
  }
  return view.jumpBtn;
}

/** followBottom scrolls to the end when the person follows the bottom. */
export function followBottom(view) {
  if (view.following !== false) toBottom();
}

/** openAtLatest shows the latest message when a session opens (again once laid out). */
export function openAtLatest(view) {
  view.following = true;
  toBottom();
  requestAnimationFrame(() => requestAnimationFrame(() => view.following && toBottom()));
}

/** announce says text to screen readers at once (a new question). */
export function announce(view, text) {
  if (!view.announcer) return;
  replace(view.announcer);
  // A change of text is what a live region announces: cleared first, set a moment later.
  setTimeout(() => replace(view.announcer, text), 50);
}

/**
 * askNotifications is a button that asks the browser to show notifications (a question
 * waiting while the page is hidden), shown while the person has not decided yet: the
 * browser asks only on a person's gesture, and never by surprise.
 */
export function askNotifications() {
  if (!("Notification" in window) || Notification.permission !== "default") return null;
  const btn = h("button", { type: "button", class: "link small notify-btn", title: "Show a notification when a question waits while this page is hidden",
    onclick: () => Notification.requestPermission().then(() => btn.remove(), () => btn.remove()) }, "Notify me of questions");
  return btn;
}

/** notifyQuestion shows a browser notification for a waiting question when the page is hidden. */
export function notifyQuestion(view, pending) {
  if (!("Notification" in window) || Notification.permission !== "granted" || document.visibilityState === "visible") return;
  try {
    const n = new Notification("jean2: a question waits for you", {
      body: `${view.session?.title || "A session"}: ${pending.ask?.question || (pending.tool ? pending.tool + " asks" : "a tool asks")}`,
      tag: pending.id,
    });
    n.onclick = () => { window.focus(); n.close(); };
  } catch {
    // Some browsers allow notifications from a service worker only: the tab title says it.
  }
}

/** isStopped reports whether an error says the person stopped the turn. */
export function isStopped(error) {
  return typeof error === "string" && error.includes("stopped by the user");
}
