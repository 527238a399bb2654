// Types of @jean2/sdk and @jxsuite/ai/tools (the same module: a tool may import either).
// The jean2 host provides the runtime; these types are what a tool author's editor sees.

// ---------------------------------------------------------------------------------------
// JSON

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export type JSONSchemaTypeName = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null';

/** A JSON Schema (draft 2020-12 or 7). The common keywords are typed; any other is allowed. */
export interface JSONSchema {
  $schema?: string;
  $id?: string;
  $ref?: string;
  $defs?: Record<string, JSONSchema>;
  definitions?: Record<string, JSONSchema>;
  type?: JSONSchemaTypeName | JSONSchemaTypeName[];
  title?: string;
  description?: string;
  default?: unknown;
  examples?: unknown[];
  enum?: readonly unknown[];
  const?: unknown;
  properties?: Record<string, JSONSchema>;
  required?: readonly string[];
  additionalProperties?: boolean | JSONSchema;
  patternProperties?: Record<string, JSONSchema>;
  items?: JSONSchema | JSONSchema[];
  prefixItems?: JSONSchema[];
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  oneOf?: JSONSchema[];
  anyOf?: JSONSchema[];
  allOf?: JSONSchema[];
  not?: JSONSchema;
  [keyword: string]: unknown;
}

// ---------------------------------------------------------------------------------------
// Definitions (REFERENCE §2)

/** Hints about a tool's behaviour, as MCP names them. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** What a tool may do beyond its context; enforced by the worker's sandbox. */
export interface ToolPermissions {
  /** Absolute paths the worker process may read directly. */
  read?: string[];
  /** Absolute paths the worker process may write directly. */
  write?: string[];
  /** Whether the worker may start child processes. */
  childProcess?: boolean;
  /** Hosts the worker may connect to through jean2's egress proxy. */
  network?: string[];
  /** Another tool whose data folder ($JEAN2_HOME/data) this tool shares instead of its own. */
  data?: string;
}

/** `interactive-user-input`: the tool needs a person and is not offered in unattended runs. */
export type ToolCapability = 'interactive-user-input' | (string & {});

/** A jean2-shape tool: `export const definition: ToolDefinition` beside `export async function execute`. */
export interface ToolDefinition {
  /** Unique tool id; the model sees it. */
  name: string;
  /** Display title. */
  title?: string;
  /** What the tool does and when to use it; sent to the model. */
  description: string;
  /** JSON Schema of the arguments; calls are validated against it. */
  inputSchema: JSONSchema;
  /** JSON Schema of `result`. */
  outputSchema?: JSONSchema;
  /** Execution timeout in milliseconds (default 30000). */
  timeout?: number;
  /** The only environment variables the tool may read through ctx.env. */
  env?: string[];
  capabilities?: ToolCapability[];
  annotations?: ToolAnnotations;
  permissions?: ToolPermissions;
  /** Jx extra: the tool suspends the turn on a person. */
  interactive?: boolean;
  /** Validate arguments against the schema (default true). */
  strict?: boolean;
  /**
   * How calls may run. taskSupport 'optional': an MCP client that takes tasks (the
   * io.modelcontextprotocol/tasks extension) gets a task to poll while the call runs, any
   * other caller the result; 'required': only as such a task; 'forbidden' (the default):
   * the caller waits for the result. taskAfterInput (with 'optional' or 'required'): the
   * call's first asks go out as input-required rounds of a plain call, and it becomes a task
   * when their answers come (docs/mcp.md, MRTR → tasks).
   */
  execution?: { taskSupport?: 'forbidden' | 'optional' | 'required'; taskAfterInput?: boolean };
}

/** The execute function of a jean2-shape tool. */
export type ToolExecute<I = Record<string, unknown>, R = unknown> = (
  input: I,
  ctx: ToolContext,
) => ToolResult<R> | Promise<ToolResult<R>>;

/** A jean2-shape tool module. */
export interface ToolModule<I = Record<string, unknown>, R = unknown> {
  definition: ToolDefinition;
  execute: ToolExecute<I, R>;
}

