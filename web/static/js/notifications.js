// Push notifications (docs/web.md, "Notifications"): Settings → Notifications subscribes
// this browser to the server's Web Push notifications, sent when a turn ends, fails or
// waits for an answer while no client follows its session. The service worker (sw.js)
// shows them.

import { api, enc } from "./api.js";
import { h, replace } from "./dom.js";
import { errorText } from "./ui.js";

/** pushSupported says whether this browser, on this address, can take push notifications. */
function pushSupported() {
  return window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/** keyBytes turns the server's base64url VAPID public key into the bytes subscribe wants. */
function keyBytes(b64url) {
  const b64 = b64url.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (b64url.length % 4)) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

function sameKey(sub, key) {
  const have = sub.options?.applicationServerKey;
  if (!have) return true; // the browser does not say: assume it is ours
  const a = new Uint8Array(have);
  return a.length === key.length && a.every((v, i) => v === key[i]);
}

/**
 * syncSubscription tells the server again of this browser's subscription, if it has one and
 * notifications are allowed: the server may have lost it (a new database), or the browser
 * may have renewed it. Quiet: a failure leaves things as they were.
 */
export async function syncSubscription(reg) {
  if (!pushSupported() || Notification.permission !== "granted" || !reg?.pushManager) return;
  try {
    const sub = await reg.pushManager.getSubscription();
    if (sub) await api("POST", "/api/push/subscriptions", sub.toJSON());
  } catch {
    // Settings → Notifications shows the state and any error.
  }
}

async function registration() {
  const reg = await navigator.serviceWorker.getRegistration("/");
  if (!reg) throw new Error("the service worker is not registered yet; reload the page");
  return reg;
}

// subscribeWait bounds the wait for the browser's push service: without a connection to
// it (an offline device, a browser without one) subscribe may never settle.
const subscribeWait = 20000;

function withinTime(promise, ms) {
  let timer = 0;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the browser's push service did not answer within ${ms / 1000} s (is this device offline?)`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** turnOn asks the person's permission, subscribes with the server's key and registers it. */
async function turnOn() {
  const permission = await Notification.requestPermission();
  if (permission !== "granted") throw new Error(permission === "denied" ? "the browser blocks notifications for this site; allow them in its site settings" : "notifications were not allowed");
  const reg = await registration();
  const { publicKey } = await api("GET", "/api/push/key");
  const key = keyBytes(publicKey);
  let sub = await reg.pushManager.getSubscription();
  if (sub && !sameKey(sub, key)) {
    await sub.unsubscribe(); // made for another server key: it would be refused
    sub = null;
  }
  if (!sub) sub = await withinTime(reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }), subscribeWait);
  await api("POST", "/api/push/subscriptions", sub.toJSON());
}

async function turnOff() {
  const reg = await registration();
  const sub = await reg.pushManager.getSubscription();
  if (!sub) return;
  try {
    await api("DELETE", "/api/push/subscriptions?endpoint=" + enc(sub.endpoint));
  } catch (err) {
    if (err.status !== 404) throw err;
  }
  await sub.unsubscribe();
}

/** notificationsSection is Settings → Notifications. */
export function notificationsSection() {
  const box = h("div", { class: "notifications-box" });
  const section = h("section", { "aria-labelledby": "notifications-title" },
    h("h3", { id: "notifications-title" }, "Notifications"),
    h("p", { class: "muted" }, "When a turn ends, fails or waits for your answer while no jean2 window or terminal follows its session, jean2 can notify this browser, even with the page closed. A notification names the session only, never what was said."),
    box);
  draw(box);
  return section;
}

async function draw(box, error) {
  if (!pushSupported()) {
    replace(box, h("p", null, "This browser cannot take notifications from this address (push needs https, or localhost)."));
    return;
  }
  let sub = null;
  try {
    sub = await (await registration()).pushManager.getSubscription();
  } catch (err) {
    error = error || err;
  }
  const on = Boolean(sub) && Notification.permission === "granted";
  const act = (fn) => async (e) => {
    e.target.disabled = true;
    try {
      await fn();
      draw(box);
    } catch (err) {
      draw(box, err);
    }
  };
  replace(box,
    h("p", { class: "notifications-state" }, on ? "Notifications are on for this browser." :
      Notification.permission === "denied" ? "The browser blocks notifications for this site: allow them in its site settings, then turn them on here." :
        "Notifications are off for this browser."),
    error ? h("p", { class: "error", role: "alert" }, "Could not change notifications: " + (error.status !== undefined ? errorText(error) : error.message || String(error))) : null,
    h("p", null, on ? h("button", { type: "button", onclick: act(turnOff) }, "Turn off notifications")
      : h("button", { type: "button", class: "primary", onclick: act(turnOn), disabled: Notification.permission === "denied" }, "Turn on notifications")));
}
