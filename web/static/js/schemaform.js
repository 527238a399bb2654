// A form generated from a tool's inputSchema (JSON Schema): strings, numbers, integers,
// booleans, enums, arrays and nested objects become fields; anything the form cannot express
// (oneOf, $ref, mixed types) becomes a JSON box. "Edit as JSON" switches the whole form to
// one JSON box. The server validates the arguments again against the full schema.

import { h, replace } from "./dom.js";

let uid = 0;
const nextId = () => `sf-${++uid}`;

/** schemaForm returns {node, value() → [ok, args | message]}. */
export function schemaForm(schema) {
  const root = field(schema && typeof schema === "object" ? schema : { type: "object" }, "", true, 0);
  const fieldsBox = h("div", { class: "schema-fields" }, root.node);
  const jsonId = nextId();
  const json = h("textarea", { id: jsonId, class: "json-input", rows: 8, spellcheck: "false" });
  const jsonBox = h("div", { class: "field", hidden: true }, h("label", { for: jsonId }, "Arguments (JSON)"), json);
  let asJSON = false;
  const toggle = h("button", {
    type: "button", class: "link",
    onclick: () => {
      if (!asJSON) {
        const [ok, v] = root.value();
        json.value = JSON.stringify(ok && v !== undefined ? v : {}, null, 2);
      }
      asJSON = !asJSON;
      fieldsBox.hidden = asJSON;
      jsonBox.hidden = !asJSON;
      replace(toggle, asJSON ? "Edit as fields" : "Edit as JSON");
      (asJSON ? json : fieldsBox.querySelector("input, textarea, select"))?.focus();
    },
  }, "Edit as JSON");
  return {
    node: h("div", { class: "schema-form" }, fieldsBox, jsonBox, h("p", null, toggle)),
    value: () => {
      if (asJSON) {
        try {
          return [true, JSON.parse(json.value || "{}")];
        } catch (err) {
          return [false, `The arguments are not valid JSON: ${err.message}`];
        }
      }
      const [ok, v] = root.value();
      return ok ? [true, v === undefined ? {} : v] : [false, v];
    },
  };
}

function typeOf(s) {
  if (Array.isArray(s.type)) {
    const t = s.type.filter((x) => x !== "null");
    return t.length === 1 ? t[0] : "json";
  }
  if (s.type) return s.type;
  if (s.properties) return "object";
  if (s.enum) return "enum";
  return "json";
}

function labelFor(name, s, required) {
  return [s.title || name || "Arguments", required ? h("span", { class: "required", "aria-hidden": "true" }, " *") : null];
}

function help(s, id) {
  return s.description ? h("p", { class: "help", id }, s.description) : null;
}

