// jean2 tool worker for Node.js ≥ 20 and Bun ≥ 1.1.
//
// It loads a bundled tool module and runs its calls (and may load later versions of it). The protocol (docs/protocol.md) is
// JSON-RPC 2.0, one JSON object per line: requests from the host arrive on fd 3, everything
// this worker sends goes to fd 4. stdout and stderr belong to the tool: the host turns them
// into log lines, so nothing here ever writes protocol data to them.
//
// The worker reads one environment variable, JEAN2_EGRESS_PROXY (see installEgress); the host
// starts it with a clean environment and sends everything else it needs in `initialize` and
// `execute`.

import net from 'node:net';
import nodeModule from 'node:module';
import { pathToFileURL, fileURLToPath } from 'node:url';

// node:fs and node:child_process are taken as CommonJS objects, never by an ES import: Bun
// makes a builtin's ES named exports when it is first imported, from the object as it is
// then, and syncBuiltinESMExports does not update them. Taken so, a tool's own
// `import { readFileSync } from 'node:fs'`, after initialize, gets the wrappers of
// explainRefusals in Bun as in Node.
const requireBuiltin = nodeModule.createRequire(import.meta.url);
const fs = requireBuiltin('node:fs');
const childProcess = requireBuiltin('node:child_process');

const PROTOCOL_VERSION = 1;
const MAX_LINE = 64 * 1024 * 1024;
const IN_FD = 3;
const OUT_FD = 4;
const isBun = typeof globalThis.Bun !== 'undefined';
const SELF = fileURLToPath(import.meta.url);

const CODE = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  load: -32001,
  denied: -32002,
  failed: -32003,
  unknownCall: -32004,
};

// ---------------------------------------------------------------------------------------
// Transport. Outgoing lines are queued and written once per event-loop turn, so the answers
// of many calls that settle together leave in one write.

let outQueue = [];
let flushScheduled = false;
let writeOut; // (string) => void
let flushOut; // () => Promise<void>, resolves when everything queued has been handed to the OS

function send(line) {
  outQueue.push(line);
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flush);
  }
}

function flush() {
  flushScheduled = false;
  if (outQueue.length === 0) return;
  const data = outQueue.length === 1 ? outQueue[0] : outQueue.join('');
  outQueue = [];
  writeOut(data);
}

function setupTransport() {
  if (isBun) {
    // Bun's net.Socket does not take a pipe fd; its file sinks and streams do.
    const sink = globalThis.Bun.file(OUT_FD).writer();
    writeOut = (s) => {
      sink.write(s);
      sink.flush();
    };
    flushOut = async () => {
      flush();
      await sink.flush();
    };
    (async () => {
      const dec = new TextDecoder();
      try {
        for await (const chunk of globalThis.Bun.file(IN_FD).stream()) {
          onChunk(dec.decode(chunk, { stream: true }));
        }
      } catch (err) {
        fatal(`reading the host's messages failed: ${describe(err)}`);
      }
      onHostGone();
    })();
    return;
  }
  const out = new net.Socket({ fd: OUT_FD, readable: false, writable: true });
  out.on('error', () => onHostGone());
  writeOut = (s) => out.write(s);
  flushOut = () =>
    new Promise((resolve) => {
      flush();
      if (out.writableLength === 0) return resolve();
      out.write('', () => resolve());
    });
  const inp = new net.Socket({ fd: IN_FD, readable: true, writable: false });
  inp.setEncoding('utf8');
  inp.on('data', onChunk);
  inp.on('end', onHostGone);
  inp.on('error', onHostGone);
}

// Line splitting: only the new chunk is searched for a newline, so a long message that
// arrives in many chunks costs linear time.
let parts = [];
let partsLen = 0;

function onChunk(chunk) {
  let start = 0;
  let i;
  while ((i = chunk.indexOf('\n', start)) >= 0) {
    let line = chunk.slice(start, i);
    start = i + 1;
    if (parts.length > 0) {
      parts.push(line);
      line = parts.join('');
      parts = [];
      partsLen = 0;
    }
    if (line.length > 0 && line !== '\r') onLine(line);
  }
  if (start < chunk.length) {
    const rest = start === 0 ? chunk : chunk.slice(start);
    parts.push(rest);
    partsLen += rest.length;
    if (partsLen > MAX_LINE) {
      fatal(`protocol error: a message from the host is longer than ${MAX_LINE} bytes`);
    }
  }
}

function onHostGone() {
  // The host closed our input or stopped reading: nobody is left to answer to.
  for (const call of calls.values()) call.abort('the host went away');
  realExit(0);
}

function fatal(message) {
  try {
    process.stderr.write(`jean2 worker: ${message}\n`);
  } catch {}
  realExit(70);
}

// ---------------------------------------------------------------------------------------
// JSON-RPC.

const ID_PATTERN = /"id"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*")/;

function onLine(line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    const m = ID_PATTERN.exec(line);
    if (m) sendErrorRaw(m[1], CODE.parse, `parse error: ${err.message}`);
    else process.stderr.write(`jean2 worker: ignoring a line that is not JSON: ${line.slice(0, 200)}\n`);
    return;
  }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg) || msg.jsonrpc !== '2.0') {
    const id = msg && typeof msg === 'object' ? msg.id : undefined;
    if (typeof id === 'number' || typeof id === 'string') sendError(id, CODE.invalidRequest, 'invalid request: not a JSON-RPC 2.0 message');
    return;
  }
  const hasID = msg.id !== undefined && msg.id !== null;
  if (typeof msg.method === 'string') {
    if (hasID) onRequest(msg);
    else onNotification(msg);
  } else if (hasID) {
    onResponse(msg);
  }
}

function sendResult(id, json) {
  send('{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":' + json + '}\n');
}

function sendError(id, code, message, data) {
  sendErrorRaw(JSON.stringify(id), code, message, data);
}

function sendErrorRaw(rawID, code, message, data) {
  const err = { code, message: String(message) };
  if (data !== undefined) err.data = data;
  let json;
  try {
    json = JSON.stringify(err);
  } catch {
    json = JSON.stringify({ code, message: String(message) });
  }
  send('{"jsonrpc":"2.0","id":' + rawID + ',"error":' + json + '}\n');
}

function notify(method, params) {
  send('{"jsonrpc":"2.0","method":' + JSON.stringify(method) + ',"params":' + JSON.stringify(params) + '}\n');
}

let nextID = 0;
const waiting = new Map(); // id → {resolve, reject}

// request sends a worker → host request and resolves with its result.
function request(method, params) {
  let body;
  try {
    body = JSON.stringify(params);
  } catch (err) {
    return Promise.reject(new TypeError(`${method}: arguments cannot be serialized: ${err.message}`));
  }
  const id = ++nextID;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    send('{"jsonrpc":"2.0","id":' + id + ',"method":"' + method + '","params":' + body + '}\n');
  });
}

function onResponse(msg) {
  const w = waiting.get(msg.id);
  if (!w) return; // an answer nobody waits for
  waiting.delete(msg.id);
  if (msg.error) w.reject(hostError(msg.error));
  else w.resolve(msg.result);
}

// hostError turns a JSON-RPC error from the host into the Error a tool sees: the host's
// message, .code from error.data.code (ENOENT…), .path when the host named one.
function hostError(e) {
  const err = new Error(typeof e?.message === 'string' && e.message ? e.message : 'the host refused the request');
  const data = e && typeof e.data === 'object' && e.data !== null ? e.data : undefined;
  if (data && typeof data.code === 'string' && data.code) err.code = data.code;
  if (data && typeof data.path === 'string' && data.path) err.path = data.path;
  if (typeof e?.code === 'number') err.rpcCode = e.code;
  // The host's own refusal (ctx.fs and the like) says what refused it already: it is no
  // refusal of the sandbox, and no grant would lift it (explainError).
  Object.defineProperty(err, 'jean2Host', { value: true });
  return err;
}

function onRequest(msg) {
  switch (msg.method) {
    case 'initialize':
      initialize(msg.id, msg.params);
      return;
    case 'execute':
      execute(msg.id, msg.params);
      return;
    case 'load':
      load(msg.id, msg.params);
      return;
    case 'shutdown':
      shutdown(msg.id);
      return;
    default:
      sendError(msg.id, CODE.methodNotFound, `method not found: ${msg.method}`);
  }
}