/** A Jx-shape tool, made with createToolDefinition. `parameters` plays the role of inputSchema. */
export interface JxToolDefinition<A = Record<string, unknown>, R = unknown> {
  name: string;
  title?: string;
  description: string;
  parameters: JSONSchema;
  outputSchema?: JSONSchema;
  execute(args: A, ctx: ToolContext): ToolResult<R> | Promise<ToolResult<R>>;
  /** The tool suspends the turn on a person (like ask_user); such rounds do not count against the work budget. */
  interactive?: boolean;
  /** Validate arguments against `parameters` (default true). */
  strict?: boolean;
  timeout?: number;
  env?: string[];
  capabilities?: ToolCapability[];
  annotations?: ToolAnnotations;
  permissions?: ToolPermissions;
}

// ---------------------------------------------------------------------------------------
// Results (REFERENCE §3)

/** jean2 shape: `result` for the model, `visualization` for people only. */
export interface Jean2ToolResult<T = unknown> {
  success: boolean;
  result?: T;
  error?: string;
  visualization?: Visualization;
  /** Content beyond JSON: images, audio, resources (docs/writing-tools.md#rich-results). */
  content?: ToolContent[];
  /** Fails the call as a protocol error (docs/writing-tools.md#protocol-errors); `success` is then false. */
  protocolError?: ProtocolErrorShape;
}

/** A protocol error as a result carries it: a JSON-RPC error. */
export interface ProtocolErrorShape {
  code: number;
  message: string;
  data?: unknown;
}

/** Jx shape: `data` and a one-line `summary`. */
export interface JxToolResult<T = unknown> {
  success: boolean;
  data?: T;
  error?: string;
  summary?: string;
  /** Content beyond JSON: images, audio, resources (docs/writing-tools.md#rich-results). */
  content?: ToolContent[];
  /** Fails the call as a protocol error (docs/writing-tools.md#protocol-errors); `success` is then false. */
  protocolError?: ProtocolErrorShape;
}

// Rich results: MCP's content blocks. Bytes are base64 (standard alphabet, padded), e.g.
// Buffer.from(bytes).toString('base64'). The host checks them: base64 that decodes, an
// image/… or audio/… mimeType, PNG/JPEG/GIF/WebP bytes that are of the type named, 16 MiB
// in all; a model is given the images where it takes them, an MCP client everything.

/** A text block, among other content. */
export interface TextContent {
  type: 'text';
  text: string;
}

/** An image: `mimeType` image/png, image/jpeg, image/gif, image/webp (others reach MCP clients only). */
export interface ImageContent {
  type: 'image';
  /** base64 */
  data: string;
  mimeType: `image/${string}`;
}

/** Audio, e.g. audio/wav: MCP clients get it; a model reads a line saying what it was. */
export interface AudioContent {
  type: 'audio';
  /** base64 */
  data: string;
  mimeType: `audio/${string}`;
}

/** An embedded resource: its text or its bytes (`blob`, base64), never both. */
export type EmbeddedResourceContent = {
  type: 'resource';
  resource: { uri: string; mimeType?: string } & ({ text: string; blob?: never } | { blob: string; text?: never });
};

/** A link to a resource the reader may fetch. */
export interface ResourceLinkContent {
  type: 'resource_link';
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
}

/** One block of a result's `content`. */
export type ToolContent = TextContent | ImageContent | AudioContent | EmbeddedResourceContent | ResourceLinkContent;

/** What execute returns: either shape. A thrown error becomes {success: false, error}. */
export type ToolResult<T = unknown> = Jean2ToolResult<T> | JxToolResult<T>;

/** The conventional error of a call a person refused. */
export type UserRejection = 'USER_REJECTION';

// ---------------------------------------------------------------------------------------
// The context (REFERENCE §4)

export interface DirEntry {
  name: string;
  isDirectory: boolean;
  isFile: boolean;
}

