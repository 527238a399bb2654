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
  // The facts a client shows and a grant records; the same keys as jean2's catalogue SDK.
  ask.metadata = {
    operation: params.operation,
    path,
    fileName: base,
    isOutsideWorkspace: Boolean(params.isOutsideWorkspace),
    isSensitiveFile: Boolean(params.isSensitiveFile),
  };
  if (params.reason) ask.metadata.reason = params.reason;
  return ask;
}

/**
 * Builds the permission ask for fetching a URL: resource 'network', the host and the URL as
 * patterns, 'session' for plain HTTP or a high risk, 'workspace' otherwise.
 */
export function createWebfetchPermissionAsk(params) {
  if (params === null || typeof params !== 'object' || typeof params.url !== 'string' || typeof params.host !== 'string') {
    throw new TypeError('createWebfetchPermissionAsk: pass an object {url, host, risk, reason?, isHttp?} with string url and host');
  }
  let question = `Fetch URL "${params.host}"`;
  if (params.isHttp) question += ' (unencrypted HTTP)';
  question += ' requires approval.';
  if (params.reason) question += ' ' + params.reason;
  const session = params.isHttp || params.risk === 'high' || params.risk === 'critical';
  const metadata = { url: params.url, host: params.host, isHttp: Boolean(params.isHttp) };
  if (params.reason) metadata.reason = params.reason;
  return {
    type: 'permission',
    question,
    risk: params.risk,
    resource: 'network',
    scope: { type: 'resource', value: params.url, label: params.host },
    patterns: [params.host, params.url],
    duration: session ? 'session' : 'workspace',
    metadata,
  };
}

// ---------------------------------------------------------------------------------------
// Well-known client capabilities: a conventional list, not a closed set (a client may
// declare any name).

export const WELL_KNOWN_CLIENT_CAPABILITIES = Object.freeze([
  'chat_ui',
  'ask_ui',
  'browser_automation',
  'active_tab_read',
  'browser_dom_action',
  'browser_navigate',
  'browser_screenshot',
  'browser_discover_elements',
  'browser_tab_manage',
  'tab_context',
  'notifications',
  'terminal_ui',
  'file_picker',
]);

// ---------------------------------------------------------------------------------------
// Shell commands: what a shell tool needs to describe a command in a permission ask. These
// only describe; the launcher's sandbox is what confines a command.

/** Commands whose effects are dangerous enough to ask before running them. */
export const SHELL_DANGEROUS_COMMANDS = Object.freeze([
  'rm', 'rmdir', 'del', 'erase', 'sudo', 'su', 'doas', 'chmod', 'chown', 'dd', 'mkfs', 'format',
  'shutdown', 'reboot', 'halt', 'iptables', 'ufw', 'firewall-cmd', 'curl', 'wget', 'nc', 'netcat',
  'eval', 'exec',
]);

/** Commands (or command prefixes) that change files. */
export const SHELL_FILESYSTEM_COMMANDS = Object.freeze(['mv', 'cp', 'mkdir', 'touch', 'ln', 'git push', 'git reset --hard']);

/** Operators that chain, pipe, redirect or substitute. */
export const SHELL_SHELL_OPERATORS = Object.freeze(['&&', '||', '|', '>', '>>', '`', '$(', ';']);

