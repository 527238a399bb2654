// @jean2/sdk and @jxsuite/ai/tools: the runtime helpers a tool imports. The jean2 binary
// carries this module (package sdkjs) and hands it to the bundler, so a tool never fetches
// it from a registry. The lists marked "@jean2:" below are filled in from the Go host's own
// rules when the module is rendered, so JavaScript and Go always agree on them.

/** Substrings that make a lower-cased path sensitive (policy.SensitivePatterns in Go). */
export const SENSITIVE_FILE_PATTERNS = Object.freeze(/*@jean2:sensitive*/[]);

// System directories no tool may touch (policy.BlockedRoots in Go).
const BLOCKED_ROOTS = Object.freeze(/*@jean2:blocked*/[]);

// File extension → language id (tool.Languages in Go).
const LANGUAGES = Object.freeze(/*@jean2:languages*/{});

// The detached defaults answer with the same words as Go's tool.NewContext.
const NO_ASK = 'no one can answer asks here: the call has no attached person or client';
const NO_FS = 'this call has no file system: the host gave the context none';
const NO_LLM = 'no LLM provider is configured: ctx.llm cannot be used until one is set up';
const NO_WORKSPACE = "this call's workspace cannot be changed: the host gave the context none";

// ---------------------------------------------------------------------------------------
// Paths (POSIX; the host's rules are the ones that count, these only agree with them)

/** Go's filepath.Base: the last element, trailing slashes dropped, "." for "", "/" for "/". */
function baseName(p) {
  if (p === '') return '.';
  let end = p.length;
  while (end > 0 && p[end - 1] === '/') end--;
  if (end === 0) return '/';
  const s = p.slice(0, end);
  return s.slice(s.lastIndexOf('/') + 1);
}

/** Go's filepath.Clean for absolute POSIX paths. */
function cleanAbs(p) {
  const out = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return '/' + out.join('/');
}

function homeDir() {
  const env = globalThis.process?.env;
  return (env && typeof env.HOME === 'string' && env.HOME) || '/';
}

function currentDir() {
  try {
    return globalThis.process?.cwd?.() || '/';
  } catch {
    return '/';
  }
}

function resolveAgainst(p, workspace, home) {
  p = String(p);
  if (p === '~') return cleanAbs(home);
  if (p.startsWith('~/')) return cleanAbs(home + '/' + p.slice(2));
  if (p.startsWith('/')) return cleanAbs(p);
  return cleanAbs(workspace + '/' + p);
}

function within(p, root) {
  if (p === root) return true;
  if (root === '/') return p.startsWith('/');
  return p.startsWith(root) && p.length > root.length && p[root.length] === '/';
}

function detectLanguage(p) {
  const base = baseName(String(p)).toLowerCase();
  if (base === 'dockerfile') return 'dockerfile';
  if (base === 'makefile') return 'makefile';
  // Go's filepath.Ext: the extension of the last element as written ("dir.ts/" has none).
  const s = String(p);
  const dot = s.lastIndexOf('.');
  if (dot < 0 || s.indexOf('/', dot) >= 0) return 'text';
  const ext = s.slice(dot).toLowerCase();
  return Object.prototype.hasOwnProperty.call(LANGUAGES, ext) ? LANGUAGES[ext] : 'text';
}

