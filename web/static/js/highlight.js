// A small syntax highlighter: a scanner per language family that cuts code into tokens
// (comment, string, number, keyword, type, literal, tag, attr, property, variable), drawn as
// <span class="tok-…"> with the text as Text nodes. It aims at readable colour, not at being
// a parser; what it does not recognise stays plain text.

import { h } from "./dom.js";

const words = (s) => new Set(s.split(/\s+/).filter(Boolean));

const C_LIKE_LITERALS = "true false null";
const families = {
  js: {
    line: ["//"], block: [["/*", "*/"]], quotes: ['"', "'", "`"],
    keywords: words(`async await break case catch class const continue debugger default delete do else
      export extends finally for from function if import in instanceof let new of return static super
      switch this throw try typeof var void while with yield as implements interface enum type
      declare namespace readonly private protected public abstract keyof satisfies get set`),
    types: words("string number boolean any unknown never object symbol bigint void Promise Array Map Set Record"),
    literals: words(C_LIKE_LITERALS + " undefined NaN Infinity"),
  },
  go: {
    line: ["//"], block: [["/*", "*/"]], quotes: ['"', "'", "`"],
    keywords: words(`break case chan const continue default defer else fallthrough for func go goto if
      import interface map package range return select struct switch type var`),
    types: words(`bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune
      string uint uint8 uint16 uint32 uint64 uintptr any comparable`),
    literals: words("true false nil iota"),
  },
  python: {
    line: ["#"], block: [], quotes: ['"""', "'''", '"', "'"],
    keywords: words(`and as assert async await break class continue def del elif else except finally for
      from global if import in is lambda nonlocal not or pass raise return try while with yield match case`),
    types: words("int float str bool list dict set tuple bytes object type self cls"),
    literals: words("True False None"),
  },
  ruby: {
    line: ["#"], block: [], quotes: ['"', "'"],
    keywords: words(`alias and begin break case class def defined do else elsif end ensure for if in module
      next not or redo rescue retry return self super then undef unless until when while yield require`),
    types: words(""), literals: words("true false nil"),
  },
  rust: {
    line: ["//"], block: [["/*", "*/"]], quotes: ['"'],
    keywords: words(`as async await break const continue crate dyn else enum extern fn for if impl in let
      loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while`),
    types: words("i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Box"),
    literals: words("true false None Some Ok Err"),
  },
  c: {
    line: ["//"], block: [["/*", "*/"]], quotes: ['"', "'"],
    keywords: words(`auto break case catch class const continue default delete do else enum extern for
      friend goto if inline namespace new operator private protected public return sizeof static struct
      switch template this throw try typedef union using virtual volatile while import package extends
      implements interface final abstract synchronized throws instanceof var val fun override func let
      guard defer async await foreach in is lock readonly sealed`),
    types: words(`void int char short long float double bool unsigned signed size_t string String boolean
      byte Integer Object`),
    literals: words("true false null NULL nullptr nil"),
  },
  shell: {
    line: ["#"], block: [], quotes: ['"', "'"],
    keywords: words(`if then else elif fi for while until do done case esac function in select return exit
      export local readonly set unset source alias cd echo printf test`),
    types: words(""), literals: words("true false"), variables: true,
  },
  sql: {
    line: ["--"], block: [["/*", "*/"]], quotes: ["'", '"'],
    keywords: words(`select from where and or not insert into values update set delete create table drop
      alter index primary key foreign references join left right inner outer on group by order having
      limit offset as distinct union all exists in is like between case when then else end begin commit
      rollback transaction view with returning default unique check constraint if`),
    types: words("integer int text varchar char blob real boolean date timestamp numeric"),
    literals: words("null true false"), caseInsensitive: true,
  },
  json: {
    line: [], block: [], quotes: ['"'], keywords: words(""), types: words(""),
    literals: words("true false null"), keysBeforeColon: true,
  },
  yaml: {
    line: ["#"], block: [], quotes: ['"', "'"], keywords: words(""), types: words(""),
    literals: words("true false null yes no on off ~"), yamlKeys: true,
  },
  toml: {
    line: ["#", ";"], block: [], quotes: ['"""', '"', "'"], keywords: words(""), types: words(""),
    literals: words("true false"), yamlKeys: true,
  },
  css: {
    line: [], block: [["/*", "*/"]], quotes: ['"', "'"], keywords: words("@media @import @keyframes @font-face !important"),
    types: words(""), literals: words(""), cssProps: true,
  },
  markup: { markup: true },
  diff: { diff: true },
  plain: { plain: true },
};

