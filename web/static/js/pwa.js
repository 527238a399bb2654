// The installable app's side in the page: registers the service worker (sw.js, which keeps
// the app's shell and shows the offline page and the push notifications), and keeps this
// browser's push subscription known to the server (js/notifications.js).

import { syncSubscription } from "./notifications.js";

/**
 * registerServiceWorker registers /sw.js for the whole client. Browsers allow it on https
 * and on localhost only; elsewhere the client works as before, without the offline page.
 */
export async function registerServiceWorker() {
  if (!("serviceWorker" in navigator) || !window.isSecureContext) return null;
  try {
    const reg = await navigator.serviceWorker.register("/sw.js", { scope: "/", updateViaCache: "none" });
    await syncSubscription(reg);
    return reg;
  } catch (err) {
    // Not an error of the page: the client runs without a worker (and without offline page).
    console.warn("jean2: the service worker could not be registered:", err);
    return null;
  }
}

registerServiceWorker();