export interface FileStat {
  size: number;
  isDirectory: boolean;
  isFile: boolean;
  modifiedAt: Date;
  createdAt: Date;
}

export type TextEncoding = 'utf-8' | 'utf8';

/** Files, through the host: every path is resolved against the workspace and checked first. */
export interface FileSystemApi {
  /** The file's bytes. */
  readFile(path: string): Promise<Uint8Array>;
  /** The file's text. */
  readFile(path: string, encoding: TextEncoding): Promise<string>;
  readFile(path: string, options: { encoding: TextEncoding }): Promise<string>;
  /** Writes the file, creating missing parent folders. */
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  appendFile(path: string, content: string | Uint8Array): Promise<void>;
  readDir(path: string): Promise<DirEntry[]>;
  exists(path: string): Promise<boolean>;
  stat(path: string): Promise<FileStat>;
  mkdir(path: string, options?: { recursive?: boolean }): Promise<void>;
  rm(path: string, options?: { recursive?: boolean }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** The absolute path `path` stands for (like ctx.resolvePath). */
  resolve(path: string): string;
  /** The language id of a path by its extension, "text" when unknown. */
  detectLanguage(path: string): string;
  /** A session-scoped temporary folder. */
  readonly tempDir: string;
}

export interface GenerateTextOptions {
  prompt: string;
  system?: string;
  model?: string;
  provider?: string;
  /** Images for the model: a data: URL, or jean2's {data, mediaType} (LlmImage), or several. */
  image?: string | LlmImage | Array<string | LlmImage>;
  maxTokens?: number;
}

export interface GenerateStructuredOptions extends GenerateTextOptions {
  /** JSON Schema the answer must match. */
  schema: JSONSchema;
}

export interface LlmApi {
  generateText(options: GenerateTextOptions): Promise<string>;
  generateStructured<T = unknown>(options: GenerateStructuredOptions): Promise<T>;
}

export interface EnvApi {
  /** The variable, or undefined when it is not set or not declared in definition.env. */
  get(key: string): string | undefined;
  /** The variable, or throws "Required environment variable not set: KEY". */
  require(key: string): string;
}

export interface ToolLogger {
  debug(message: string, data?: unknown): void;
  info(message: string, data?: unknown): void;
  warn(message: string, data?: unknown): void;
  error(message: string, data?: unknown): void;
}

/** One change on a turn's ledger. */
export interface LedgerEntry {
  path: string;
  tool: string;
  /** Whether the change reached the disk. */
  disk: boolean;
  ok: boolean;
  error?: string;
}

export interface LedgerSummary {
  /** Distinct paths of successful changes ("Changed N files"). */
  changed: string[];
  /** Entries that failed. */
  failed: LedgerEntry[];
}

/** A turn's list of changes. */
export interface Ledger {
  record(entry: LedgerEntry): void;
  entries(): LedgerEntry[];
  summary(): LedgerSummary;
}

/** A conversation's facts; values are JSON. In a worker they live in the host: await them. */
export interface SessionFacts {
  get(key: string): JsonValue | undefined | Promise<JsonValue | undefined>;
  set(key: string, value: JsonValue): void | Promise<void>;
}

/** The facts createSessionFacts makes, kept in memory. */
export interface LocalSessionFacts extends SessionFacts {
  get(key: string): JsonValue | undefined;
  set(key: string, value: JsonValue): void;
}

export interface ProgressEvent {
  message?: string;
  current?: number;
  total?: number;
  data?: JsonValue;
}

// AbortSignal and fetch come from the DOM library or @types/node; a project with neither
// still typechecks, with the small stand-ins below.
interface AbortSignalStandIn {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
  throwIfAborted(): void;
}
export type ToolAbortSignal = typeof globalThis extends { AbortSignal: { prototype: infer S } } ? S : AbortSignalStandIn;
export type ToolFetch = typeof globalThis extends { fetch: infer F } ? F : (input: string, init?: Record<string, unknown>) => Promise<unknown>;

/** What execute receives: the call's facts and powers. The host enforces every power. */
export interface ToolContext {
  sessionId: string;
  /** Absolute workspace path. */
  workspacePath: string;
  workspaceId?: string;
  /** The provider's tool-call id ("" when detached). */
  callId: string;
  /** Aborts on Stop, on timeout, on shutdown. */
  abortSignal: ToolAbortSignal;
  /** Alias of abortSignal. */
  signal: ToolAbortSignal;
  /** Extra absolute paths the tool may touch besides the workspace. */
  allowedPaths: string[];
  fs: FileSystemApi;
  llm: LlmApi;
  ask: AskApi;
  env: EnvApi;
  logger: ToolLogger;
  fetch: ToolFetch;
  /** "~" → home; absolute stays; relative → against workspacePath. */
  resolvePath(path: string): string;
  /** Inside workspacePath or allowedPaths (symlinks resolved). */
  isWithinWorkspace(path: string): boolean;
  /** The lower-cased path contains one of SENSITIVE_FILE_PATTERNS. */
  isSensitivePath(path: string): boolean;
  /** A system directory no tool may touch (/etc, /usr, …). */
  isBlockedPath(path: string): boolean;
  /** The turn's list of changes (Jx). */
  ledger: Ledger;
  /** Conversation facts (Jx). */
  session: SessionFacts;
  /** Reports progress of a long call (Jx). */
  progress(event: ProgressEvent): void;
  /** Widens the workspace's extra paths; the host decides whether it may (true once done; a refusal throws). */
  addWorkspacePath(path: string): Promise<boolean>;
  /** Narrows them again (true once done). */
  removeWorkspacePath(path: string): Promise<boolean>;
}

/** What createToolContext accepts: any member, plus env as a plain object of variables. */
export type ToolContextInit = Partial<Omit<ToolContext, 'env'>> & { env?: EnvApi | Record<string, string> };

// ---------------------------------------------------------------------------------------
// Asks (REFERENCE §5)

export type PermissionRisk = 'low' | 'medium' | 'high' | 'critical';
export type PermissionResource = 'file' | 'network' | 'shell-command' | 'env' | (string & {});
export type PermissionDuration = 'once' | 'session' | 'workspace';

/** PermissionRisk with 'none', as jean2's catalogue SDK spells it. */
export type PermissionRiskLevel = 'none' | PermissionRisk;
/** How long a grant lasts. */
export type GrantScope = PermissionDuration;

/** What a client shows as the thing being granted. */
export interface PermissionScopeDefinition {
  type: 'file' | 'path' | 'shell-command' | 'resource' | 'custom';
  value?: string;
  label?: string;
}

export type PermissionIntentResource = 'file' | 'network' | 'shell-command';
export type PermissionIntentAction = 'read' | 'write' | 'delete' | 'request' | 'execute';
export type PermissionTargetMatcher = 'exact' | 'prefix';

export interface PermissionTarget {
  /** An absolute path, a host or a URL prefix. */
  target: string;
  matcher: PermissionTargetMatcher;
}

/** One effect of a shell command, as analyzeShellCommandEffects describes it. */
export interface PermissionIntent {
  resource: PermissionIntentResource;
  action: PermissionIntentAction;
  targets: PermissionTarget[];
  /** Whether a grant for it may outlive the call. */
  persistable: boolean;
  nonPersistableReason?: string;
  allowedScopes: GrantScope[];
}

export interface PermissionAsk {
  type: 'permission';
  target?: 'human' | 'permission';
  question: string;
  description?: string;
  risk?: PermissionRiskLevel;
  resource?: PermissionResource;
  /** Paths the grant opens; without paths, see docs/writing-tools.md for what a grant opens. */
  paths?: string[];
  patterns?: string[];
  duration?: PermissionDuration;
  metadata?: Record<string, unknown>;
  scope?: PermissionScopeDefinition | PermissionScopeDefinition[];
  action?: string;
  intents?: PermissionIntent[];
  allowedScopes?: GrantScope[];
}

export type AskOptionValue = string | number | boolean;

export interface AskOption<V extends AskOptionValue = AskOptionValue> {
  label: string;
  value: V;
  description?: string;
}

export interface SingleSelectAsk<V extends AskOptionValue = AskOptionValue> {
  /** Names the ask for a client that keys asks by name (an MCP client on 2026-07-28 sees it under this key in inputRequests, and may answer it in advance). 1–64 of [A-Za-z0-9_.-]. */
  key?: string;
  /** Names the question's form field (an MCP elicitation's property; else "answer", or qN in a form). 1–64 of [A-Za-z0-9_.-]. */
  name?: string;
  target?: 'human';
  type: 'single_select';
  question: string;
  description?: string;
  /** Options whose label is their value are sent to MCP clients as a plain enum. */
  options: AskOption<V>[];
  defaultValue?: V;
  /** Send the choices to an MCP client as enum + enumNames (its form before 2025-11-25). */
  legacyEnumNames?: boolean;
}

export interface MultiSelectAsk<V extends AskOptionValue = AskOptionValue> {
  /** Names the ask for a client that keys asks by name (an MCP client on 2026-07-28 sees it under this key in inputRequests, and may answer it in advance). 1–64 of [A-Za-z0-9_.-]. */
  key?: string;
  /** Names the question's form field (an MCP elicitation's property; else "answer", or qN in a form). 1–64 of [A-Za-z0-9_.-]. */
  name?: string;
  target?: 'human';
  type: 'multi_select';
  question: string;
  description?: string;
  options: AskOption<V>[];
  min?: number;
  max?: number;
  defaultValue?: V[];
}

export interface TextAsk {
  /** Names the ask for a client that keys asks by name (an MCP client on 2026-07-28 sees it under this key in inputRequests, and may answer it in advance). 1–64 of [A-Za-z0-9_.-]. */
  key?: string;
  /** Names the question's form field (an MCP elicitation's property; else "answer", or qN in a form). 1–64 of [A-Za-z0-9_.-]. */
  name?: string;
  target?: 'human';
  type: 'text';
  question: string;
  description?: string;
  placeholder?: string;
  defaultValue?: string;
}

/** A number; a whole one with integer: true; minimum and maximum bound it. */
export interface NumberAsk {
  /** Names the ask for a client that keys asks by name (an MCP client on 2026-07-28 sees it under this key in inputRequests, and may answer it in advance). 1–64 of [A-Za-z0-9_.-]. */
  key?: string;
  target?: 'human';
  type: 'number';
  question: string;
  description?: string;
  integer?: boolean;
  minimum?: number;
  maximum?: number;
  defaultValue?: number;
  /** Names the question's form field (an MCP elicitation's property; else "answer", or qN in a form). 1–64 of [A-Za-z0-9_.-]. */
  name?: string;
}

export interface ConfirmAsk {
  /** Names the ask for a client that keys asks by name (an MCP client on 2026-07-28 sees it under this key in inputRequests, and may answer it in advance). 1–64 of [A-Za-z0-9_.-]. */
  key?: string;
  /** Names the question's form field (an MCP elicitation's property; else "answer", or qN in a form). 1–64 of [A-Za-z0-9_.-]. */
  name?: string;
  target?: 'human';
  type: 'confirm';
  question: string;
  description?: string;
  defaultValue?: boolean;
}

/** A question of a form. */
export type FormQuestion = SingleSelectAsk | MultiSelectAsk | TextAsk | NumberAsk | ConfirmAsk;

export interface FormAsk {
  /** Names the ask for a client that keys asks by name (an MCP client on 2026-07-28 sees it under this key in inputRequests, and may answer it in advance). 1–64 of [A-Za-z0-9_.-]. */
  key?: string;
  target?: 'human';
  type: 'form';
  question: string;
  description?: string;
  questions: FormQuestion[];
}

export interface FormAnswer {
  question: string;
  answer: AskOptionValue | AskOptionValue[] | null;
}

export interface FormResponse {
  type: 'form';
  answers: FormAnswer[];
}

/** The answer to a form ask (the catalogue SDK's name for FormResponse). */
export type AskFormResponse = FormResponse;

/** The answer to a client capability ask. */
export interface AskClientCapabilityResponse {
  type: 'client_capability';
  capability: string;
  result: unknown;
}

/** A client capability's name: open-ended; WELL_KNOWN_CLIENT_CAPABILITIES lists the common ones. */
export type ClientCapability = string;
export declare const WELL_KNOWN_CLIENT_CAPABILITIES: readonly [
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
];

export interface ClientCapabilityAsk {
  /** Names the ask for a client that keys asks by name (an MCP client on 2026-07-28 sees it under this key in inputRequests, and may answer it in advance). 1–64 of [A-Za-z0-9_.-]. */
  key?: string;
  target: 'client';
  type: 'client_capability';
  capability: string;
  question?: string;
  metadata?: Record<string, unknown>;
}

export type HumanAsk = SingleSelectAsk | MultiSelectAsk | TextAsk | NumberAsk | ConfirmAsk | FormAsk;
export type Ask = PermissionAsk | HumanAsk | ClientCapabilityAsk;
export type AskType = Ask['type'];

/** ctx.ask: suspends the call until a person (or the client) answers. */
export interface AskApi {
  (ask: PermissionAsk): Promise<boolean>;
  <V extends AskOptionValue>(ask: SingleSelectAsk<V>): Promise<V>;
  <V extends AskOptionValue>(ask: MultiSelectAsk<V>): Promise<V[]>;
  (ask: TextAsk): Promise<string>;
  (ask: NumberAsk): Promise<number>;
  (ask: ConfirmAsk): Promise<boolean>;
  (ask: FormAsk): Promise<FormResponse>;
  <T = unknown>(ask: ClientCapabilityAsk): Promise<T>;
  (ask: Ask): Promise<unknown>;
}

export type FileOperation = 'read' | 'write' | 'edit';

export interface FilePermissionOptions {
  path: string;
  operation: FileOperation;
  risk: PermissionRisk;
  /** Appended to the question. */
  reason?: string;
  isOutsideWorkspace?: boolean;
  isSensitiveFile?: boolean;
}

/**
 * A permission ask for a file access: question `Reading file "a.txt" (outside workspace)
 * requires approval.`, resource 'file', paths [path], patterns `file:<path>`,
 * `file:<basename>` (+ `outside-workspace`, `sensitive-file`), duration 'session' when
 * sensitive or risk high/critical, else 'workspace'.
 */
export declare function createFilePermissionAsk(options: FilePermissionOptions): PermissionAsk & {
  risk: PermissionRisk;
  resource: 'file';
  paths: string[];
  patterns: string[];
  duration: PermissionDuration;
  metadata: {
    operation: FileOperation;
    path: string;
    fileName: string;
    isOutsideWorkspace: boolean;
    isSensitiveFile: boolean;
    reason?: string;
  };
};

export interface WebfetchPermissionOptions {
  url: string;
  host: string;
  risk: PermissionRiskLevel;
  reason?: string;
  /** Plain HTTP: said in the question, and the grant lasts the session at most. */
  isHttp?: boolean;
}

/** A permission ask for fetching a URL: resource 'network', patterns [host, url]. */
export declare function createWebfetchPermissionAsk(options: WebfetchPermissionOptions): PermissionAsk & {
  resource: 'network';
  patterns: string[];
  duration: PermissionDuration;
  metadata: { url: string; host: string; isHttp: boolean; reason?: string };
};

// Shell commands: descriptions for permission asks. They describe; the sandbox confines.

export declare const SHELL_DANGEROUS_COMMANDS: readonly string[];
export declare const SHELL_FILESYSTEM_COMMANDS: readonly string[];
export declare const SHELL_SHELL_OPERATORS: readonly string[];

export type ShellRiskCategory =
  | 'destructive'
  | 'side-effect'
  | 'workspace-modification'
  | 'network'
  | 'outside-workspace'
  | 'sensitive-files';

/** One command of a command line split at its operators. */
export interface ParsedShellSegment {
  raw: string;
  /** The program's file name: "/usr/bin/git" gives "git". */
  baseCommand: string;
  args: string[];
  flags: string[];
}

export interface ShellEffectAnalysis {
  command: string;
  baseCommand: string;
  riskCategory: ShellRiskCategory;
  risk: PermissionRiskLevel;
  hasOperators: boolean;
  workspaceBound: boolean;
  resolvedPaths: string[];
  reason: string;
  intents: PermissionIntent[];
  effectiveIdentity: string;
}

export interface ShellEffectInput {
  command: string;
  baseCommand: string;
  resolvedPaths: string[];
  hasOperators: boolean;
  workspaceBound: boolean;
  riskCategory: ShellRiskCategory;
}

export declare function splitShellCommandSegments(command: string): ParsedShellSegment[];
/** "git push", "npm test", "rm": for a chain, its most dangerous segment. */
export declare function getEffectiveShellCommandIdentity(command: string): string;
export declare function analyzeShellCommandEffects(params: ShellEffectInput): PermissionIntent[];
export declare function getAllowedScopesForIntent(intent: PermissionIntent): GrantScope[];

export declare function createShellPermissionAskStructured(params: {
  command: string;
  baseCommand: string;
  flags: string[];
  risk: PermissionRiskLevel;
  riskCategory: ShellRiskCategory;
  reason: string;
  resolvedPaths?: string[];
  workspaceBound: boolean;
  hasOperators: boolean;
}): PermissionAsk;

export declare function createOutsideWorkspaceAsk(params: {
  command: string;
  cwd: string;
  resolvedPaths: string[];
  hasOperators?: boolean;
}): PermissionAsk;

export declare function createWorkspaceModificationAsk(params: {
  command: string;
  baseCommand: string;
  resolvedPaths: string[];
  hasOperators?: boolean;
}): PermissionAsk;

/** Substrings that make a lower-cased path sensitive. */
export declare const SENSITIVE_FILE_PATTERNS: readonly string[];

// ---------------------------------------------------------------------------------------
// Visualizations (REFERENCE §6): shown to people, never sent to the model.

interface VisualizationBase {
  title?: string;
  collapsed?: boolean;
}

export interface DiffChange {
  type: 'added' | 'removed' | 'context';
  content: string;
  oldLineNumber?: number;
  newLineNumber?: number;
}

export interface DiffHunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  changes: DiffChange[];
}

