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

// toBottom scrolls to the end and notes where that is: a scroll up is measured from the last
// place the page or the person put the view.
function toBottom(view) {
  const sc = document.scrollingElement;
  if (!sc) return;
  sc.scrollTop = sc.scrollHeight;
  view.lastTop = sc.scrollTop;
}

// noteScroll decides from where the view is now whether the person follows the bottom. Only
// the person scrolling up stops the following: content that grew below leaves the page
// short of the bottom without that. It runs on each scroll event, and also before the page
// scrolls by itself: a scroll event comes a frame after the scroll (later on a loaded
// machine), and a live update in between must not take the view back down from where the
// person (or a click that scrolled a button into view) just put it.
function noteScroll(view) {
  const top = document.scrollingElement?.scrollTop ?? 0;
  if (atBottom()) view.following = true;
  else if (top < view.lastTop - 2) view.following = false;
  view.lastTop = top;
  if (view.jumpBtn) view.jumpBtn.hidden = view.following !== false;
}

/** jumpButton is the "Jump to latest" button, shown while the person reads further up. */
export function jumpButton(view) {
  view.following = true;
  view.jumpBtn = h("button", { type: "button", class: "jump-latest", hidden: true,
    onclick: () => { view.following = true; toBottom(view); view.jumpBtn.hidden = true; } }, "Jump to latest ↓");
  view.lastTop = 0;
  const onScroll = () => {
    if (!view.el.isConnected) {
      window.removeEventListener("scroll", onScroll);
      return;
    }
    noteScroll(view);
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
      followBottom(view);
    });
    queueMicrotask(() => view.transcript && ro.observe(view.transcript));
  }
  return view.jumpBtn;
}

/** followBottom scrolls to the end when the person follows the bottom of this view (a view
 * no longer on the page scrolls nothing). */
export function followBottom(view) {
  if (!view.el.isConnected) return;
  noteScroll(view);
  if (view.following !== false) toBottom(view);
}

/** jumpToLatest goes to the end and follows it again, wherever the person had scrolled (they
 * just sent a message and want to see what comes). */
export function jumpToLatest(view) {
  if (!view.el.isConnected) return;
  view.following = true;
  toBottom(view);
  if (view.jumpBtn) view.jumpBtn.hidden = true;
}

/** openAtLatest shows the latest message when a session opens (again once laid out). */
export function openAtLatest(view) {
  view.following = true;
  followBottom(view);
  requestAnimationFrame(() => requestAnimationFrame(() => followBottom(view)));
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