const aliases = {
  js: "js", javascript: "js", jsx: "js", mjs: "js", cjs: "js", ts: "js", typescript: "js", tsx: "js",
  go: "go", golang: "go", py: "python", python: "python", rb: "ruby", ruby: "ruby", rs: "rust", rust: "rust",
  c: "c", h: "c", cpp: "c", "c++": "c", cc: "c", hpp: "c", java: "c", kotlin: "c", kt: "c", cs: "c",
  csharp: "c", swift: "c", php: "c", scala: "c", dart: "c",
  sh: "shell", bash: "shell", shell: "shell", zsh: "shell", console: "shell", dockerfile: "shell",
  makefile: "shell", make: "shell", sql: "sql", json: "json", jsonc: "json", json5: "json",
  yaml: "yaml", yml: "yaml", toml: "toml", ini: "toml", css: "css", scss: "css", less: "css",
  html: "markup", xml: "markup", svg: "markup", vue: "markup", svelte: "markup", htm: "markup",
  diff: "diff", patch: "diff", text: "plain", txt: "plain", plain: "plain", markdown: "plain", md: "plain",
};

const extensions = {
  js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "javascript", ts: "typescript",
  tsx: "typescript", go: "go", py: "python", rb: "ruby", rs: "rust", c: "c", h: "c", cpp: "cpp",
  cc: "cpp", hpp: "cpp", java: "java", kt: "kotlin", cs: "csharp", swift: "swift", php: "php",
  sh: "bash", bash: "bash", zsh: "bash", sql: "sql", json: "json", yaml: "yaml", yml: "yaml",
  toml: "toml", ini: "ini", css: "css", scss: "scss", html: "html", htm: "html", xml: "xml",
  svg: "svg", md: "markdown", diff: "diff", patch: "diff", txt: "text",
};

/** languageOf picks a language from an explicit name, else from the path's extension. */
export function languageOf(language, path) {
  if (language) return String(language).toLowerCase();
  const base = String(path || "").split("/").pop().toLowerCase();
  if (base === "dockerfile") return "dockerfile";
  if (base === "makefile") return "makefile";
  const ext = base.includes(".") ? base.split(".").pop() : "";
  return extensions[ext] || "text";
}

function familyOf(language) {
  return families[aliases[String(language || "").toLowerCase()] || "plain"];
}

/** tokenize returns [{cls, text}] covering code exactly; cls "" is plain text. */
export function tokenize(code, language) {
  const src = String(code ?? "");
  const fam = familyOf(language);
  if (fam.plain) return [{ cls: "", text: src }];
  if (fam.diff) return tokenizeDiff(src);
  if (fam.markup) return tokenizeMarkup(src);
  return tokenizeCode(src, fam);
}

