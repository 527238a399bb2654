
// ---------------------------------------------------------------------------------------
// jean2's own names (REFERENCE: the public jean2 SDK's shared-types tool.ts, visualization.ts
// and permission.ts). A tool written against jean2's @jean2/sdk imports these; most are
// another name for a type above. Kept in a file of its own (sdkjs/js/catalogue.d.ts),
// appended to the types above when the module is rendered: interfaces named here again
// (FileSystemApi, DiffVisualization) merge with the ones above.

/** The encodings jean2's ctx.fs.readFile takes (the host takes any Node encoding). */
export type BufferEncoding = 'utf-8' | 'utf8' | 'ascii' | 'utf-16le' | 'ucs2' | 'base64' | 'hex' | 'latin1' | 'binary';

export interface FileSystemApi {
  readFile(path: string, encoding: BufferEncoding): Promise<string>;
}

export interface DiffVisualization {
  /** How the change was located in the file (edit's fuzzy matching). */
  matchInfo?: { strategy: string; lineNumber: number };
}

/** An image for ctx.llm: bytes, base64 text or a data: URL, with its media type. */
export interface LlmImage {
  data: Uint8Array | string;
  mediaType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
}
export type LlmTextOptions = GenerateTextOptions;
export type LlmStructuredOptions = GenerateStructuredOptions;

/** Who answers an ask. */
export type AskTarget = 'human' | 'client' | 'permission';
export type SingleSelectQuestion = SingleSelectAsk<string>;
export type MultiSelectQuestion = MultiSelectAsk<string>;
export type TextQuestion = TextAsk;
export type ConfirmQuestion = ConfirmAsk;
export type HumanQuestion = SingleSelectQuestion | MultiSelectQuestion | TextQuestion | ConfirmQuestion;

export interface AskSingleSelectResponse {
  type: 'single_select';
  value: string;
}
export interface AskMultiSelectResponse {
  type: 'multi_select';
  values: string[];
}
export interface AskTextResponse {
  type: 'text';
  value: string;
}
export interface AskConfirmResponse {
  type: 'confirm';
  confirmed: boolean;
}
/** A person's answer to a permission ask, as jean2's clients send it. */
export interface AskPermissionResponse {
  type: 'permission';
  grant: GrantScope | 'deny';
  scope?: string;
  duration?: number;
}
export type AskResponse =
  | AskSingleSelectResponse
  | AskMultiSelectResponse
  | AskTextResponse
  | AskConfirmResponse
  | AskFormResponse
  | AskClientCapabilityResponse
  | AskPermissionResponse;

/** The facts of a call, without its powers. */
export interface ToolExecutionContext {
  workspacePath?: string;
  sessionId: string;
  workspaceId?: string;
  allowedPaths?: string[];
}

/** A tool module as a host holds it once imported. */
export interface LoadedTool {
  definition: ToolDefinition;
  execute: ToolModule['execute'];
  path: string;
}

export interface EnvVarLink {
  label: string;
  url: string;
}
export type EnvVarSource = 'preset' | 'tool' | 'custom';
/** A variable a tool reads, as a settings page lists it. */
export interface ToolEnvVarStatus {
  key: string;
  configured: boolean;
  sensitive: boolean;
  value?: string;
  description?: string;
  defaultValue?: string;
  example?: string;
  usedBy?: string[];
  source?: EnvVarSource;
  category?: string;
  link?: EnvVarLink;
}

/** One call as a store keeps it. */
export interface ToolExecution {
  id: string;
  messageId: string;
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  result?: unknown;
  error?: string;
  startedAt: string;
  completedAt: string | null;
}

/** What every visualization has. */
export interface ToolVisualization {
  type: VisualizationType;
  title?: string;
  collapsed?: boolean;
}
export type AnyVisualization = Visualization;
export type FileListItem = FileListEntry;
/** A result that carries its visualization in _visualization (kept from the model). */
export interface VisualizableToolOutput {
  success: boolean;
  error?: string;
  _visualization?: AnyVisualization;
}

export type PermissionScope = GrantScope;
export type GrantMatcher = 'exact' | 'prefix' | 'glob' | 'shell-command';
export type PermissionMatcher = GrantMatcher;
export type PermissionType = PermissionResource;
export type PermissionDecision = 'granted' | 'denied' | 'timeout' | 'skipped';
export type PermissionAction = string;

/** A remembered grant, as a store keeps it. */
export interface PermissionGrant {
  id: string;
  workspaceId: string;
  toolName: string;
  resource: PermissionResource;
  action?: string;
  scope: GrantScope;
  matcher: GrantMatcher;
  patterns: string[];
  allowed: boolean;
  grantedAt: string;
  expiresAt: string | null;
  grantedBy: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
  metadata: Record<string, unknown> | null;
  boundRootSessionId?: string | null;
}
export type PersistedPermissionGrant = PermissionGrant;

export interface PermissionGrantOptions {
  scope?: GrantScope;
  matcher?: GrantMatcher;
  action?: string;
  patterns?: string[];
  duration?: number;
  description?: string;
  boundRootSessionId?: string;
}

export interface SecurityCheckInput {
  args: Record<string, unknown>;
  workspacePath: string;
  sessionId: string;
  allowedPaths?: string[];
}

export interface SecurityCheckResult {
  allowed: boolean;
  requiresApproval: boolean;
  permissionType: string;
  permissionKey: string;
  message: string;
  details?: Record<string, unknown>;
}