function onNotification(msg) {
  if (msg.method === 'unload') {
    unload(msg.params);
    return;
  }
  if (msg.method === 'cancel') {
    const p = msg.params || {};
    const call = calls.get(p.callId);
    if (call) call.abort(typeof p.reason === 'string' && p.reason ? p.reason : 'The call was cancelled');
  }
}

// ---------------------------------------------------------------------------------------
// Loading the tool.
//
// A worker loads its tool with initialize and may load more modules of the same tool
// later (load): a new version of the tool reuses the process. Each module has an id the
// host chose; execute names the one to run (none: the one initialize loaded). Calls in
// flight keep the module they started with.

const modules = new Map(); // module id → {execute, shape, bundle}
let defaultModule = null;
let initializing = false;
let rules = { blocked: [], sensitive: [], home: '', languages: {} };
let toolName = '';
let toolDirs = []; // the tool folder as given and its real path, for tool-relative stack frames
const loadedBundles = new Set(); // bundles imported in this process, for a fresh instance on a repeat

async function initialize(id, params) {
  if (initializing) {
    sendError(id, CODE.invalidRequest, 'initialize was already called: load more modules with load');
    return;
  }
  initializing = true;
  if (!params || typeof params !== 'object') {
    sendError(id, CODE.invalidParams, 'initialize needs params {protocolVersion, bundle, toolDir, rules}');
    return;
  }
  if (params.protocolVersion !== PROTOCOL_VERSION) {
    sendError(id, CODE.invalidParams, `protocol version ${params.protocolVersion} is not supported: this worker speaks version ${PROTOCOL_VERSION}`);
    return;
  }
  const r = params.rules || {};
  rules = {
    blocked: Array.isArray(r.blocked) ? r.blocked.map(String) : [],
    sensitive: Array.isArray(r.sensitive) ? r.sensitive.map((s) => String(s).toLowerCase()) : [],
    home: typeof r.home === 'string' ? r.home : '',
    languages: r.languages && typeof r.languages === 'object' ? r.languages : {},
  };
  toolName = typeof params.toolDir === 'string' ? basename(params.toolDir) : '';
  if (typeof params.toolDir === 'string' && params.toolDir.startsWith('/')) {
    toolDirs = [clean(params.toolDir)];
    try {
      const r = fs.realpathSync(params.toolDir);
      if (r !== toolDirs[0]) toolDirs.push(r);
    } catch {}
  }
  // Before the tool's module loads, so that its imports of node:fs see the wrapped functions.
  if (r.sandbox === 'landlock' || r.sandbox === 'seatbelt') {
    sandboxName = r.sandbox;
    explainRefusals();
  }
  const m = await loadModule(id, params);
  if (m) defaultModule = m;
}

// load adds a module to a worker that initialize set up.
async function load(id, params) {
  if (!initializing) {
    sendError(id, CODE.invalidRequest, 'load before initialize: initialize the worker first');
    return;
  }
  if (!params || typeof params !== 'object' || typeof params.module !== 'string' || !params.module) {
    sendError(id, CODE.invalidParams, 'load needs params {module, bundle}');
    return;
  }
  await loadModule(id, params);
}

// loadModule imports a bundle, registers it under params.module and answers the request
// with its definition, or with a load error. It returns the module when it loaded.
async function loadModule(id, params) {
  const bundle = params.bundle;
  if (typeof bundle !== 'string' || !bundle.startsWith('/')) {
    sendError(id, CODE.invalidParams, 'bundle must be the absolute path of the bundled module');
    return null;
  }
  const moduleID = typeof params.module === 'string' ? params.module : '';
  if (modules.has(moduleID)) {
    sendError(id, CODE.invalidParams, `module ${moduleID} is already loaded`);
    return null;
  }
  // The same bundle imported again (a tool edited back to an earlier content) gets a fresh
  // instance, as a new process would give it, rather than the cached one with its state.
  // (Bun tells module instances apart by a query on a plain path, not on a file URL.)
  let url = pathToFileURL(bundle).href;
  if (loadedBundles.has(bundle)) url = (isBun ? bundle : url) + '?module=' + encodeURIComponent(moduleID);
  loadedBundles.add(bundle);
  let mod;
  try {
    mod = await import(url);
  } catch (err) {
    const loc = await locateLoadError(err, bundle);
    sendError(id, CODE.load, `${errorName(err)}: ${errorMessage(err)}`, loc);
    return null;
  }
  let found;
  try {
    found = findTool(mod);
  } catch (err) {
    // The person wrote tool.ts, not the bundle in jean2's cache: name the entry.
    sendError(id, CODE.load, errorMessage(err), { file: entryOf(bundle) || bundle });
    return null;
  }
  const m = { execute: found.execute, shape: found.shape, bundle, envNames: declaredEnv(found.definition) };
  modules.set(moduleID, m);
  const answer = {
    definition: found.definition,
    shape: found.shape,
    runtime: { name: isBun ? 'bun' : 'node', version: isBun ? globalThis.Bun.version : process.versions.node },
  };
  const warnings = definitionWarnings(found.definition);
  if (warnings.length > 0) answer.warnings = warnings;
  sendResult(id, JSON.stringify(answer));
  return m;
}

// unload forgets a module no call will use again; calls still running on it finish.
function unload(params) {
  const moduleID = params && typeof params.module === 'string' ? params.module : undefined;
  if (moduleID === undefined) return;
  const m = modules.get(moduleID);
  modules.delete(moduleID);
  if (m && m === defaultModule) defaultModule = null;
}

const JX_FIELDS = ['title', 'outputSchema', 'timeout', 'env', 'capabilities', 'interactive', 'strict', 'annotations', 'permissions'];

// findTool recognises the two module shapes and says precisely what is missing otherwise.
function findTool(mod) {
  const names = Object.keys(mod);
  let def = mod.definition;
  let exec = mod.execute;
  const dflt = mod.default;
  // A CommonJS module seen through ESM puts its exports under default.
  if (def === undefined && exec === undefined && isObject(dflt) && 'definition' in dflt && 'execute' in dflt) {
    def = dflt.definition;
    exec = dflt.execute;
  }
  if (def !== undefined || exec !== undefined) {
    if (!isObject(def)) {
      throw new Error('the module exports `execute` but no `definition` object: export const definition = { name, description, inputSchema }');
    }
    if (typeof exec !== 'function') {
      throw new Error('the module exports `definition` but no `execute` function: export async function execute(input, ctx) { … }');
    }
    return { shape: 'jean2', definition: plainDefinition(def, 'definition'), execute: exec };
  }
  const jx = isObject(mod.tool) ? mod.tool : isObject(dflt) ? dflt : undefined;
  if (jx) {
    const what = isObject(mod.tool) ? 'the `tool` export' : 'the default export';
    const missing = [];
    if (typeof jx.name !== 'string' || !jx.name) missing.push('name');
    if (typeof jx.description !== 'string') missing.push('description');
    if (!isObject(jx.parameters)) missing.push('parameters (a JSON Schema object)');
    if (typeof jx.execute !== 'function') missing.push('execute(args, ctx)');
    if (missing.length > 0) {
      throw new Error(`${what} is not a tool definition: it lacks ${missing.join(', ')}; build it with createToolDefinition({ name, description, parameters, execute })`);
    }
    const d = { name: jx.name, description: jx.description, inputSchema: jx.parameters };
    for (const f of JX_FIELDS) if (jx[f] !== undefined) d[f] = jx[f];
    return { shape: 'jx', definition: plainDefinition(d, what), execute: jx.execute.bind(jx) };
  }
  const found = names.length > 0 ? `it exports ${names.map((n) => '`' + n + '`').join(', ')}` : 'it exports nothing';
  throw new Error(
    `the module is not a tool: ${found}. Export \`definition\` and \`execute\` (jean2), or a default export made with createToolDefinition({ name, description, parameters, execute }) (Jx)`,
  );
}

// The fields a definition may have (tool.Definition), and those of its nested objects.
const DEFINITION_FIELDS = {
  '': ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'timeout', 'env', 'capabilities', 'interactive', 'strict', 'annotations', 'permissions'],
  annotations: ['title', 'readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'],
  permissions: ['read', 'write', 'childProcess', 'network', 'memoryMB'],
};