export interface DiffVisualization extends VisualizationBase {
  type: 'diff';
  path: string;
  language?: string;
  hunks: DiffHunk[];
  additions: number;
  deletions: number;
}

export interface DiffsVisualization extends VisualizationBase {
  type: 'diffs';
  items: DiffVisualization[];
}

export interface CodeVisualization extends VisualizationBase {
  type: 'code';
  path: string;
  content: string;
  language?: string;
  /** Whether the file was created by the call. */
  created: boolean;
  highlightLines?: number[];
  lineCount?: number;
}

export type FileListAction = 'created' | 'modified' | 'deleted';

export interface FileListEntry {
  path: string;
  action?: FileListAction;
  line?: number;
  content?: string;
}

export interface FileListGroup {
  label: string;
  icon: 'edit' | 'plus' | 'trash' | 'search';
  files: FileListEntry[];
}

export interface FileListVisualization extends VisualizationBase {
  type: 'file-list';
  files?: FileListEntry[];
  groups?: FileListGroup[];
  total?: number;
}

export interface TableColumn {
  key: string;
  label?: string;
  width?: number;
}

export interface TableVisualization extends VisualizationBase {
  type: 'table';
  columns: TableColumn[];
  rows: Record<string, unknown>[];
  totalRows?: number;
  hasMore?: boolean;
}

