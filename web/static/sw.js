// jean2's service worker: it keeps the app's shell (the page's scripts, styles, icons and
// the offline page) in a cache named after the build, so the client opens at once and a
// navigation while the server is down shows the offline page instead of the browser's
// error. It never answers the API (/api/…, the WebSockets), /auth or /mcp from a cache:
// those always go to the server. It also shows the server's push notifications.
"use strict";

// BUILD is written by the server (web.go) when it serves this file: the build's version
// and the files of its shell. A new build changes the file, so the browser installs the
// new worker, which fills a new cache and deletes the old one.
const BUILD = { version: "dev", shell: [] }; // BUILD

const CACHE = "jean2-shell-" + BUILD.version;
const OFFLINE = "/offline.html";

// Paths the worker never answers: the browser sends them to the server as if it were not
// there.
function networkOnly(path) {
  return path.startsWith("/api/") || path === "/auth" || path.startsWith("/auth/") || path === "/mcp" || path.startsWith("/mcp/");
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    // cache: "reload" so the files come from the server, not from the HTTP cache.
    await cache.addAll(BUILD.shell.map((url) => new Request(url, { cache: "reload" })));
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith("jean2-shell-") && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (event) => {
  const req = event.request;
  if (req.method !== "GET") return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin || networkOnly(url.pathname)) return;
  if (req.mode === "navigate") {
    event.respondWith(navigate(req));
    return;
  }
  event.respondWith(fromShell(req, url));
});

// navigate always asks the server (the index names this build's files), and shows the
// offline page when the server cannot be reached.
async function navigate(req) {
  try {
    return await fetch(req);
  } catch {
    const offline = await caches.match(OFFLINE, { cacheName: CACHE });
    return offline || new Response("The jean2 server is not reachable.", { status: 503, headers: { "Content-Type": "text/plain; charset=utf-8" } });
  }
}

// fromShell answers a file of the shell from the cache, and anything else from the server.
// A file of this build missing from the cache (a module added since) is kept once fetched.
async function fromShell(req, url) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(req, { ignoreSearch: true });
  if (hit) return hit;
  const res = await fetch(req);
  if (res.ok && url.pathname.startsWith("/a/" + BUILD.version + "/")) {
    await cache.put(req, res.clone());
  }
  return res;
}

// Words for each kind of notification the server sends (server/push.go).
const KIND_TEXT = {
  done: "The turn finished.",
  failed: "The turn failed.",
  ask: "A question is waiting for your answer.",
};

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = {};
  }
  const title = data.title || "jean2";
  const body = KIND_TEXT[data.kind] || "Something happened in a session.";
  event.waitUntil(self.registration.showNotification(title, {
    body,
    icon: "/icons/icon-192.png",
    badge: "/icons/icon-192.png",
    // One notification per session: a newer one replaces it.
    tag: "jean2-session-" + (data.sessionId || ""),
    renotify: true,
    requireInteraction: data.kind === "ask",
    data: { url: sessionURL(data) },
  }));
});

// sessionURL is the client address of the notification's session, on this origin only.
function sessionURL(data) {
  if (typeof data.sessionId === "string" && data.sessionId) return "/#/s/" + encodeURIComponent(data.sessionId);
  return "/";
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const target = new URL(event.notification.data?.url || "/", self.location.origin);
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const client of windows) {
      if (new URL(client.url).origin !== target.origin) continue;
      await client.focus();
      if (client.url !== target.href && "navigate" in client) await client.navigate(target.href);
      return;
    }
    await self.clients.openWindow(target.href);
  })());
});