function errorText(err) {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

// ---------------------------------------------------------------------------------------
// Asks

function verbOf(operation) {
  switch (operation) {
    case 'read':
      return 'Reading';
    case 'write':
      return 'Writing';
    case 'edit':
      return 'Editing';
    default:
      return 'Accessing';
  }
}

/**
 * Builds the permission ask for a file access: the same ask as Go's
 * tool.CreateFilePermissionAsk.
 */
export function createFilePermissionAsk(params) {
  if (params === null || typeof params !== 'object') {
    throw new TypeError('createFilePermissionAsk: pass an object {path, operation, risk, reason?, isOutsideWorkspace?, isSensitiveFile?}');
  }
  if (typeof params.path !== 'string') {
    throw new TypeError(`createFilePermissionAsk: path must be a string, got ${typeof params.path}`);
  }
  const path = params.path;
  const base = baseName(path);
  let question = `${verbOf(params.operation)} file "${base}"`;
  if (params.isSensitiveFile) question += ' (sensitive file)';
  else if (params.isOutsideWorkspace) question += ' (outside workspace)';
  question += ' requires approval.';
  if (params.reason) question += ' ' + params.reason;
  const patterns = ['file:' + path, 'file:' + base];
  if (params.isOutsideWorkspace) patterns.push('outside-workspace');
  if (params.isSensitiveFile) patterns.push('sensitive-file');
  const duration =
    params.isSensitiveFile || params.risk === 'high' || params.risk === 'critical' ? 'session' : 'workspace';
  const ask = { type: 'permission', question };
  if (params.risk) ask.risk = params.risk;
  ask.resource = 'file';
  ask.paths = [path];
  ask.patterns = patterns;
  ask.duration = duration;
  return ask;
}

// ---------------------------------------------------------------------------------------
// Definitions and results

/**
 * Declares a Jx-shape tool. The definition comes back as it went in; the host's worker
 * recognises a default export (or an export named `tool`) with `parameters` and `execute`.
 */
export function createToolDefinition(def) {
  if (def === null || typeof def !== 'object') {
    throw new TypeError('createToolDefinition: pass an object {name, description, parameters, execute}');
  }
  if (typeof def.name !== 'string' || def.name === '') {
    throw new TypeError('createToolDefinition: name must be a non-empty string');
  }
  if (typeof def.execute !== 'function') {
    throw new TypeError(`createToolDefinition(${JSON.stringify(def.name)}): execute must be a function (args, ctx) => result`);
  }
  return def;
}

/** A successful Jx-shape result. */
export function toolSuccess(data, summary) {
  const result = { success: true, data };
  if (summary !== undefined) result.summary = summary;
  return result;
}

/** A failed result; an Error gives its message. */
export function toolError(message) {
  return { success: false, error: errorText(message) };
}

// ---------------------------------------------------------------------------------------
// Ledger, session facts, signals

/** One turn's list of changes. */
export function createLedger() {
  const list = [];
  return {
    record(entry) {
      if (entry === null || typeof entry !== 'object' || typeof entry.path !== 'string' || entry.path === '') {
        throw new TypeError('ledger.record: pass {path, tool, disk, ok, error?} with a non-empty path');
      }
      const copy = { ...entry, disk: Boolean(entry.disk), ok: Boolean(entry.ok) };
      list.push(Object.freeze(copy));
    },
    entries() {
      return list.slice();
    },
    summary() {
      const seen = new Set();
      const changed = [];
      const failed = [];
      for (const e of list) {
        if (!e.ok) {
          failed.push(e);
        } else if (!seen.has(e.path)) {
          seen.add(e.path);
          changed.push(e.path);
        }
      }
      return { changed, failed };
    },
  };
}

/** A conversation's facts. Values are JSON: what goes in is stored as a copy. */
export function createSessionFacts(initial) {
  const facts = new Map();
  const copyOf = (key, value) => {
    let text;
    try {
      text = JSON.stringify(value);
    } catch (err) {
      throw new TypeError(`session fact ${JSON.stringify(key)}: value is not JSON-serializable: ${errorText(err)}`);
    }
    if (text === undefined) {
      throw new TypeError(`session fact ${JSON.stringify(key)}: value is not JSON-serializable (got ${typeof value})`);
    }
    return JSON.parse(text);
  };
  const session = {
    get(key) {
      const k = String(key);
      return facts.has(k) ? copyOf(k, facts.get(k)) : undefined;
    },
    set(key, value) {
      const k = String(key);
      facts.set(k, copyOf(k, value));
    },
  };
  if (initial && typeof initial === 'object') {
    for (const [k, v] of Object.entries(initial)) session.set(k, v);
  }
  return session;
}

/**
 * Links a call's signal to its turn's: the call aborts when the turn does, until release()
 * unlinks it once the call settled.
 */
export function linkCallSignal(turnSignal) {
  const controller = new AbortController();
  if (!turnSignal) return { signal: controller.signal, release() {} };
  if (turnSignal.aborted) {
    controller.abort(turnSignal.reason);
    return { signal: controller.signal, release() {} };
  }
  const onAbort = () => controller.abort(turnSignal.reason);
  turnSignal.addEventListener('abort', onAbort, { once: true });
  let released = false;
  return {
    signal: controller.signal,
    release() {
      if (released) return;
      released = true;
      turnSignal.removeEventListener('abort', onAbort);
    },
  };
}

// ---------------------------------------------------------------------------------------
// Context

function rejecting(message) {
  return async () => {
    throw new Error(message);
  };
}

function envFrom(value) {
  if (value && typeof value.get === 'function' && typeof value.require === 'function') return value;
  const vars = new Map(value && typeof value === 'object' ? Object.entries(value) : []);
  return {
    get(key) {
      return vars.has(key) ? String(vars.get(key)) : undefined;
    },
    require(key) {
      if (!vars.has(key)) throw new Error(`Required environment variable not set: ${key}`);
      return String(vars.get(key));
    },
  };
}

const noop = () => {};

/**
 * Builds a call context, filling whatever `partial` leaves out with a detached default: a
 * signal that never aborts, callId "", a fresh ledger, empty session facts, a no-op
 * progress. Powers that need a host (asks, files, the model, workspace changes) reject
 * with a message that says so.
 */
export function createToolContext(partial = {}) {
  const p = partial ?? {};
  const workspacePath = typeof p.workspacePath === 'string' && p.workspacePath ? p.workspacePath : currentDir();
  const allowedPaths = Array.isArray(p.allowedPaths) ? p.allowedPaths.slice() : [];
  const home = homeDir();
  const resolvePath = (path) => resolveAgainst(path, workspacePath, home);
  const signal = p.signal ?? p.abortSignal ?? new AbortController().signal;
  const fs = p.fs ?? {
    readFile: rejecting(NO_FS),
    writeFile: rejecting(NO_FS),
    appendFile: rejecting(NO_FS),
    readDir: rejecting(NO_FS),
    exists: rejecting(NO_FS),
    stat: rejecting(NO_FS),
    mkdir: rejecting(NO_FS),
    rm: rejecting(NO_FS),
    rename: rejecting(NO_FS),
    resolve: resolvePath,
    detectLanguage,
    tempDir: globalThis.process?.env?.TMPDIR || '/tmp',
  };
  const ctx = {
    sessionId: '',
    callId: '',
    llm: { generateText: rejecting(NO_LLM), generateStructured: rejecting(NO_LLM) },
    ask: rejecting(NO_ASK),
    logger: { debug: noop, info: noop, warn: noop, error: noop },
    fetch:
      typeof globalThis.fetch === 'function'
        ? globalThis.fetch.bind(globalThis)
        : rejecting('fetch is not available in this runtime'),
    progress: noop,
    addWorkspacePath: rejecting(NO_WORKSPACE),
    removeWorkspacePath: rejecting(NO_WORKSPACE),
    ...p,
    workspacePath,
    allowedPaths,
    fs,
    env: envFrom(p.env),
    signal,
    abortSignal: signal,
    ledger: p.ledger ?? createLedger(),
    session: p.session ?? createSessionFacts(),
  };
  ctx.resolvePath ??= resolvePath;
  ctx.isWithinWorkspace ??= (path) => {
    const r = resolvePath(path);
    return [workspacePath, ...allowedPaths].some((root) => typeof root === 'string' && root !== '' && within(r, cleanAbs(root)));
  };
  ctx.isSensitivePath ??= (path) => {
    const r = resolvePath(path).toLowerCase();
    return SENSITIVE_FILE_PATTERNS.some((s) => r.includes(s));
  };
  ctx.isBlockedPath ??= (path) => {
    const r = resolvePath(path);
    return BLOCKED_ROOTS.some((root) => within(r, root));
  };
  return ctx;
}

// ---------------------------------------------------------------------------------------
// Registry

const typeChecks = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === 'boolean',
  array: (v) => Array.isArray(v),
  object: (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
  null: (v) => v === null,
};

function typeMatches(type, value) {
  const types = Array.isArray(type) ? type : [type];
  return types.some((t) => typeof t !== 'string' || !typeChecks[t] || typeChecks[t](value));
}

// A small check of the top level of an object schema: the mistakes models make most
// (a missing or mistyped argument, an unknown one where none are allowed).
function checkArgs(schema, args) {
  if (!schema || typeof schema !== 'object') return '';
  if (schema.type !== undefined && !typeMatches(schema.type, args)) {
    return `arguments must be a JSON ${Array.isArray(schema.type) ? schema.type.join(' or ') : schema.type}`;
  }
  if (!typeChecks.object(args)) return '';
  const props = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
  for (const name of Array.isArray(schema.required) ? schema.required : []) {
    if (!Object.prototype.hasOwnProperty.call(args, name)) return `missing required property ${JSON.stringify(name)}`;
  }
  for (const [name, value] of Object.entries(args)) {
    const prop = Object.prototype.hasOwnProperty.call(props, name) ? props[name] : undefined;
    if (!prop) {
      if (schema.additionalProperties === false) return `unknown property ${JSON.stringify(name)}`;
      continue;
    }
    if (prop.type !== undefined && !typeMatches(prop.type, value)) {
      const want = Array.isArray(prop.type) ? prop.type.join(' or ') : prop.type;
      return `property ${JSON.stringify(name)} must be ${want}`;
    }
    if (Array.isArray(prop.enum) && !prop.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
      return `property ${JSON.stringify(name)} must be one of ${prop.enum.map((e) => JSON.stringify(e)).join(', ')}`;
    }
  }
  return '';
}

// Accepts a Jx definition ({name, parameters, execute}) or a jean2 module
// ({definition: {name, inputSchema}, execute}).
function toEntry(tool) {
  if (tool && typeof tool === 'object' && tool.definition && typeof tool.execute === 'function') {
    const d = tool.definition;
    if (typeof d.name !== 'string' || d.name === '') throw new TypeError('register: definition.name must be a non-empty string');
    return { name: d.name, definition: d, schema: d.inputSchema, strict: d.strict !== false, execute: tool.execute };
  }
  createToolDefinition(tool);
  return { name: tool.name, definition: tool, schema: tool.parameters, strict: tool.strict !== false, execute: tool.execute };
}

function settle(name, result) {
  if (result === null || typeof result !== 'object' || typeof result.success !== 'boolean') {
    return {
      success: false,
      error: `tool ${name} returned ${result === null ? 'null' : typeof result}, not a result {success, data?, error?}`,
    };
  }
  try {
    JSON.stringify(result);
  } catch (err) {
    return { success: false, error: `tool ${name} returned a result that cannot be serialized: ${errorText(err)}` };
  }
  if (!result.success && !result.error) {
    return { ...result, error: 'tool reported failure without an error message' };
  }
  return result;
}

/** A small registry: register tools, list them, execute one by name. execute never throws. */
export function createToolRegistry(tools = []) {
  const entries = new Map();
  const registry = {
    register(tool) {
      const entry = toEntry(tool);
      if (entries.has(entry.name)) {
        throw new Error(`register ${JSON.stringify(entry.name)}: a tool with that name is already registered`);
      }
      entries.set(entry.name, entry);
      return registry;
    },
    list() {
      return [...entries.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((e) => e.definition);
    },
    async execute(name, args, ctx) {
      const entry = entries.get(name);
      if (!entry) {
        const names = [...entries.keys()].sort();
        return {
          success: false,
          error: names.length
            ? `unknown tool ${JSON.stringify(name)}: available tools are ${names.join(', ')}`
            : `unknown tool ${JSON.stringify(name)}: no tools are registered`,
        };
      }
      let input = args ?? {};
      if (typeof input === 'string') {
        try {
          input = JSON.parse(input);
        } catch {
          return { success: false, error: `invalid arguments for ${name}: arguments are not valid JSON; send a JSON object` };
        }
      }
      if (entry.strict) {
        const problem = checkArgs(entry.schema, input);
        if (problem) return { success: false, error: `invalid arguments for ${name}: ${problem}` };
      }
      const context = createToolContext(ctx ?? {});
      if (context.signal.aborted) {
        return { success: false, error: `${name} was not run: ${errorText(context.signal.reason ?? 'the call was aborted')}` };
      }
      try {
        return settle(name, await entry.execute(input, context));
      } catch (err) {
        return { success: false, error: errorText(err) };
      }
    },
  };
  for (const t of tools) registry.register(t);
  return registry;
}