// definitionWarnings names the fields of a definition no definition has (a misspelling
// such as "timout", which would otherwise be dropped without a word), with the field meant.
function definitionWarnings(def) {
  const out = [];
  for (const [where, known] of Object.entries(DEFINITION_FIELDS)) {
    const obj = where === '' ? def : def?.[where];
    if (!isObject(obj)) continue;
    for (const k of Object.keys(obj)) {
      if (known.includes(k)) continue;
      const path = where === '' ? `definition.${k}` : `definition.${where}.${k}`;
      const near = nearest(k, known);
      out.push(`${path}: "${k}" is not a definition field and is ignored${near ? `; did you mean "${near}"?` : ''}`);
    }
  }
  return out;
}

function nearest(word, candidates) {
  let best = '';
  let bestD = 3;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

function editDistance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

function plainDefinition(def, what) {
  let json;
  try {
    json = JSON.stringify(def);
  } catch (err) {
    throw new Error(`${what} cannot be serialized to JSON: ${err.message}`);
  }
  return JSON.parse(json);
}

function isObject(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && !Array.isArray(v);
}

// ---------------------------------------------------------------------------------------
// Where did loading fail? Node maps stacks through the bundle's inline source map itself
// (--enable-source-maps); Bun does not for plain JavaScript files, so the map is read here.

async function locateLoadError(err, bundle) {
  const stack = typeof err?.stack === 'string' ? err.stack : '';
  const data = { stack: stack || `${errorName(err)}: ${errorMessage(err)}` };
  // Bun reports syntax errors as BuildMessages with a position.
  const msgs = Array.isArray(err?.errors) ? err.errors : err?.position ? [err] : [];
  for (const m of msgs) {
    const p = m?.position;
    if (p && typeof p.file === 'string' && p.line > 0) {
      return { ...data, ...mapLocation(p.file, p.line, (p.column ?? 0) + 0, bundle) };
    }
  }
  for (const frame of stackFrames(stack)) {
    return { ...data, ...mapLocation(frame.file, frame.line, frame.column, bundle) };
  }
  // Node keeps a syntax error's location out of the stack; `node --check` prints it.
  if (!isBun && errorName(err) === 'SyntaxError') {
    const loc = await checkSyntax(bundle);
    if (loc) return { ...data, ...mapLocation(loc.file, loc.line, loc.column, bundle) };
  }
  return { ...data, file: bundle };
}

const FRAME = /^\s*at (?:.*? \()?((?:file:\/\/)?\/[^()]*?):(\d+):(\d+)\)?\s*$/;

function* stackFrames(stack) {
  for (const line of stack.split('\n')) {
    const m = FRAME.exec(line);
    if (!m) continue;
    let file = m[1].replace(/\?[^/]*$/, ''); // the query of a module loaded again
    if (file.startsWith('file://')) {
      try {
        file = fileURLToPath(file);
      } catch {
        continue;
      }
    }
    if (file === SELF) continue;
    yield { file, line: Number(m[2]), column: Number(m[3]) };
  }
}

async function checkSyntax(bundle) {
  try {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['--check', bundle], { env: {}, encoding: 'utf8', timeout: 10000 });
    const lines = String(r.stderr || '').split('\n');
    const m = /^(\/.*):(\d+)$/.exec(lines[0] || '');
    if (!m) return null;
    const caret = lines[2] || '';
    const col = caret.indexOf('^');
    return { file: m[1], line: Number(m[2]), column: col >= 0 ? col + 1 : 0 };
  } catch {
    return null;
  }
}

const sourceMaps = new Map(); // bundle → its parsed inline source map, or null

function mapLocation(file, line, column, bundle) {
  if (file !== bundle) return { file, line, column };
  if (!sourceMaps.has(bundle)) sourceMaps.set(bundle, readInlineSourceMap(bundle));
  const sourceMap = sourceMaps.get(bundle);
  if (!sourceMap) return { file, line, column };
  const hit = sourceMap.lookup(line, column);
  return hit || { file, line, column };
}

// entryOf finds the tool's entry file among the bundle's sources: esbuild lists a module
// after those it imports, so the entry is the last one of the tool's own (not under
// node_modules).
function entryOf(bundle) {
  if (!sourceMaps.has(bundle)) sourceMaps.set(bundle, readInlineSourceMap(bundle));
  const sm = sourceMaps.get(bundle);
  if (!sm) return '';
  for (let i = sm.sources.length - 1; i >= 0; i--) {
    const rel = toolRelative(sm.sources[i]);
    if (rel !== null && !rel.startsWith('node_modules/')) return sm.sources[i];
  }
  return '';
}

function readInlineSourceMap(file) {
  try {
    const text = fs.readFileSync(file, 'utf8');
    const at = text.lastIndexOf('//# sourceMappingURL=data:');
    if (at < 0) return null;
    const url = text.slice(at + '//# sourceMappingURL='.length).split('\n')[0].trim();
    const comma = url.indexOf(',');
    const meta = url.slice(0, comma);
    const payload = url.slice(comma + 1);
    const json = meta.endsWith(';base64') ? Buffer.from(payload, 'base64').toString('utf8') : decodeURIComponent(payload);
    return parseSourceMap(JSON.parse(json), file);
  } catch {
    return null;
  }
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

// parseSourceMap decodes a version 3 source map into per-line segments
// [generatedColumn, sourceIndex, sourceLine, sourceColumn] (all 0-based).
function parseSourceMap(map, file) {
  if (!map || map.version !== 3 || typeof map.mappings !== 'string') return null;
  const root = typeof map.sourceRoot === 'string' ? map.sourceRoot : '';
  const sources = (map.sources || []).map((s) => {
    let p = root && !String(s).startsWith('/') ? root.replace(/\/?$/, '/') + s : String(s);
    if (p.startsWith('file://')) p = fileURLToPath(p);
    if (!p.startsWith('/')) p = new URL(p, pathToFileURL(file)).pathname;
    // A root with relative sources gives ".." inside the path: the tool's files are named
    // by their plain path.
    return fileURLToPath(pathToFileURL(p));
  });
  const lines = [];
  let src = 0;
  let srcLine = 0;
  let srcCol = 0;
  for (const lineText of map.mappings.split(';')) {
    const segs = [];
    let genCol = 0;
    for (const seg of lineText.split(',')) {
      if (!seg) continue;
      const v = decodeVLQ(seg);
      genCol += v[0];
      if (v.length >= 4) {
        src += v[1];
        srcLine += v[2];
        srcCol += v[3];
        segs.push([genCol, src, srcLine, srcCol]);
      }
    }
    lines.push(segs);
  }
  return {
    sources,
    lookup(line, column) {
      const segs = lines[line - 1];
      if (!segs || segs.length === 0) return null;
      let best = segs[0];
      for (const s of segs) {
        if (s[0] <= column - 1) best = s;
        else break;
      }
      const source = sources[best[1]];
      if (!source) return null;
      return { file: source, line: best[2] + 1, column: best[3] + 1 };
    },
  };
}

function decodeVLQ(s) {
  const out = [];
  let value = 0;
  let shift = 0;
  for (const ch of s) {
    const digit = B64.indexOf(ch);
    if (digit < 0) break;
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      out.push(value & 1 ? -(value >> 1) : value >> 1);
      value = 0;
      shift = 0;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Calls.

const calls = new Map(); // callId → Call

class Call {
  constructor(rpcID, callId, cc) {
    this.rpcID = rpcID;
    this.id = callId;
    this.cc = cc;
    // The AbortController is made when the tool first looks at its signal: most calls never
    // do, and a controller is among the costliest things a call would otherwise allocate.
    this.controller = null;
    this.abortReason = undefined;
    this.envNames = null; // the variables the tool declares (declaredEnv)
  }
  get signal() {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }
  abort(reason) {
    const err = new DOMException(reason, 'AbortError');
    if (this.controller === null) {
      if (this.abortReason === undefined) this.abortReason = err;
    } else if (!this.controller.signal.aborted) {
      this.controller.abort(err);
    }
  }
}

async function execute(id, params) {
  if (!initializing) {
    sendError(id, CODE.invalidRequest, 'execute before initialize: the tool is not loaded');
    return;
  }
  if (!params || typeof params !== 'object' || typeof params.callId !== 'string' || !params.callId) {
    sendError(id, CODE.invalidParams, 'execute needs params {callId, input, context}');
    return;
  }
  const tool = typeof params.module === 'string' ? modules.get(params.module) : defaultModule;
  if (!tool) {
    sendError(id, CODE.invalidParams, `execute: module ${JSON.stringify(params.module ?? '')} is not loaded in this worker`);
    return;
  }
  if (crashing || exiting) {
    // The host retires a worker as soon as it learns it is going; a call that crossed that
    // news on the wire was never started, and the host may send it elsewhere.
    sendError(id, CODE.internal, 'the worker is stopping and did not start this call', { workerExiting: true, notStarted: true });
    return;
  }
  if (calls.has(params.callId)) {
    sendError(id, CODE.invalidParams, `call ${params.callId} is already running on this worker`);
    return;
  }
  const call = new Call(id, params.callId, isObject(params.context) ? params.context : {});
  call.envNames = tool.envNames;
  calls.set(call.id, call);
  let result;
  try {
    result = await tool.execute(params.input ?? {}, new ToolContext(call));
  } catch (err) {
    if (isProtocolError(err)) {
      // Thrown on purpose (@jean2/sdk's ProtocolError): no stack to report; the host checks
      // the code and message.
      result = { success: false, error: errorMessage(err), protocolError: protocolErrorOf(err) };
    } else {
      if (sandboxed) explainError(err);
      result = { success: false, error: errorMessage(err) };
      reportThrow(call.id, err, tool.bundle);
    }
  } finally {
    calls.delete(call.id);
  }
  if (crashing) return;
  if (result !== null && typeof result === 'object') reportLossy(call.id, result);
  let json;
  try {
    json = JSON.stringify(result);
    if (json === undefined) json = 'null';
  } catch (err) {
    json = JSON.stringify({ success: false, error: `tool result cannot be serialized: ${err.message}` });
  }
  sendResult(id, json);
}

// reportLossy warns about values of a result that JSON cannot carry and JSON.stringify
// turns silently into {} (Map, Set) or leaves out (functions, symbols, undefined in an
// object): the author sees the warning where the model would only see something missing.
// It looks at the first nodes only, so a large result costs no more than a small one.
const LOSSY_NODES = 1000;

function reportLossy(callId, result) {
  const found = [];
  const keys = []; // the path to the value being looked at; a string is made only for a find
  let budget = LOSSY_NODES;
  const at = () => {
    let p = '';
    for (const k of keys) {
      if (typeof k === 'number') p += `[${k}]`;
      else if (/^[A-Za-z_$][\w$]*$/.test(k)) p += p === '' ? k : `.${k}`;
      else p += `[${JSON.stringify(k)}]`;
    }
    return p;
  };
  const walk = (v, depth) => {
    if (--budget < 0 || found.length >= 5 || depth > 32) return;
    if (v === null || (typeof v !== 'object' && typeof v !== 'function' && typeof v !== 'symbol')) return;
    if (v instanceof Map) return void found.push(`${at()} is a Map, which JSON sends as {}: convert it, e.g. Object.fromEntries(map)`);
    if (v instanceof Set) return void found.push(`${at()} is a Set, which JSON sends as {}: convert it, e.g. [...set]`);
    if (typeof v === 'function') return void found.push(`${at()} is a function, which JSON leaves out`);
    if (typeof v === 'symbol') return void found.push(`${at()} is a symbol, which JSON leaves out`);
    if (typeof v.toJSON === 'function' || ArrayBuffer.isView(v)) return;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length && budget > 0; i++) {
        keys.push(i);
        walk(v[i], depth + 1);
        keys.pop();
      }
      return;
    }
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      keys.push(k);
      walk(v[k], depth + 1);
      keys.pop();
    }
  };
  walk(result, 0);
  for (const msg of found) log(callId, 'warn', `execute returned a value JSON cannot carry: ${msg}`);
}