function tokenizeCode(src, fam) {
  const out = [];
  let plain = "";
  const push = (cls, text) => {
    if (!text) return;
    if (cls === "") {
      plain += text;
      return;
    }
    if (plain) out.push({ cls: "", text: plain });
    plain = "";
    out.push({ cls, text });
  };
  let i = 0;
  const n = src.length;
  while (i < n) {
    const rest = src.startsWith.bind(src);
    let matched = false;
    for (const [open, close] of fam.block) {
      if (rest(open, i)) {
        const end = src.indexOf(close, i + open.length);
        const stop = end < 0 ? n : end + close.length;
        push("tok-comment", src.slice(i, stop));
        i = stop;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    for (const lc of fam.line) {
      // "#" starts a comment in shell only at a word start ("a#b" is a word).
      if (rest(lc, i) && !(lc === "#" && fam.variables && i > 0 && /\S/.test(src[i - 1]))) {
        const end = src.indexOf("\n", i);
        const stop = end < 0 ? n : end;
        push("tok-comment", src.slice(i, stop));
        i = stop;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    for (const q of fam.quotes) {
      if (rest(q, i)) {
        let j = i + q.length;
        while (j < n) {
          if (src[j] === "\\" && q !== "'''" && !(fam.variables && q === "'")) {
            j += 2;
            continue;
          }
          if (src.startsWith(q, j)) {
            j += q.length;
            break;
          }
          if (src[j] === "\n" && q.length === 1 && q !== "`") break; // unterminated: stop at the line end
          j++;
        }
        j = Math.min(j, n);
        const text = src.slice(i, j);
        let cls = "tok-string";
        if (fam.keysBeforeColon && /^\s*:/.test(src.slice(j, j + 20))) cls = "tok-property";
        push(cls, text);
        i = j;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    const c = src[i];
    if (fam.variables && c === "$") {
      const m = /^\$(\{[^}\n]*\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@#?*!$-])/.exec(src.slice(i, i + 200));
      if (m) {
        push("tok-variable", m[0]);
        i += m[0].length;
        continue;
      }
    }
    if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(src[i + 1] || ""))) {
      if (i === 0 || !/[A-Za-z_$]/.test(src[i - 1])) {
        const m = /^(0[xX][0-9a-fA-F_]+|0[bB][01_]+|(\d[\d_]*)?\.?\d[\d_]*([eE][+-]?\d+)?[a-zA-Z%]*)/.exec(src.slice(i, i + 64));
        if (m && m[0]) {
          push("tok-number", m[0]);
          i += m[0].length;
          continue;
        }
      }
    }
    if (/[A-Za-z_@$!-]/.test(c)) {
      const m = /^[A-Za-z_@$!][A-Za-z0-9_$-]*/.exec(src.slice(i, i + 128));
      let word = m ? m[0] : c;
      // Hyphens belong to words only in CSS, YAML and shell; elsewhere they are operators.
      if (!fam.cssProps && !fam.yamlKeys && !fam.variables) word = /^[A-Za-z_@$!][A-Za-z0-9_$]*/.exec(word)?.[0] || c;
      const key = fam.caseInsensitive ? word.toLowerCase() : word;
      let cls = "";
      if (fam.keywords.has(key)) cls = "tok-keyword";
      else if (fam.types.has(key)) cls = "tok-type";
      else if (fam.literals.has(key)) cls = "tok-literal";
      else if ((fam.yamlKeys || fam.cssProps) && /^[ \t]*:/.test(src.slice(i + word.length, i + word.length + 8)) && lineStartBefore(src, i)) cls = "tok-property";
      else if (!fam.cssProps && !fam.yamlKeys && /^\s*\(/.test(src.slice(i + word.length, i + word.length + 4))) cls = "tok-function";
      push(cls, word);
      i += word.length;
      continue;
    }
    push("", c);
    i++;
  }
  if (plain) out.push({ cls: "", text: plain });
  return out;
}

// lineStartBefore is true when only spaces (or "- " list marks, or "{;" in CSS) precede i on its line.
function lineStartBefore(src, i) {
  const start = src.lastIndexOf("\n", i - 1) + 1;
  return /^[\s\-{;]*$/.test(src.slice(start, i));
}

function tokenizeDiff(src) {
  return src.split(/(?<=\n)/).map((line) => {
    let cls = "";
    if (line.startsWith("+++") || line.startsWith("---")) cls = "tok-meta";
    else if (line.startsWith("+")) cls = "tok-added";
    else if (line.startsWith("-")) cls = "tok-removed";
    else if (line.startsWith("@@")) cls = "tok-meta";
    return { cls, text: line };
  });
}

function tokenizeMarkup(src) {
  const out = [];
  const re = /<!--[\s\S]*?(?:-->|$)|<\/?[A-Za-z][\w:.-]*|\/?>|"[^"]*"|'[^']*'|[\w:-]+(?==)/g;
  let last = 0;
  let inTag = false;
  for (let m = re.exec(src); m; m = re.exec(src)) {
    const t = m[0];
    let cls = "";
    if (t.startsWith("<!--")) cls = "tok-comment";
    else if (t.startsWith("<")) {
      cls = "tok-tag";
      inTag = true;
    } else if (t.endsWith(">")) {
      cls = inTag ? "tok-tag" : "";
      inTag = false;
    } else if (!inTag) cls = "";
    else if (t[0] === '"' || t[0] === "'") cls = "tok-string";
    else cls = "tok-attr";
    if (m.index > last) out.push({ cls: "", text: src.slice(last, m.index) });
    out.push({ cls, text: t });
    last = m.index + t.length;
  }
  if (last < src.length) out.push({ cls: "", text: src.slice(last) });
  return out;
}

function nodesOf(tokens) {
  return tokens.map((t) => (t.cls ? h("span", { class: t.cls }, t.text) : document.createTextNode(t.text)));
}

/** highlight returns nodes for code: spans for tokens, Text for the rest. */
export function highlight(code, language) {
  return nodesOf(tokenize(code, language));
}

/**
 * highlightLines tokenizes the whole text (so a comment spanning lines stays a comment) and
 * returns one array of nodes per line, without the newline characters.
 */
export function highlightLines(code, language) {
  const lines = [[]];
  for (const t of tokenize(code, language)) {
    const pieces = t.text.split("\n");
    pieces.forEach((p, k) => {
      if (k > 0) lines.push([]);
      if (p) lines[lines.length - 1].push({ cls: t.cls, text: p });
    });
  }
  return lines.map(nodesOf);
}
