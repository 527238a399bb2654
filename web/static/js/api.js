// Talking to jean2 serve: JSON over HTTP (docs/api.md) and the event WebSockets. Everything
// stays on this page's origin.

/** ApiError carries the server's error code and message (docs/api.md, "Errors"). */
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message || `request failed with status ${status}`);
    this.status = status;
    this.code = code || "";
    this.details = details || null;
  }
}

let unauthorized = null;

/**
 * onUnauthorized sets what runs when the server answers 401: this browser is not signed in
 * (or its cookie was dropped), and the page shows how to sign in.
 */
export function onUnauthorized(fn) {
  unauthorized = fn;
}

let databaseWatcher = null;
let databaseDown = false;

/**
 * onDatabase sets what runs when the server's database stops serving calls (down = true,
 * with the 503's error: its details name the database and why) and when it serves them
 * again (down = false). It hears each change once, however many calls wait.
 */
export function onDatabase(fn) {
  databaseWatcher = fn;
}

function databaseState(down, err) {
  if (down === databaseDown) return;
  databaseDown = down;
  databaseWatcher?.(down, err);
}

/** retryWait is the wait a 503's Retry-After asks for, kept between 250 ms and 5 s. */
function retryWait(res) {
  const secs = Number.parseInt(res.headers.get("Retry-After") || "", 10);
  return Number.isFinite(secs) ? Math.min(5000, Math.max(250, secs * 1000)) : 1000;
}

/**
 * api calls the server and returns its JSON (null for 204); failures throw ApiError. A call
 * the server's database could not serve (503 database_unavailable) did not happen, and the
 * server asks for it again: it is sent again after the server's Retry-After until the
 * database answers, while onDatabase's watcher shows that the page waits for it.
 */
export async function api(method, path, body) {
  for (;;) {
    try {
      const data = await apiOnce(method, path, body);
      databaseState(false, null);
      return data;
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== "database_unavailable") {
        if (err instanceof ApiError && err.status > 0) databaseState(false, null); // the server and its database answered
        throw err;
      }
      databaseState(true, err);
      await new Promise((resolve) => setTimeout(resolve, err.retryAfter || 1000));
    }
  }
}

async function apiOnce(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, "network", `Cannot reach the jean2 server (${err.message}). Is jean2 serve still running?`);
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      if (!res.ok) throw new ApiError(res.status, "", text.slice(0, 500));
      throw new ApiError(res.status, "bad_response", `The server sent something that is not JSON for ${method} ${path}.`);
    }
  }
  if (res.status === 401 && unauthorized) unauthorized();
  if (!res.ok) {
    const e = (data && data.error) || {};
    const err = new ApiError(res.status, e.code, e.message || `${method} ${path} failed with status ${res.status}`, e.details);
    if (res.status === 503) err.retryAfter = retryWait(res);
    throw err;
  }
  return data;
}

export const enc = encodeURIComponent;

/**
 * EventStream follows one event log over a WebSocket (a session's or the server's): it
 * reconnects after a drop with after= the last seq it saw, so nothing is missed or repeated.
 *   onHello({lastSeq, running, pendingAsks}), onEvent(event), onStatus("open"|"closed"|"retrying")
 * send(frame) returns a promise settled by the server's ack or error frame for its ref.
 */
export class EventStream {
  constructor(path, after, handlers) {
    this.path = path;
    this.after = after || 0;
    this.handlers = handlers;
    this.ws = null;
    this.closed = false;
    this.retry = 0;
    this.timer = 0;
    this.nextRef = 1;
    this.waiting = new Map(); // ref → {resolve, reject}
    this.connect();
  }

  connect() {
    if (this.closed) return;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const url = `${proto}//${location.host}${this.path}?after=${this.after}`;
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (err) {
      this.scheduleRetry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 0;
      this.handlers.onStatus?.("open");
    };
    ws.onmessage = (msg) => {
      let frame;
      try {
        frame = JSON.parse(msg.data);
      } catch {
        return; // not ours to interpret; the server only sends JSON
      }
      if (typeof frame.seq === "number") {
        if (frame.seq <= this.after) return; // already seen (a replay after reconnecting)
        this.after = frame.seq;
        this.handlers.onEvent?.(frame);
        return;
      }
      if (frame.type === "hello") this.handlers.onHello?.(frame);
      else if (frame.type === "ack" || frame.type === "error") {
        const w = this.waiting.get(frame.ref);
        if (!w) return;
        this.waiting.delete(frame.ref);
        if (frame.type === "ack") w.resolve(frame);
        else w.reject(new ApiError(0, frame.error?.code, frame.error?.message));
      }
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      for (const w of this.waiting.values()) w.reject(new ApiError(0, "network", "The connection to the server closed before it answered."));
      this.waiting.clear();
      if (this.closed) return;
      this.handlers.onStatus?.("retrying");
      this.scheduleRetry();
    };
  }

  scheduleRetry() {
    if (this.closed) return;
    const delay = Math.min(10000, 250 * 2 ** this.retry);
    this.retry = Math.min(this.retry + 1, 6);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  /** send a control frame (answer, stop); resolves on ack, rejects with ApiError. */
  send(frame) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new ApiError(0, "network", "Not connected to the server."));
    }
    const ref = String(this.nextRef++);
    return new Promise((resolve, reject) => {
      this.waiting.set(ref, { resolve, reject });
      this.ws.send(JSON.stringify({ ...frame, ref }));
    });
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.close(1000);
    }
    this.handlers.onStatus?.("closed");
  }
}