// reportThrow logs a thrown error with its stack mapped to the tool's own files
// (tool.ts:LINE:COL): the person reading the log or `tools run`'s stderr learns where; the
// model gets the message alone, in the result.
function reportThrow(callId, err, bundle) {
  const stack = toolStack(err, bundle);
  const top = stack.frames.find((f) => !f.file.startsWith('node_modules/')) || stack.frames[0];
  const where = top ? ` at ${top.file}:${top.line}:${top.column}` : '';
  const data = { stack: stack.text };
  if (top) Object.assign(data, { file: top.file, line: top.line, column: top.column });
  try {
    log(callId, 'error', `threw ${errorName(err)}: ${errorMessage(err)}${where}`, data);
  } catch {}
}

// toolStack rewrites an error's stack so its frames name the tool's files relative to its
// folder, mapped through the bundle's source map (Node has mapped them already when it runs
// with --enable-source-maps; Bun has not). The worker's own frames and the runtime's are
// left out.
function toolStack(err, bundle) {
  const raw = typeof err?.stack === 'string' ? err.stack : '';
  const head = `${errorName(err)}: ${errorMessage(err)}`;
  const frames = [];
  const lines = [head];
  for (const line of raw.split('\n')) {
    const m = STACK_LINE.exec(line);
    if (!m) continue;
    let file = m[2].replace(/\?[^/]*$/, '');
    if (file.startsWith('file://')) {
      try {
        file = fileURLToPath(file);
      } catch {
        continue;
      }
    }
    if (file === SELF || !file.startsWith('/')) continue;
    const loc = mapLocation(file, Number(m[3]), Number(m[4]), bundle);
    const rel = toolRelative(loc.file);
    if (rel === null) continue;
    const fn = m[1] ? m[1].trim() : '';
    frames.push({ file: rel, line: loc.line, column: loc.column });
    lines.push(`    at ${fn ? fn + ' (' : ''}${rel}:${loc.line}:${loc.column}${fn ? ')' : ''}`);
  }
  return { text: lines.join('\n'), frames };
}

const STACK_LINE = /^\s*at (?:(.*?) \()?((?:file:\/\/)?\/[^()]*?):(\d+):(\d+)\)?\s*$/;

// toolRelative names a file of the tool's folder relative to it; null for anything else
// (the bundle itself when it has no map, the runtime).
function toolRelative(file) {
  for (const d of toolDirs) {
    if (within(file, d)) return file.slice(d.length + 1);
  }
  return null;
}

