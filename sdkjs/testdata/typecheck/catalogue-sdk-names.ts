// The tool-facing names jean2's own @jean2/sdk exports (shared-types/tool.ts,
// visualization.ts, permission.ts) beyond those its catalogue's tool.ts files import: a
// tool written against jean2's SDK type-checks against ours, used as jean2's types allow.
import type {
  AnyVisualization, AskConfirmResponse, AskMultiSelectResponse, AskResponse, AskSingleSelectResponse, AskTarget,
  AskTextResponse, BufferEncoding, ConfirmQuestion, EnvVarLink, EnvVarSource, FileListItem, HumanQuestion, LlmImage,
  LlmStructuredOptions, LlmTextOptions, LoadedTool, MultiSelectQuestion, SingleSelectQuestion, TextQuestion,
  ToolEnvVarStatus, ToolExecution, ToolExecutionContext, ToolVisualization, VisualizableToolOutput,
  AskPermissionResponse, GrantMatcher, PermissionAction, PermissionDecision, PermissionGrant, PermissionGrantOptions,
  PermissionMatcher, PermissionScope, PermissionType, PersistedPermissionGrant, SecurityCheckInput, SecurityCheckResult,
  DiffVisualization, ToolContext, ToolDefinition, ToolResult,
} from '@jean2/sdk';

export const definition: ToolDefinition = {
  name: 'catalogue-sdk-names',
  description: 'uses the names of jean2 SDK',
  inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

export async function execute(input: { path: string }, ctx: ToolContext): Promise<ToolResult> {
  const enc: BufferEncoding = 'base64';
  const b64: string = await ctx.fs.readFile(input.path, enc);
  const bytes: Uint8Array = await ctx.fs.readFile(input.path);
  const registered: boolean = await ctx.addWorkspacePath('/w/tree');
  const removed: boolean = await ctx.removeWorkspacePath('/w/tree');
  const image: LlmImage = { data: bytes, mediaType: 'image/png' };
  const text: LlmTextOptions = { prompt: 'describe', image };
  const many: LlmStructuredOptions = { prompt: 'compare', image: [image, { data: b64, mediaType: 'image/jpeg' }], schema: { type: 'object' } };
  const described: string = await ctx.llm.generateText(text);
  const compared = await ctx.llm.generateStructured<{ same: boolean }>(many);
  const single: SingleSelectQuestion = { type: 'single_select', question: 'q', options: [{ label: 'a', value: 'a' }] };
  const multi: MultiSelectQuestion = { type: 'multi_select', question: 'q', options: [{ label: 'a', value: 'a' }], min: 1 };
  const free: TextQuestion = { type: 'text', question: 'q', placeholder: 'p' };
  const confirm: ConfirmQuestion = { type: 'confirm', question: 'q', defaultValue: true };
  const human: HumanQuestion[] = [single, multi, free, confirm];
  const target: AskTarget = 'human';
  const picked: string = await ctx.ask({ ...single, target: 'human' });
  const yes: boolean = await ctx.ask({ ...confirm, target });
  const answers: AskResponse[] = [
    { type: 'single_select', value: picked } satisfies AskSingleSelectResponse,
    { type: 'multi_select', values: [picked] } satisfies AskMultiSelectResponse,
    { type: 'text', value: 'x' } satisfies AskTextResponse,
    { type: 'confirm', confirmed: yes } satisfies AskConfirmResponse,
    { type: 'permission', grant: 'session' } satisfies AskPermissionResponse,
    { type: 'permission', grant: 'deny' },
  ];
  const item: FileListItem = { path: input.path, action: 'modified', line: 3 };
  const diff: DiffVisualization = { type: 'diff', path: input.path, hunks: [], additions: 0, deletions: 0, matchInfo: { strategy: 'exact', lineNumber: 1 } };
  const base: ToolVisualization = { type: 'diff', title: 't' };
  const viz: AnyVisualization[] = [diff, { type: 'file-list', files: [item] }, { type: 'none' }];
  const output: VisualizableToolOutput = { success: true, _visualization: viz[0] };
  const exec: ToolExecutionContext = { sessionId: ctx.sessionId, workspacePath: ctx.workspacePath, allowedPaths: ctx.allowedPaths };
  const loaded: LoadedTool = { definition, execute: async () => ({ success: true }), path: '/tools/x/tool.ts' };
  const link: EnvVarLink = { label: 'docs', url: 'https://example.com' };
  const source: EnvVarSource = 'tool';
  const status: ToolEnvVarStatus = { key: 'K', configured: false, sensitive: true, source, link };
  const run: ToolExecution = { id: '1', messageId: 'm', toolCallId: 'c', toolName: 'x', args: {}, startedAt: 'now', completedAt: null };
  const matcher: GrantMatcher = 'glob';
  const alias: PermissionMatcher = matcher;
  const scope: PermissionScope = 'workspace';
  const kind: PermissionType = 'file';
  const decision: PermissionDecision = 'granted';
  const action: PermissionAction = 'read';
  const grant: PermissionGrant = {
    id: 'g', workspaceId: 'w', toolName: 'x', resource: kind, scope, matcher, patterns: ['/w/*'], allowed: true,
    grantedAt: 'now', expiresAt: null, grantedBy: null, revokedAt: null, revokedBy: null, metadata: null,
  };
  const kept: PersistedPermissionGrant = grant;
  const opts: PermissionGrantOptions = { scope, matcher: alias, action, patterns: ['/w'] };
  const check: SecurityCheckInput = { args: {}, workspacePath: ctx.workspacePath, sessionId: ctx.sessionId };
  const verdict: SecurityCheckResult = { allowed: true, requiresApproval: false, permissionType: 'file', permissionKey: 'k', message: 'ok' };
  void [removed, described, compared, human, answers, base, output, exec, loaded, status, run, decision, kept, opts, check, verdict];
  return { success: registered, result: { bytes: bytes.length }, visualization: viz[1] };
}