// Splits at every operator, longest first so '&&' is not read as two '&'s.
const SEGMENT_SPLIT = /&&|\|\||>>|\$\(|[;|>`]/;

/**
 * Splits a command line at its operators into segments: each with its raw text, the base
 * command (its program's file name), its arguments and the arguments that are flags. A
 * description, not a shell parser: quotes are not honoured.
 */
export function splitShellCommandSegments(command) {
  const out = [];
  for (const piece of String(command ?? '').split(SEGMENT_SPLIT)) {
    const raw = piece.trim();
    if (raw === '') continue;
    const words = raw.split(/\s+/);
    const program = words[0] ?? '';
    const args = words.slice(1);
    out.push({
      raw,
      baseCommand: program.slice(program.lastIndexOf('/') + 1),
      args,
      flags: args.filter((a) => a.startsWith('-')),
    });
  }
  return out;
}

// Tools whose first plain argument is a subcommand that names what they do.
const SUBCOMMAND_TOOLS = new Set(['git', 'npm', 'pnpm', 'yarn', 'bun', 'cargo']);

function segmentIdentity(seg) {
  if (!seg.baseCommand) return seg.raw;
  if (SUBCOMMAND_TOOLS.has(seg.baseCommand)) {
    const sub = seg.args.find((a) => !a.startsWith('-'));
    if (sub) return `${seg.baseCommand} ${sub}`;
  }
  return seg.baseCommand;
}

// How much harm an identity can do, 0 (none known) to 5; the most harmful segment names a
// chained command.
const DANGER = new Map([
  ...['shutdown', 'reboot', 'halt'].map((c) => [c, 5]),
  ...['sudo', 'su', 'doas', 'chmod', 'chown'].map((c) => [c, 4]),
  ...['rm', 'rmdir', 'del', 'erase', 'dd', 'mkfs', 'format'].map((c) => [c, 3]),
  ...['mv', 'cp', 'mkdir', 'touch', 'ln', 'git push', 'git reset'].map((c) => [c, 2]),
  ...['curl', 'wget', 'nc', 'netcat', 'iptables', 'ufw', 'firewall-cmd', 'eval', 'exec'].map((c) => [c, 1]),
]);

function dangerOf(identity) {
  const id = identity.toLowerCase();
  if (DANGER.has(id)) return DANGER.get(id);
  return id.startsWith('rm ') ? 3 : 0;
}

/**
 * The identity a grant for a command line is remembered by: "git push", "npm test", "rm";
 * for a chain, its most dangerous segment (the first one on a tie).
 */
export function getEffectiveShellCommandIdentity(command) {
  let best = '';
  let bestDanger = -1;
  for (const seg of splitShellCommandSegments(command)) {
    const id = segmentIdentity(seg);
    const d = dangerOf(id);
    if (d > bestDanger) {
      best = id;
      bestDanger = d;
    }
  }
  return best;
}

const SCOPES_ALL = Object.freeze(['once', 'session', 'workspace']);
const SCOPES_SESSION = Object.freeze(['once', 'session']);

/** The grant scopes an intent may be answered with: only 'once' when it cannot be reused. */
export function getAllowedScopesForIntent(intent) {
  if (!intent || !intent.persistable) return ['once'];
  if (intent.resource === 'file') {
    if (intent.action === 'read' || intent.action === 'write') return SCOPES_ALL.slice();
    if (intent.action === 'delete') return SCOPES_SESSION.slice();
    return ['once'];
  }
  if (intent.resource === 'network') return SCOPES_ALL.slice();
  if (intent.resource === 'shell-command') return SCOPES_SESSION.slice();
  return ['once'];
}

const READERS = new Set(['cat', 'head', 'tail', 'less', 'more', 'wc', 'file', 'stat', 'ls', 'find', 'grep', 'awk', 'sed', 'sort', 'uniq', 'diff', 'comm', 'cut', 'tr', 'tee']);
const WRITERS = new Set(['touch', 'mkdir', 'mv', 'cp', 'ln']);
const DELETERS = new Set(['rm', 'rmdir', 'del', 'erase']);
const FETCHERS = new Set(['curl', 'wget', 'nc', 'netcat']);

function runIntent(base, reason, scopes) {
  return {
    resource: 'shell-command',
    action: 'execute',
    targets: [{ target: base, matcher: 'exact' }],
    persistable: false,
    nonPersistableReason: reason,
    allowedScopes: scopes.slice(),
  };
}

function intentOf(resource, action, targets, persistable, reason) {
  const intent = { resource, action, targets, persistable, allowedScopes: [] };
  if (!persistable) intent.nonPersistableReason = reason;
  intent.allowedScopes = getAllowedScopesForIntent(intent);
  return intent;
}

// Hosts (exact) and URL prefixes up to the first path slash (prefix) named in a command.
function networkTargets(command) {
  const targets = [];
  const seen = new Set();
  const add = (target, matcher) => {
    if (!seen.has(target)) {
      seen.add(target);
      targets.push({ target, matcher });
    }
  };
  for (const m of command.matchAll(/https?:\/\/([^\s/$.?#][^\s]*)/gi)) {
    const url = m[0];
    const host = m[1].split('/')[0];
    if (!host) continue;
    add(host, 'exact');
    const slash = url.indexOf('/', url.indexOf('//') + 2);
    if (slash > 0) add(url.slice(0, slash + 1), 'prefix');
  }
  return targets;
}

/**
 * Describes what a command does as permission intents: file reads, writes and deletes of
 * its resolved paths, network requests to the hosts it names, or, when it cannot tell (a
 * chain, a variable, an unknown program), running the command itself, never reusable
 * beyond the session.
 */
export function analyzeShellCommandEffects(params) {
  const command = String(params?.command ?? '');
  const base = String(params?.baseCommand ?? '');
  const paths = Array.isArray(params?.resolvedPaths) ? params.resolvedPaths.map(String) : [];
  const dynamic = command.includes('$(') || /\$\{?[^}]+\}?/.test(command);
  const why = dynamic ? 'dynamic variable expansion' : 'could not resolve target paths';
  if (params?.hasOperators) return [runIntent(base, 'command contains shell operators', SCOPES_SESSION)];
  if (FETCHERS.has(base)) {
    const targets = networkTargets(command);
    if (targets.length === 0) return [runIntent(base, 'could not extract network target', SCOPES_SESSION)];
    return [intentOf('network', 'request', targets, !dynamic, 'dynamic variable expansion')];
  }
  const exact = () => paths.map((p) => ({ target: p, matcher: 'exact' }));
  if (DELETERS.has(base)) {
    if (paths.length === 0 || dynamic) return [runIntent(base, why, ['once'])];
    const recursive = /-[a-zA-Z]*[rR]/.test(command);
    const targets = recursive ? paths.map((p) => ({ target: p.endsWith('/') ? p : p + '/', matcher: 'prefix' })) : exact();
    return [intentOf('file', 'delete', targets, true)];
  }
  if (READERS.has(base)) {
    if (paths.length === 0) return [runIntent(base, 'no resolvable file targets', SCOPES_SESSION)];
    if (dynamic) return [runIntent(base, 'dynamic variable expansion', ['once'])];
    return [intentOf('file', 'read', exact(), true)];
  }
  if (WRITERS.has(base)) {
    if (paths.length === 0 || dynamic) return [runIntent(base, why, ['once'])];
    return [intentOf('file', 'write', exact(), true)];
  }
  if (params?.riskCategory === 'sensitive-files' && paths.length > 0 && !dynamic) {
    return [intentOf('file', 'read', exact(), true)];
  }
  return [runIntent(base, 'unclassifiable system command', SCOPES_SESSION)];
}

function shortCommand(cmd) {
  return cmd.length > 80 ? cmd.slice(0, 80) + '...' : cmd;
}

function lastElement(p) {
  return p.split('/').pop() || p;
}

function uniqueScopes(intents) {
  return [...new Set(intents.flatMap((i) => i.allowedScopes))];
}

function intentPatterns(intent) {
  return intent ? intent.targets.map((t) => t.target) : [];
}

function commandLabel(identity, flags) {
  if (!identity) return '';
  const shown = (flags ?? []).slice(0, 3).join(' ');
  return shown ? `${identity} ${shown}` : identity;
}

function scopeOf(intent, identity, flags) {
  if (intent?.resource === 'file') {
    return {
      type: 'file',
      value: intent.targets.map((t) => t.target).join(', '),
      label: `${intent.action} ${intent.targets.map((t) => lastElement(t.target)).join(', ')}`,
    };
  }
  if (intent?.resource === 'network') {
    const hosts = intent.targets.map((t) => t.target).join(', ');
    return { type: 'resource', value: hosts, label: hosts };
  }
  return { type: 'shell-command', value: identity, label: commandLabel(identity, flags) };
}

const CATEGORY_WORDS = {
  destructive: 'Destructive operation',
  network: 'Network access',
  'side-effect': 'Side-effect command',
  'workspace-modification': 'Workspace modification',
  'outside-workspace': 'Outside workspace',
};

/**
 * The permission ask for running a shell command, built from the analysis of its effects:
 * resource, action, patterns and scope from the first intent (falling back to the command's
 * identity), 'session' for destructive, network or dangerous commands and for intents that
 * cannot be reused, 'workspace' otherwise.
 */
export function createShellPermissionAskStructured(params) {
  const command = String(params?.command ?? '');
  const identity = getEffectiveShellCommandIdentity(command);
  const flags = Array.isArray(params?.flags) ? params.flags : [];
  const intents = analyzeShellCommandEffects({
    command,
    baseCommand: params?.baseCommand,
    resolvedPaths: params?.resolvedPaths ?? [],
    hasOperators: Boolean(params?.hasOperators),
    workspaceBound: Boolean(params?.workspaceBound),
    riskCategory: params?.riskCategory,
  });
  const first = intents[0];
  const resource = first?.resource ?? 'shell-command';
  const action = first?.action;
  const patterns = first ? intentPatterns(first) : identity ? [identity] : [];
  const allowedScopes = uniqueScopes(intents);
  let duration =
    params?.riskCategory === 'destructive' || params?.riskCategory === 'network' || dangerOf(identity) > 0 ? 'session' : 'workspace';
  if (first && !first.persistable) duration = allowedScopes.includes('session') ? 'session' : 'once';

  let question;
  const hosts = first?.resource === 'network' ? first.targets.filter((t) => t.matcher === 'exact').map((t) => t.target) : [];
  if (first?.resource === 'file') {
    const verb = { read: 'Read', write: 'Write to', delete: 'Delete' }[first.action] ?? 'Access';
    question = `${verb} file "${first.targets.map((t) => lastElement(t.target)).join('", "')}"`;
    if (!params?.workspaceBound) question += ' (outside workspace)';
    question += '. Requires approval.';
  } else if (hosts.length > 0) {
    question = `Network request to "${hosts.join('", "')}" via ${shortCommand(command)}. Requires approval.`;
  } else {
    question = `Run command "${shortCommand(command)}"`;
    question += params?.workspaceBound ? ' (within workspace)' : ' (references paths outside workspace)';
    question += `: ${params?.reason ?? ''}. Requires approval.`;
  }

  const words = [];
  if (CATEGORY_WORDS[params?.riskCategory]) words.push(CATEGORY_WORDS[params.riskCategory]);
  if (!params?.workspaceBound) words.push('References external paths');
  if (params?.hasOperators) words.push('Contains shell operators');

  return {
    type: 'permission',
    question,
    risk: params?.risk,
    resource,
    action,
    scope: scopeOf(first, identity, flags),
    patterns,
    duration,
    intents,
    allowedScopes,
    paths: params?.resolvedPaths,
    metadata: {
      command,
      baseCommand: identity,
      flags,
      riskCategory: params?.riskCategory,
      reason: params?.reason,
      resolvedPaths: params?.resolvedPaths,
      workspaceBound: params?.workspaceBound,
      hasOperators: params?.hasOperators,
      effectiveResource: resource,
      effectiveAction: action,
      description: words.join(' • '),
    },
  };
}

/** The permission ask for a command that runs in a folder outside the workspace. */
export function createOutsideWorkspaceAsk(params) {
  const command = String(params?.command ?? '');
  const cwd = String(params?.cwd ?? '');
  const identity = getEffectiveShellCommandIdentity(command);
  const resolvedPaths = Array.isArray(params?.resolvedPaths) ? params.resolvedPaths : [];
  const hasOperators = Boolean(params?.hasOperators);
  const intents = analyzeShellCommandEffects({
    command,
    baseCommand: identity,
    resolvedPaths,
    hasOperators,
    workspaceBound: false,
    riskCategory: 'outside-workspace',
  });
  const first = intents[0];
  const resource = first?.resource ?? 'shell-command';
  const patterns = intentPatterns(first);
  if (patterns.length === 0) patterns.push(identity || `cwd:${cwd}`);
  return {
    type: 'permission',
    question: `Command "${shortCommand(command)}" runs in directory outside workspace (${cwd}). Requires approval.`,
    risk: 'medium',
    resource,
    action: first?.action,
    scope: { type: 'path', value: cwd, label: lastElement(cwd) },
    patterns,
    duration: 'session',
    intents,
    allowedScopes: uniqueScopes(intents),
    metadata: {
      command,
      baseCommand: identity,
      cwd,
      resolvedPaths,
      riskCategory: 'outside-workspace',
      effectiveResource: resource,
      effectiveAction: first?.action,
      description: `External directory access: ${cwd}`,
      hasOperators,
    },
  };
}

/** The permission ask for a command that changes files inside the workspace. */
export function createWorkspaceModificationAsk(params) {
  const command = String(params?.command ?? '');
  const base = String(params?.baseCommand ?? '');
  const identity = getEffectiveShellCommandIdentity(command);
  const resolvedPaths = Array.isArray(params?.resolvedPaths) ? params.resolvedPaths : [];
  const hasOperators = Boolean(params?.hasOperators);
  const intents = analyzeShellCommandEffects({
    command,
    baseCommand: base,
    resolvedPaths,
    hasOperators,
    workspaceBound: true,
    riskCategory: 'workspace-modification',
  });
  const first = intents[0];
  const resource = first?.resource ?? 'shell-command';
  const patterns = intentPatterns(first);
  if (patterns.length === 0) patterns.push(identity || base);
  let question;
  if (first?.resource === 'file') {
    const verb = { write: 'Write to', read: 'Read' }[first.action] ?? 'Modify';
    question = `${verb} "${first.targets.map((t) => lastElement(t.target)).join('", "')}" via ${shortCommand(command)}. Requires approval.`;
  } else {
    question = `Run filesystem command "${shortCommand(command)}" within workspace. Requires approval.`;
  }
  return {
    type: 'permission',
    question,
    risk: 'medium',
    resource,
    action: first?.action,
    scope: scopeOf(first, identity, []),
    patterns,
    duration: 'session',
    intents,
    allowedScopes: uniqueScopes(intents),
    paths: resolvedPaths,
    metadata: {
      command,
      baseCommand: identity || base,
      resolvedPaths,
      riskCategory: 'workspace-modification',
      effectiveResource: resource,
      effectiveAction: first?.action,
      description: `Workspace filesystem: ${identity || base}`,
      hasOperators,
    },
  };
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

/**
 * Thrown from execute, fails the call as a protocol error (a JSON-RPC error to an MCP
 * client, a failed task) rather than the tool's own error. The worker knows it by the
 * registered symbol, not by class: the SDK is bundled into each tool, so classes differ.
 */
export class ProtocolError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
    if (data !== undefined) this.data = data;
    Object.defineProperty(this, Symbol.for('jean2.protocolError'), { value: true });
  }
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
    // No workspace to change: false, as jean2 answers a session without one.
    addWorkspacePath: async () => false,
    removeWorkspacePath: async () => false,
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