// ToolContext is what execute receives. Its members are own properties, except abortSignal
// and its alias signal: accessors on the prototype that make the call's AbortController on
// first use. Making one for every call was by far the largest cost of a trivial call, and
// accessors on the object itself would cost almost as much. A spread copy ({...ctx}) does
// not carry them: hand on ctx itself, or copy the signal explicitly.
class ToolContext {
  #call;
  constructor(call) {
    this.#call = call;
    const cc = call.cc;
    const callId = call.id;
    const workspace = typeof cc.workspacePath === 'string' ? cc.workspacePath : '';
    const tempDir = typeof cc.tempDir === 'string' ? cc.tempDir : '';
    const vars = isObject(cc.env) ? cc.env : {};
    this.sessionId = typeof cc.sessionId === 'string' ? cc.sessionId : '';
    this.workspacePath = workspace;
    this.workspaceId = typeof cc.workspaceId === 'string' && cc.workspaceId ? cc.workspaceId : undefined;
    this.callId = callId;
    this.allowedPaths = Array.isArray(cc.allowedPaths) ? cc.allowedPaths.slice() : [];
    this.fs = makeFS(callId, workspace, tempDir);
    this.llm = {
      generateText: (req) => request('llm.generateText', { callId, request: llmRequest(req) }),
      generateStructured: (req) => request('llm.generateStructured', { callId, request: llmRequest(req) }),
    };
    this.ask = (ask) => request('ask', { callId, ask });
    const declared = call.envNames;
    this.env = {
      get: (key) => {
        if (Object.hasOwn(vars, key)) return String(vars[key]);
        if (declared && !declared.has(String(key))) undeclaredEnv(callId, key);
        return undefined;
      },
      require: (key) => {
        if (Object.hasOwn(vars, key)) return String(vars[key]);
        if (declared && !declared.has(String(key))) {
          throw new Error(`Environment variable ${key} is not declared: a tool sees only the variables its definition declares (env: [${JSON.stringify(String(key))}])`);
        }
        throw new Error(`Required environment variable not set: ${key}`);
      },
    };
    this.logger = {
      debug: (message, data) => log(callId, 'debug', message, data),
      info: (message, data) => log(callId, 'info', message, data),
      warn: (message, data) => log(callId, 'warn', message, data),
      error: (message, data) => log(callId, 'error', message, data),
    };
    this.fetch = (input, init) => globalThis.fetch(input, init && init.signal ? init : { ...init, signal: call.signal });
    this.resolvePath = (p) => resolvePath(p, workspace);
    this.isWithinWorkspace = (p) => insideAny(resolvePath(p, workspace), [workspace, ...this.allowedPaths]);
    this.isSensitivePath = (p) => isSensitive(resolvePath(p, workspace));
    this.isBlockedPath = (p) => scopeBlocked(resolvePath(p, workspace), [workspace, ...this.allowedPaths, tempDir]);
    this.ledger = {
      record: (change) => {
        const c = isObject(change) ? change : {};
        const params = { callId, path: String(c.path ?? ''), tool: String(c.tool ?? ''), disk: !!c.disk, ok: !!c.ok };
        if (c.error !== undefined && c.error !== null) params.error = String(c.error);
        notify('ledger.record', params);
      },
    };
    this.session = {
      get: (key) => request('session.get', { callId, key: String(key) }),
      set: async (key, value) => {
        await request('session.set', { callId, key: String(key), value: value === undefined ? null : value });
      },
    };
    this.progress = (event) => {
      const e = typeof event === 'string' ? { message: event } : isObject(event) ? event : {};
      const params = { callId };
      if (e.message !== undefined) params.message = String(e.message);
      if (typeof e.current === 'number') params.current = e.current;
      if (typeof e.total === 'number') params.total = e.total;
      if (e.data !== undefined) params.data = e.data;
      sendNotification('progress', params);
    };
    // Both answer true once the host made the change, as jean2's do (its git-worktree
    // reports "no workspace to register path" on anything falsy); a refusal throws.
    this.addWorkspacePath = async (p) => {
      const r = await request('workspace.addPath', { callId, path: pathArg(p, 'addWorkspacePath') });
      if (r && Array.isArray(r.allowedPaths)) this.allowedPaths = r.allowedPaths.slice();
      return true;
    };
    this.removeWorkspacePath = async (p) => {
      const r = await request('workspace.removePath', { callId, path: pathArg(p, 'removeWorkspacePath') });
      if (r && Array.isArray(r.allowedPaths)) this.allowedPaths = r.allowedPaths.slice();
      return true;
    };
  }
  get abortSignal() {
    return this.#call.signal;
  }
  set abortSignal(v) {
    Object.defineProperty(this, 'abortSignal', { value: v, writable: true, enumerable: true, configurable: true });
  }
  get signal() {
    return this.#call.signal;
  }
  set signal(v) {
    Object.defineProperty(this, 'signal', { value: v, writable: true, enumerable: true, configurable: true });
  }
}

// declaredEnv is the set of variable names a definition declares (null when it has no
// list to judge by).
function declaredEnv(def) {
  if (!def || !Array.isArray(def.env)) return def ? new Set() : null;
  return new Set(def.env.filter((x) => typeof x === 'string'));
}

// undeclaredEnv warns, once per variable, that a tool asked ctx.env for a variable it does
// not declare: undefined then says nothing of why, set or not in the server's environment.
const warnedEnv = new Set();
function undeclaredEnv(callId, key) {
  const k = String(key);
  if (warnedEnv.has(k)) return;
  warnedEnv.add(k);
  log(callId, 'warn', `ctx.env.get(${JSON.stringify(k)}) is undefined: the tool does not declare ${k} (a tool sees only the variables its definition's env lists)`);
}

function makeFS(callId, workspace, tempDir) {
  return {
    async readFile(p, encoding) {
      const enc = encodingArg(encoding);
      const text = enc === 'utf8';
      const r = await request('fs.readFile', { callId, path: pathArg(p, 'readFile'), encoding: text ? 'utf-8' : 'base64' });
      const data = r && typeof r.data === 'string' ? r.data : '';
      if (r && r.encoding === 'utf-8' && text) return data;
      const buf = Buffer.from(data, r && r.encoding === 'utf-8' ? 'utf8' : 'base64');
      if (enc) return buf.toString(enc);
      // Bytes are a plain Uint8Array, as jean2's host gives them: some libraries (pdf.js)
      // refuse a Buffer. The view shares the Buffer's memory.
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    },
    async writeFile(p, data, encoding) {
      await request('fs.writeFile', { callId, path: pathArg(p, 'writeFile'), ...dataArg(data, encoding, 'writeFile') });
    },
    async appendFile(p, data, encoding) {
      await request('fs.appendFile', { callId, path: pathArg(p, 'appendFile'), ...dataArg(data, encoding, 'appendFile') });
    },
    async readDir(p) {
      const r = await request('fs.readDir', { callId, path: pathArg(p, 'readDir') });
      return Array.isArray(r) ? r : [];
    },
    // Never throws, as Node's existsSync: a path the host will not look at (blocked,
    // protected, outside the scope) or cannot examine does not exist for the tool.
    async exists(p) {
      try {
        return !!(await request('fs.exists', { callId, path: pathArg(p, 'exists') }));
      } catch {
        return false;
      }
    },
    async stat(p) {
      const r = (await request('fs.stat', { callId, path: pathArg(p, 'stat') })) || {};
      return {
        size: Number(r.size) || 0,
        isDirectory: !!r.isDirectory,
        isFile: !!r.isFile,
        modifiedAt: new Date(Number(r.modifiedAt) || 0),
        createdAt: new Date(Number(r.createdAt) || 0),
      };
    },
    async mkdir(p, options) {
      await request('fs.mkdir', { callId, path: pathArg(p, 'mkdir'), recursive: !!options?.recursive });
    },
    async rm(p, options) {
      await request('fs.rm', { callId, path: pathArg(p, 'rm'), recursive: !!options?.recursive });
    },
    async rename(from, to) {
      await request('fs.rename', { callId, from: pathArg(from, 'rename'), to: pathArg(to, 'rename') });
    },
    resolve: (p) => resolvePath(p, workspace),
    detectLanguage,
    tempDir,
  };
}

// llmRequest turns jean2's image shapes ({data, mediaType} with bytes or base64, or an
// array of them) into the protocol's data: URLs: the first in image, the rest in images.
// A string image (a data: URL) passes as it is.
function llmRequest(req) {
  if (!isObject(req) || req.image === undefined || req.image === null || typeof req.image === 'string') return req;
  const urls = (Array.isArray(req.image) ? req.image : [req.image]).map(imageURL);
  const out = { ...req, image: urls[0] };
  if (urls.length > 1) out.images = urls.slice(1);
  return out;
}

function imageURL(img, i) {
  if (typeof img === 'string') return img;
  if (!isObject(img)) throw new TypeError(`ctx.llm: image ${i} must be {data, mediaType} or a data: URL`);
  const { data, mediaType } = img;
  if (typeof data === 'string') return data.startsWith('data:') ? data : `data:${mediaType};base64,${data}`;
  if (ArrayBuffer.isView(data) || data instanceof ArrayBuffer) return `data:${mediaType};base64,${dataArg(data, undefined, 'llm').data}`;
  throw new TypeError(`ctx.llm: image ${i}'s data must be bytes (Uint8Array) or base64 text`);
}

function pathArg(p, op) {
  if (typeof p === 'string') return p;
  if (p instanceof URL) return fileURLToPath(p);
  throw new TypeError(`ctx.fs.${op}: the path must be a string, got ${p === null ? 'null' : typeof p}`);
}

// encodingArg normalises readFile's second argument ('utf-8', {encoding}, undefined) to a
// Buffer encoding name, '' meaning bytes.
function encodingArg(encoding) {
  let enc = isObject(encoding) ? encoding.encoding : encoding;
  if (enc === undefined || enc === null || enc === '') return '';
  enc = String(enc).toLowerCase();
  if (enc === 'utf-8') enc = 'utf8';
  if (!Buffer.isEncoding(enc)) throw new TypeError(`ctx.fs.readFile: unknown encoding ${JSON.stringify(String(encoding))}`);
  return enc;
}