export interface MarkdownVisualization extends VisualizationBase {
  type: 'markdown';
  content: string;
  sourceUrl?: string;
}

export interface ShellOutputVisualization extends VisualizationBase {
  type: 'shell-output';
  command: string;
  stdout?: string;
  stderr?: string;
  exitCode: number;
}

export type TodoStatus = 'pending' | 'in_progress' | 'completed' | 'cancelled';
export type TodoPriority = 'high' | 'medium' | 'low';

export interface TodoItem {
  content: string;
  status: TodoStatus;
  priority: TodoPriority;
}

/** The catalogue SDK's name for TodoItem. */
export type TodoListItem = TodoItem;

export interface TodoListVisualization extends VisualizationBase {
  type: 'todo-list';
  items: TodoItem[];
}

export interface StructuredResponseVisualization extends VisualizationBase {
  type: 'structured-response';
  data: unknown;
  schema?: JSONSchema;
  formatName?: string;
}

export interface NoneVisualization extends VisualizationBase {
  type: 'none';
  message?: string;
}

/** Images drawn for people: base64 bytes of a raster type (no SVG). */
export interface ImagesVisualization extends VisualizationBase {
  type: 'images';
  images: { mimeType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'; data: string; alt?: string }[];
}

export type Visualization =
  | DiffVisualization
  | DiffsVisualization
  | CodeVisualization
  | FileListVisualization
  | TableVisualization
  | MarkdownVisualization
  | ShellOutputVisualization
  | TodoListVisualization
  | StructuredResponseVisualization
  | NoneVisualization
  | ImagesVisualization;

export type VisualizationType = Visualization['type'];

// ---------------------------------------------------------------------------------------
// Jx host API (REFERENCE §8)

/** Declares a Jx-shape tool; the definition comes back unchanged. */
export declare function createToolDefinition<A = Record<string, unknown>, R = unknown>(
  definition: JxToolDefinition<A, R>,
): JxToolDefinition<A, R>;

export declare function toolSuccess<T>(data: T, summary?: string): { success: true; data: T; summary?: string };
export declare function toolError(message: string | Error): { success: false; error: string };

/**
 * Thrown from `execute`, fails the call as a protocol error rather than the tool's own error:
 * an MCP client gets the JSON-RPC error `{code, message, data}` of its tools/call, and a task
 * ends `failed` (a tool's error is a result with isError, and its task completes). jean2's
 * agent shows it as a failed call. `code` is a JSON-RPC error code: -32603 (internal error),
 * -32602 (invalid params), -32000…-32099 or an application code; -32700, -32600 and -32601
 * are the server's own, and a tool that uses them fails with a tool error saying so.
 */
export declare class ProtocolError extends Error {
  constructor(code: number, message: string, data?: unknown);
  readonly code: number;
  readonly data?: unknown;
}

/** Fills what `partial` leaves out with detached defaults (a signal that never aborts, callId "", a fresh ledger, empty session facts, a no-op progress). */
export declare function createToolContext(partial?: ToolContextInit): ToolContext;
export declare function createLedger(): Ledger;
export declare function createSessionFacts(initial?: Record<string, JsonValue>): LocalSessionFacts;

export interface CallSignalLink {
  signal: ToolAbortSignal;
  /** Unlinks the call from the turn once the call settled. */
  release(): void;
}

/** The call's signal aborts when the turn's does, until release(). */
export declare function linkCallSignal(turnSignal: ToolAbortSignal | undefined): CallSignalLink;

/** A registered tool: a Jx definition or a jean2 module. */
export type RegistrableTool = JxToolDefinition<any, any> | ToolModule<any, any>;

export interface ToolRegistry {
  /** Adds a tool; a second tool with the same name throws. */
  register(tool: RegistrableTool): ToolRegistry;
  /** The definitions, sorted by name. */
  list(): Array<JxToolDefinition<any, any> | ToolDefinition>;
  /** Runs a call. Never throws: unknown tools, invalid arguments and thrown errors come back as {success: false, error}. */
  execute(name: string, args?: unknown, ctx?: ToolContextInit): Promise<ToolResult>;
}

export declare function createToolRegistry(tools?: RegistrableTool[]): ToolRegistry;
