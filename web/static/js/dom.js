// Building DOM nodes without markup strings. Every text a model, a tool or a person wrote
// becomes a Text node, so nothing they wrote can become an element, a handler or a script.
// The page's Content-Security-Policy forbids inline script as a second wall.

/**
 * h("div", {class: "x", onclick: fn}, "text", child, [more, children])
 * Attributes: "class", "dataset" (object), "on<event>" (functions), booleans (true → present,
 * false/null/undefined → absent), anything else via setAttribute after String().
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "dataset") {
        for (const [k, v] of Object.entries(value)) el.dataset[k] = String(v);
      } else if (name.startsWith("on") && typeof value === "function") {
        el.addEventListener(name.slice(2), value);
      } else if (name === "style") {
        // Through the CSSOM: the page's CSP refuses style attributes written as markup.
        el.style.cssText = String(value);
      } else if (name === "value" && "value" in el) {
        el.value = String(value);
      } else if (name === "checked" || name === "selected" || name === "open") {
        el[name] = !!value;
        if (value) el.setAttribute(name, "");
      } else if (value === true) {
        el.setAttribute(name, "");
      } else {
        if (name === "href" || name === "src") {
          if (!safeURL(String(value))) continue;
        }
        el.setAttribute(name, String(value));
      }
    }
  }
  append(el, children);
  return el;
}

/** append adds children: strings and numbers as text, nodes as they are, arrays flattened. */
export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

/** clear removes every child of el. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** replace swaps el's children for the given ones. */
export function replace(el, ...children) {
  clear(el);
  return append(el, children);
}

/**
 * safeURL accepts only links a person may follow without running anything: http(s), mailto,
 * and same-page or relative paths. javascript:, data:, vbscript: and anything unknown are refused.
 */
export function safeURL(url) {
  const u = url.trim();
  if (u === "") return false;
  if (u.startsWith("#") || u.startsWith("/") || u.startsWith("./") || u.startsWith("../")) {
    return !u.startsWith("//");
  }
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(u);
  if (!scheme) return !/[\u0000-\u001f]/.test(u); // a relative path such as "docs/a.md"
  return ["http", "https", "mailto"].includes(scheme[1].toLowerCase());
}

/** icon is a small glyph that screen readers skip. */
export function icon(glyph, cls = "") {
  return h("span", { class: "icon " + cls, "aria-hidden": "true" }, glyph);
}

/** formatDuration turns milliseconds into "850 ms", "2.4 s", "1 m 05 s". */
export function formatDuration(ms) {
  if (typeof ms !== "number" || !isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s";
  const m = Math.floor(ms / 60000);
  const s = Math.round((ms % 60000) / 1000);
  return `${m} m ${String(s).padStart(2, "0")} s`;
}

/**
 * durationMsOf reads how long a part or a tool run took, in milliseconds: the API's
 * "durationMs" when present, else "duration", which the store sends as a Go time.Duration
 * (nanoseconds). Returns undefined when neither is a number.
 */
export function durationMsOf(x) {
  if (typeof x?.durationMs === "number") return x.durationMs;
  if (typeof x?.duration === "number") return x.duration / 1e6;
  return undefined;
}

/** plural: plural(3, "file") → "3 files". */
export function plural(n, word, many = word + "s") {
  return `${n} ${n === 1 ? word : many}`;
}

/** prettyJSON formats a value (or a JSON string) for reading; an unparsable string stays as is. */
export function prettyJSON(v) {
  if (typeof v === "string") {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  try {
    return JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    return String(v);
  }
}