function dataArg(data, encoding, op) {
  if (typeof data === 'string') {
    const enc = encodingArg(encoding);
    if (enc && enc !== 'utf8') return { data: Buffer.from(data, enc).toString('base64'), encoding: 'base64' };
    return { data, encoding: 'utf-8' };
  }
  if (ArrayBuffer.isView(data)) {
    return { data: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64'), encoding: 'base64' };
  }
  if (data instanceof ArrayBuffer) return { data: Buffer.from(data).toString('base64'), encoding: 'base64' };
  throw new TypeError(`ctx.fs.${op}: data must be a string or bytes (Uint8Array, Buffer), got ${data === null ? 'null' : typeof data}`);
}

function log(callId, level, message, data) {
  const params = { callId, level, message: typeof message === 'string' ? message : describe(message) };
  if (data !== undefined) params.data = data;
  sendNotification('log', params);
}

// sendNotification sends tool-provided data; what cannot be serialized is replaced by a
// description rather than lost or thrown back at the tool.
function sendNotification(method, params) {
  try {
    notify(method, params);
  } catch (err) {
    if ('data' in params) {
      params.data = `[cannot be serialized: ${err.message}]`;
      notify(method, params);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Path rules, mirroring package policy (policy/paths.go) exactly.

function clean(p) {
  if (p === '') return '.';
  const rooted = p[0] === '/';
  const out = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(part);
  }
  const s = (rooted ? '/' : '') + out.join('/');
  return s === '' ? '.' : s;
}

function join(a, b) {
  if (a === '') return clean(b);
  if (b === '') return clean(a);
  return clean(a + '/' + b);
}

function dirname(p) {
  const i = p.lastIndexOf('/');
  if (i < 0) return '.';
  return clean(p.slice(0, i + 1));
}

function basename(p) {
  if (p === '') return '.';
  while (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  if (p === '/') return '/';
  const i = p.lastIndexOf('/');
  return i >= 0 ? p.slice(i + 1) : p;
}

function resolvePath(p, workspace) {
  if (typeof p !== 'string') throw new TypeError(`path must be a string, got ${p === null ? 'null' : typeof p}`);
  if (p === '~') p = rules.home;
  else if (p.startsWith('~/')) p = join(rules.home, p.slice(2));
  else if (!p.startsWith('/')) p = join(workspace, p);
  return clean(p);
}

const realpath = fs.realpathSync.native || fs.realpathSync;

function real(p) {
  p = clean(p);
  try {
    return realpath(p);
  } catch {}
  const tail = [];
  let cur = p;
  for (;;) {
    const parent = dirname(cur);
    tail.push(basename(cur));
    if (parent === cur) return p;
    cur = parent;
    try {
      let r = realpath(cur);
      for (let i = tail.length - 1; i >= 0; i--) r = join(r, tail[i]);
      return r;
    } catch (err) {
      // A permission error or a loop: judge the path as written.
      if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') return p;
    }
  }
}

function within(p, root) {
  if (p === root) return true;
  if (root === '/') return p.startsWith('/');
  return p.startsWith(root) && p.length > root.length && p[root.length] === '/';
}

function insideAny(p, roots) {
  const rp = real(p);
  for (const r of roots) {
    if (!r) continue;
    if (within(rp, real(r))) return true;
  }
  return false;
}

function isBlocked(p) {
  for (const cand of [clean(p), real(p)]) {
    for (const b of rules.blocked) if (within(cand, b)) return true;
  }
  return false;
}

// scopeBlocked is policy.Scope.Blocked: /root is blocked, yet a scope root below /root
// unblocks what lies inside that root.
function scopeBlocked(rp, roots) {
  if (!isBlocked(rp)) return false;
  const r = real(rp);
  for (const root of roots) {
    if (!root) continue;
    const rr = real(root);
    if (rr !== '/root' && within(rr, '/root') && within(r, rr)) return false;
  }
  return true;
}

function isSensitive(p) {
  const lp = p.toLowerCase();
  return rules.sensitive.some((s) => lp.includes(s));
}

function detectLanguage(p) {
  p = String(p);
  const base = basename(p).toLowerCase();
  if (base === 'dockerfile') return 'dockerfile';
  if (base === 'makefile') return 'makefile';
  const dot = p.lastIndexOf('.');
  const ext = dot > p.lastIndexOf('/') ? p.slice(dot).toLowerCase() : '';
  const lang = ext && Object.hasOwn(rules.languages, ext) ? rules.languages[ext] : undefined;
  return typeof lang === 'string' ? lang : 'text';
}

// ---------------------------------------------------------------------------------------
// Shutdown and failures.

const realExit = process.exit.bind(process);
let exiting = false;
let crashing = false;

// A tool that calls process.exit() takes the worker down with every call on it. Say so on
// stderr, which the host keeps and quotes in the error the calls fail with.
process.exit = (code) => {
  if (!exiting) {
    try {
      process.stderr.write(`jean2 worker: the tool called process.exit(${code === undefined ? '' : code})\n`);
    } catch {}
  }
  realExit(code);
};

async function shutdown(id) {
  exiting = true;
  for (const call of calls.values()) call.abort('The worker is shutting down');
  sendResult(id, 'null');
  await flushOut();
  realExit(0);
}

// An uncaught exception or unhandled rejection cannot be pinned on one call safely (it may
// come from a timer or a shared module), so every call in flight fails with it and the
// worker exits; the host starts a fresh one for the next call.
function crash(kind, err) {
  if (crashing) return;
  crashing = true;
  if (sandboxed) explainError(err);
  const message = `${kind} in the tool: ${errorName(err)}: ${errorMessage(err)}`;
  const stack = typeof err?.stack === 'string' ? err.stack : undefined;
  try {
    process.stderr.write(`jean2 worker: ${message}\n${stack ?? ''}\n`);
  } catch {}
  for (const call of calls.values()) {
    sendError(call.rpcID, CODE.internal, `${message} (the worker stopped; every call running on it failed)`, { stack, workerExiting: true });
  }
  const timer = setTimeout(() => realExit(70), 1000);
  timer.unref?.();
  flushOut().then(
    () => realExit(70),
    () => realExit(70),
  );
}

process.on('uncaughtException', (err) => crash('uncaught exception', err));
process.on('unhandledRejection', (reason) => crash('unhandled promise rejection', reason));

// The mark @jean2/sdk's ProtocolError carries (a registered symbol, so any copy of the SDK
// a bundle holds makes errors the worker knows).
const PROTOCOL_ERROR = Symbol.for('jean2.protocolError');

function isProtocolError(err) {
  return err !== null && typeof err === 'object' && err[PROTOCOL_ERROR] === true;
}

function protocolErrorOf(err) {
  const pe = { code: err.code, message: errorMessage(err) };
  if (err.data !== undefined) pe.data = err.data;
  return pe;
}

function errorMessage(err) {
  if (err && typeof err.message === 'string') return err.message;
  if (typeof err === 'string') return err;
  return describe(err);
}

function errorName(err) {
  return err && typeof err.name === 'string' && err.name ? err.name : 'Error';
}

function describe(v) {
  if (typeof v === 'string') return v;
  try {
    const s = JSON.stringify(v);
    if (s !== undefined) return s;
  } catch {}
  return String(v);
}

// ---------------------------------------------------------------------------------------
// Refusals. In a confined worker, an EACCES or EPERM from the tool's own node:fs or
// node:child_process use is most often the sandbox refusing what the tool did not declare:
// Landlock or seccomp on Linux, which Node reports as a bare "permission denied" (EACCES),
// or Seatbelt on macOS, which answers every refusal with EPERM, "operation not permitted".
// Under the view of the machine a worker gets on Linux (sandbox/view_linux.go), a write
// outside its writable places fails with EROFS, "read-only file system": explained too.
// The error the tool gets says so, and which declaration would allow it. The wrappers only
// look at an error once it happened: a call that succeeds pays one extra function call.

let sandboxed = false;
// sandboxName is what confines this worker, from initialize's rules.sandbox: 'landlock'
// (Linux) or 'seatbelt' (macOS).
let sandboxName = '';

const WRITE_CALLS = new Set([
  'writeFile', 'appendFile', 'mkdir', 'mkdtemp', 'rm', 'rmdir', 'unlink', 'rename', 'copyFile', 'cp',
  'symlink', 'link', 'truncate', 'chmod', 'chown', 'lchown', 'lchmod', 'utimes', 'lutimes', 'createWriteStream',
]);
const PATH_CALLS = [
  'open', 'readFile', 'readdir', 'opendir', 'stat', 'lstat', 'access', 'realpath', 'readlink', 'createReadStream',
  'exists', 'statfs', 'watch', ...WRITE_CALLS,
];

// writes reports whether fs call name with these arguments changes the file system.
function writes(name, args) {
  if (WRITE_CALLS.has(name)) return true;
  if (name !== 'open') return false;
  const flags = args[1];
  if (typeof flags === 'number') return (flags & (fs.constants.O_WRONLY | fs.constants.O_RDWR | fs.constants.O_CREAT)) !== 0;
  return typeof flags === 'string' && /[wa+]/.test(flags);
}

function pathOf(v) {
  if (typeof v === 'string') return v;
  if (v instanceof URL && v.protocol === 'file:') return fileURLToPath(v);
  if (Buffer.isBuffer(v)) return v.toString();
  return '';
}

// modeDenies reports whether the file's own mode bits (or, for a file that does not exist,
// its folder's) deny the access to this process: then the refusal is not the sandbox's.
// stat is not refused by Landlock, so this can tell.
function modeDenies(p, write) {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  if (uid === 0) return false;
  let st;
  try {
    st = fs.statSync(p);
  } catch {
    try {
      st = fs.statSync(dirname(p));
      write = true;
    } catch {
      return false;
    }
  }
  const bits = write ? 0o2 : 0o4;
  let mode = st.mode & 0o7;
  if (st.uid === uid) mode = (st.mode >> 6) & 0o7;
  else if (typeof process.getgroups === 'function' && process.getgroups().includes(st.gid)) mode = (st.mode >> 3) & 0o7;
  return (mode & bits) === 0;
}

// systemEPERM reports whether an EPERM is the system's own answer rather than the
// sandbox's: unlink of a folder (macOS says EPERM where Linux says EISDIR), and a change of
// the owner, mode or times of a file this user does not own.
function systemEPERM(syscall, target) {
  let st;
  try {
    st = fs.lstatSync(target);
  } catch {
    return false;
  }
  if (syscall === 'unlink') return st.isDirectory();
  if (/^(l|f)?(chown|chmod|utime)/.test(syscall)) {
    const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
    return uid !== 0 && st.uid !== uid;
  }
  return false;
}

// hint is what an explained refusal adds: who refused, why, and the declaration (a
// permissions entry) that would allow it. Under Seatbelt it says that macOS words the
// refusal "operation not permitted", which a tool's author would not take for the sandbox's.
function hint(why, decl, extra, grant) {
  const approve = toolName ? `jean2 tools approve ${toolName}` : 'jean2 tools approve NAME';
  const who = sandboxName === 'seatbelt' ? '; macOS\'s Seatbelt, which confines the tool, says "operation not permitted" for it' : '';
  // A grant is offered only as it can be quoted and read: a backtick would end the quote
  // early (naming a wider path), controls and text-direction marks would show another path
  // than the one granted (sandbox.ParseGrant refuses them).
  const offer = UNQUOTABLE.test(grant) ? '' : `a person grants it to this version with \`${approve} --grant ${grant}\`, or `;
  return ` (refused by jean2's sandbox: ${why}${who}; to allow it, ${offer}the tool declares ${decl} in its permissions (definition.permissions, or "jean2": {"permissions": …} in package.json) and a person approves it with \`${approve}\`${extra})`;
}

const UNQUOTABLE = /[`\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufffd]/;

// absolute is the path a tool's own fs call meant: a relative one is its process's
// working folder's (the tool's folder), which a grant must name in full.
function absolute(p) {
  if (!p || p.startsWith('/')) return p ? clean(p) : '';
  try {
    return clean(join(process.cwd(), p));
  } catch {
    return '';
  }
}

// explainError adds who refused, once, to an EACCES/EPERM/EROFS error (of an fs call name on path p
// when known); other errors are left alone.
function explainError(err, name, p, write) {
  if (!err || typeof err !== 'object' || err.jean2Sandbox || err.jean2Host) return err;
  const code = err.code;
  if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') return err;
  const syscall = typeof err.syscall === 'string' ? err.syscall : '';
  let note;
  let what;
  if (syscall.startsWith('spawn') || syscall.startsWith('posix_spawn') || name === 'spawn') {
    note = hint("a tool's own code starts no process unless it declares so", '{"childProcess": true}', '', 'childProcess');
    what = `starting a process (${syscall || 'spawn'})`;
  } else {
    const target = absolute(p || (typeof err.path === 'string' ? err.path : ''));
    if (!target) return err;
    if (code === 'EROFS') write = true;
    if (write === undefined) write = /^(open|write|mkdir|rmdir|unlink|rename|copyfile|symlink|link|chmod|chown|utime|ftruncate|truncate)/.test(syscall) && syscall !== 'open';
    if (modeDenies(target, write)) return err;
    if (code === 'EPERM' && systemEPERM(syscall, target)) return err;
    const decl = JSON.stringify({ [write ? 'write' : 'read']: [target] });
    what = `${write ? 'writing' : 'reading'} ${target}`;
    note = write
      ? hint("a tool's own code writes only in the workspace, its allowed paths and the session's folder", decl, ', or write through ctx.fs, which asks the person', `write=${target}`)
      : hint("a tool's own code reads only the system, its own folder, the workspace, its allowed paths and the session's folder", decl, ', or read through ctx.fs, which asks the person', `read=${target}`);
  }
  // One line on stderr for the log (and `jean2 tools test`'s "refused"): the tool may catch
  // the error and say nothing of it.
  try {
    process.stderr.write(`jean2 sandbox refused: ${what} (${code}${sandboxName === 'seatbelt' ? ', Seatbelt' : ''})\n`);
  } catch {}
  try {
    Object.defineProperty(err, 'jean2Sandbox', { value: true });
    err.message += note;
    if (typeof err.stack === 'string') {
      const nl = err.stack.indexOf('\n');
      err.stack = `${err.name || 'Error'}: ${err.message}${nl >= 0 ? err.stack.slice(nl) : ''}`;
    }
  } catch {}
  return err;
}

function wrapFS(target, name, kind) {
  const orig = target[name];
  if (typeof orig !== 'function' || orig.jean2Wrapped) return;
  let wrapped;
  if (kind === 'promise') {
    wrapped = function (...args) {
      return orig.apply(this, args).catch((err) => {
        throw explainError(err, name, pathOf(args[0]), writes(name, args));
      });
    };
  } else if (kind === 'sync') {
    const base = name.slice(0, -4);
    wrapped = function (...args) {
      try {
        return orig.apply(this, args);
      } catch (err) {
        throw explainError(err, base, pathOf(args[0]), writes(base, args));
      }
    };
  } else {
    // Callback style (or a stream): the callback's error, and an error event, are explained.
    wrapped = function (...args) {
      const last = args.length - 1;
      if (last >= 0 && typeof args[last] === 'function') {
        const cb = args[last];
        args[last] = function (err, ...rest) {
          if (err) explainError(err, name, pathOf(args[0]), writes(name, args));
          return cb.call(this, err, ...rest);
        };
      }
      const out = orig.apply(this, args);
      if (out && typeof out.emit === 'function') explainEvents(out, name, pathOf(args[0]), writes(name, args));
      return out;
    };
  }
  Object.defineProperty(wrapped, 'name', { value: orig.name });
  wrapped.jean2Wrapped = true;
  try {
    target[name] = wrapped;
  } catch {} // a runtime whose module object is frozen keeps its own: errors stay as they are
}

// explainEvents explains the error events of an emitter (a stream, a child process) without
// adding a listener: an error no one listens for still goes unhandled, as it would have.
function explainEvents(emitter, name, p, write) {
  const emit = emitter.emit;
  emitter.emit = function (event, ...args) {
    if (event === 'error') explainError(args[0], name, p, write);
    return emit.call(this, event, ...args);
  };
}

function setExport(obj, name, fn) {
  try {
    obj[name] = fn;
  } catch {}
}

function explainRefusals() {
  sandboxed = true;
  for (const name of PATH_CALLS) {
    wrapFS(fs, name, name.startsWith('create') ? 'stream' : 'callback');
    wrapFS(fs, name + 'Sync', 'sync');
    wrapFS(fs.promises, name, 'promise');
  }
  for (const name of ['spawn', 'fork', 'exec', 'execFile']) {
    const orig = childProcess[name];
    if (typeof orig !== 'function') continue;
    setExport(childProcess, name, function (...args) {
      let cp;
      try {
        cp = orig.apply(this, args);
      } catch (err) {
        throw explainError(err, 'spawn');
      }
      if (cp && typeof cp.emit === 'function') explainEvents(cp, 'spawn');
      return cp;
    });
  }
  for (const name of ['spawnSync', 'execSync', 'execFileSync']) {
    const orig = childProcess[name];
    if (typeof orig !== 'function') continue;
    setExport(childProcess, name, function (...args) {
      let out;
      try {
        out = orig.apply(this, args);
      } catch (err) {
        throw explainError(err, 'spawn');
      }
      if (out && out.error) explainError(out.error, 'spawn');
      return out;
    });
  }
  // Bun's own Bun.spawn and Bun.spawnSync (the original Bun-based jean2's tools use them).
  if (isBun) {
    for (const name of ['spawn', 'spawnSync']) {
      const orig = globalThis.Bun[name];
      if (typeof orig !== 'function') continue;
      setExport(globalThis.Bun, name, function (...args) {
        try {
          return orig.apply(this, args);
        } catch (err) {
          throw explainError(err, 'spawn');
        }
      });
    }
  }
  // ES module imports of node:fs and node:child_process read these objects' functions.
  try {
    nodeModule.syncBuiltinESMExports?.();
  } catch {}
}

// ---------------------------------------------------------------------------------------
// Network. A confined worker has no network of its own: the only address it reaches is the
// host's egress proxy on its loopback (JEAN2_EGRESS_PROXY, host:port), which connects only
// to what the tool declares and a person approved. Bun's fetch, curl and most HTTP clients
// follow HTTP(S)_PROXY; Node's global fetch does not, so here its dispatcher is replaced by
// one that opens every connection as a CONNECT tunnel through the proxy (TLS inside it for
// https). Bodies stream as they would directly. A refusal of the proxy becomes the error of
// the fetch, with the proxy's words (which say how to declare the host).

function installEgress() {
  const proxy = process.env.JEAN2_EGRESS_PROXY;
  if (!proxy || isBun || typeof globalThis.fetch !== 'function') return;
  const colon = proxy.lastIndexOf(':');
  const proxyHost = proxy.slice(0, colon);
  const proxyPort = Number(proxy.slice(colon + 1));
  const nativeFetch = globalThis.fetch;
  const DISPATCHER = Symbol.for('undici.globalDispatcher.1');
  let ready;

  // Node's bundled undici is loaded on the first fetch and then sets its global dispatcher
  // (an Agent); an Agent of the same class with our connector takes its place.
  async function install() {
    try {
      await nativeFetch('data:,');
    } catch {}
    const Agent = globalThis[DISPATCHER]?.constructor;
    if (typeof Agent !== 'function') throw new Error('jean2 worker: cannot route fetch through the egress proxy (no undici Agent)');
    globalThis[DISPATCHER] = new Agent({ connect: tunnel });
  }

  async function tunnel(opts, callback) {
    let done = false;
    const finish = (err, sock) => {
      if (done) return;
      done = true;
      callback(err, sock);
    };
    const https = opts.protocol === 'https:';
    const port = Number(opts.port) || (https ? 443 : 80);
    const host = opts.hostname.includes(':') && !opts.hostname.startsWith('[') ? `[${opts.hostname}]` : opts.hostname;
    const authority = `${host}:${port}`;
    const { default: tls } = https ? await import('node:tls') : { default: null };
    const sock = net.connect({ host: proxyHost, port: proxyPort });
    const fail = (err) => {
      sock.destroy();
      finish(err);
    };
    sock.once('error', fail);
    sock.once('connect', () => sock.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    let head = Buffer.alloc(0);
    const onData = (chunk) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > 64 * 1024) fail(new Error(`egress proxy: oversized answer to CONNECT ${authority}`));
        return;
      }
      sock.removeListener('data', onData);
      const status = Number(head.subarray(0, end).toString('latin1').split(' ')[1]);
      if (status !== 200) {
        // The proxy closes after its answer: the body is its reason.
        let body = head.subarray(end + 4);
        sock.on('data', (c) => { body = Buffer.concat([body, c]); });
        sock.once('close', () => {
          const text = body.toString('utf8').trim() || `the egress proxy answered ${status} to CONNECT ${authority}`;
          const err = new Error(text);
          err.code = status === 403 ? 'EJEAN2NETWORK' : 'EJEAN2PROXY';
          finish(err);
        });
        return;
      }
      sock.removeListener('error', fail);
      if (!https) return finish(null, sock);
      const servername = opts.servername || (net.isIP(opts.hostname) ? undefined : opts.hostname);
      const secure = tls.connect({ socket: sock, servername, ALPNProtocols: ['http/1.1'] });
      secure.once('secureConnect', () => finish(null, secure));
      secure.once('error', (err) => { secure.destroy(); finish(err); });
    };
    sock.on('data', onData);
  }

  globalThis.fetch = async function fetch(input, init) {
    if (!ready) ready = install();
    await ready;
    try {
      return await nativeFetch(input, init);
    } catch (err) {
      // "fetch failed" says nothing; the proxy's refusal says what and how.
      const cause = err?.cause;
      if (cause && (cause.code === 'EJEAN2NETWORK' || cause.code === 'EJEAN2PROXY')) {
        throw new TypeError(cause.message, { cause });
      }
      throw err;
    }
  };
}

// Bun's fetch follows HTTP(S)_PROXY itself, and words the proxy's refusal in its own way:
// an https target as "Proxy refused to open a tunnel: 403 Forbidden" (the proxy's reason
// dropped), a plain http one as the proxy's 403 answer, handed to the tool as the server's.
// Both become the error a Node worker's fetch gives: a TypeError with the proxy's words,
// whose cause has code EJEAN2NETWORK.
function installEgressBun() {
  const proxy = process.env.JEAN2_EGRESS_PROXY;
  if (!proxy || !isBun || typeof globalThis.fetch !== 'function') return;
  const nativeFetch = globalThis.fetch;
  const refused = (text, cause) => {
    const c = Object.assign(new Error(text), { code: 'EJEAN2NETWORK' });
    if (cause) c.cause = cause;
    return new TypeError(text, { cause: c });
  };
  const wrapped = async function fetch(input, init) {
    let res;
    try {
      res = await nativeFetch(input, init);
    } catch (err) {
      const authority = /Proxy refused to open a tunnel/i.test(String(err?.message)) ? authorityOf(input) : '';
      const why = authority ? await proxyRefusal(proxy, authority) : '';
      throw why ? refused(why, err) : err;
    }
    // Only the proxy's own refusals carry the header (it drops it from servers' answers).
    if (res.status === 403 && res.headers.get('x-jean2-network-refused')) {
      throw refused((await res.text()).trim());
    }
    return res;
  };
  // Bun.fetch is fetch by another name; tools of the Bun-based jean2 may use either.
  Object.assign(wrapped, nativeFetch);
  globalThis.fetch = wrapped;
}

// authorityOf is the host:port a fetch of input connects to ('' when it cannot tell).
function authorityOf(input) {
  try {
    const u = new URL(typeof input === 'string' || input instanceof URL ? String(input) : input.url);
    const port = u.port || (u.protocol === 'https:' ? '443' : '80');
    return `${u.hostname}:${port}`;
  } catch {
    return '';
  }
}

// proxyRefusal asks the egress proxy again for authority and returns its reason for the
// refusal ('' if it now allows it or does not answer). Worker proxies put no question to a
// person (egress.Proxy.Ask is unset for them), so asking again asks no one twice.
function proxyRefusal(proxy, authority) {
  const colon = proxy.lastIndexOf(':');
  return new Promise((resolve) => {
    const sock = net.connect({ host: proxy.slice(0, colon), port: Number(proxy.slice(colon + 1)) });
    let answer = Buffer.alloc(0);
    sock.setTimeout(5000, () => sock.destroy());
    sock.once('connect', () => sock.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    sock.on('data', (c) => {
      answer = Buffer.concat([answer, c]);
      // An open tunnel (allowed after all) is closed at once; a refusal closes by itself.
      const head = answer.toString('latin1');
      if (answer.length > 64 * 1024 || (head.includes('\r\n\r\n') && head.split(' ')[1] !== '403')) sock.destroy();
    });
    sock.on('error', () => {});
    sock.once('close', () => {
      const text = answer.toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      resolve(end >= 0 && text.split(' ')[1] === '403' ? text.slice(end + 4).trim() : '');
    });
  });
}

installEgress();
installEgressBun();
setupTransport();