function field(s, name, required, depth) {
  if (!s || typeof s !== "object" || depth > 6) s = {};
  const t = s.enum ? "enum" : typeOf(s);
  const id = nextId();
  const helpId = id + "-help";
  const described = s.description ? helpId : null;
  const path = name || "arguments";
  switch (t) {
    case "object": {
      if (!s.properties && depth > 0) return jsonField(s, name, required, id, helpId);
      const req = new Set(Array.isArray(s.required) ? s.required : []);
      const children = Object.entries(s.properties || {}).map(([k, sub]) => [k, field(sub, k, req.has(k), depth + 1)]);
      const inner = children.map(([, c]) => c.node);
      if (!children.length) inner.push(h("p", { class: "muted" }, "This tool takes no arguments."));
      const node = depth === 0 ? h("div", null, help(s, helpId), inner) : h("fieldset", { class: "field" }, h("legend", null, labelFor(name, s, required)), help(s, helpId), inner);
      return {
        node,
        value: () => {
          const out = {};
          for (const [k, c] of children) {
            const [ok, v] = c.value();
            if (!ok) return [false, v];
            if (v !== undefined) out[k] = v;
          }
          if (!Object.keys(out).length && !required && depth > 0) return [true, undefined];
          return [true, out];
        },
      };
    }
    case "enum": {
      const opts = (s.enum || []).map((v, i) => h("option", { value: String(i), selected: s.default !== undefined && JSON.stringify(s.default) === JSON.stringify(v) }, typeof v === "string" ? v : JSON.stringify(v)));
      const sel = h("select", { id, "aria-describedby": described }, h("option", { value: "" }, required ? "— choose —" : "(not set)"), opts);
      return {
        node: h("div", { class: "field" }, h("label", { for: id }, labelFor(name, s, required)), help(s, helpId), sel),
        value: () => {
          if (sel.value === "") return required ? [false, `Choose a value for ${path}.`] : [true, undefined];
          return [true, s.enum[Number(sel.value)]];
        },
      };
    }
    case "boolean": {
      const inp = h("input", { type: "checkbox", id, checked: s.default === true, "aria-describedby": described });
      return {
        node: h("div", { class: "field option" }, inp, h("label", { for: id }, labelFor(name, s, required)), help(s, helpId)),
        value: () => [true, inp.checked],
      };
    }
    case "number":
    case "integer": {
      const inp = h("input", { type: "number", id, step: t === "integer" ? "1" : "any", min: s.minimum ?? null, max: s.maximum ?? null, "aria-describedby": described });
      if (typeof s.default === "number") inp.value = String(s.default);
      return {
        node: h("div", { class: "field" }, h("label", { for: id }, labelFor(name, s, required)), help(s, helpId), inp),
        value: () => {
          if (inp.value.trim() === "") return required ? [false, `${path} is required: enter a number.`] : [true, undefined];
          const n = Number(inp.value);
          if (!isFinite(n) || (t === "integer" && !Number.isInteger(n))) return [false, `${path} must be ${t === "integer" ? "a whole number" : "a number"}.`];
          return [true, n];
        },
      };
    }
    case "string": {
      const long = manyLines(name, s);
      const inp = long ? h("textarea", { id, rows: 2, "aria-describedby": described }) : h("input", { type: inputType(s.format), id, "aria-describedby": described });
      if (s.maxLength) inp.maxLength = s.maxLength;
      if (typeof s.default === "string") inp.value = s.default;
      if (Array.isArray(s.examples) && typeof s.examples[0] === "string") inp.placeholder = s.examples[0];
      return {
        node: h("div", { class: "field" }, h("label", { for: id }, labelFor(name, s, required)), help(s, helpId), inp),
        value: () => {
          if (inp.value === "") return required ? [false, `${path} is required.`] : [true, undefined];
          return [true, inp.value];
        },
      };
    }
    case "array": {
      const items = s.items && typeof s.items === "object" && !Array.isArray(s.items) ? s.items : {};
      if (items.enum) {
        const boxes = items.enum.map((v, i) => [h("input", { type: "checkbox", id: `${id}-${i}` }), v]);
        return {
          node: h("fieldset", { class: "field" }, h("legend", null, labelFor(name, s, required)), help(s, helpId),
            boxes.map(([b, v], i) => h("div", { class: "option" }, b, h("label", { for: `${id}-${i}` }, typeof v === "string" ? v : JSON.stringify(v))))),
          value: () => {
            const chosen = boxes.filter(([b]) => b.checked).map(([, v]) => v);
            return !chosen.length && !required ? [true, undefined] : [true, chosen];
          },
        };
      }
      const it = typeOf(items);
      if (it === "string" || it === "number" || it === "integer") {
        const inp = h("textarea", { id, rows: 3, "aria-describedby": described, placeholder: "one per line" });
        if (Array.isArray(s.default)) inp.value = s.default.join("\n");
        return {
          node: h("div", { class: "field" }, h("label", { for: id }, labelFor(name, s, required), h("span", { class: "muted small" }, " (one per line)")), help(s, helpId), inp),
          value: () => {
            const lines = inp.value.split("\n").filter((l) => l.trim() !== "");
            if (!lines.length) return required ? [true, []] : [true, undefined];
            if (it === "string") return [true, lines];
            const nums = lines.map(Number);
            if (nums.some((n) => !isFinite(n))) return [false, `${path} must hold one number per line.`];
            return [true, nums];
          },
        };
      }
      return jsonField(s, name, required, id, helpId);
    }
    default:
      return jsonField(s, name, required, id, helpId);
  }
}

function inputType(format) {
  return { email: "email", uri: "url", url: "url", date: "date", "date-time": "datetime-local" }[format] || "text";
}

function jsonField(s, name, required, id, helpId) {
  const inp = h("textarea", { id, rows: 3, class: "json-input", spellcheck: "false", "aria-describedby": s.description ? helpId : null, placeholder: "JSON" });
  if (s.default !== undefined) inp.value = JSON.stringify(s.default, null, 2);
  const path = name || "arguments";
  return {
    node: h("div", { class: "field" }, h("label", { for: id }, labelFor(name, s, required), h("span", { class: "muted small" }, " (JSON)")), help(s, helpId), inp),
    value: () => {
      if (inp.value.trim() === "") return required ? [false, `${path} is required (JSON).`] : [true, undefined];
      try {
        return [true, JSON.parse(inp.value)];
      } catch (err) {
        return [false, `${path} is not valid JSON: ${err.message}`];
      }
    },
  };
}

// manyLines says whether a string parameter holds text of several lines (a file's content,
// a patch, a script): those get a text area; a name, a path, a query, a URL get one line.
function manyLines(name, s) {
  if (s.format || (s.maxLength && s.maxLength <= 200)) return false;
  if (s.contentMediaType || s["x-multiline"] === true) return true;
  return /content|text|body|code|patch|diff|script|source|markdown|message|prompt|template|json|yaml/i.test(String(name));
}
