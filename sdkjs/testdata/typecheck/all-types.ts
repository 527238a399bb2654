// Every exported name a tool author may need, used once, so a missing or renamed type
// fails the typecheck.
import {
  SENSITIVE_FILE_PATTERNS,
  createFilePermissionAsk,
  toolError,
  toolSuccess,
  type Ask,
  type ClientCapabilityAsk,
  type ConfirmAsk,
  type DiffsVisualization,
  type DiffVisualization,
  type FileListVisualization,
  type FormAsk,
  type FormResponse,
  type MarkdownVisualization,
  type MultiSelectAsk,
  type NoneVisualization,
  type PermissionAsk,
  type ShellOutputVisualization,
  type SingleSelectAsk,
  type StructuredResponseVisualization,
  type TableVisualization,
  type TextAsk,
  type NumberAsk,
  type TodoListVisualization,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
  type Visualization,
} from '@jean2/sdk';

export const full: ToolDefinition = {
  name: 'full',
  title: 'Full',
  description: 'Uses every definition field.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  outputSchema: { type: 'object' },
  timeout: 1000,
  env: ['A'],
  capabilities: ['interactive-user-input'],
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  permissions: { read: ['/data'], write: ['/tmp/out'], childProcess: false },
};

const diff: DiffVisualization = {
  type: 'diff',
  path: 'a.ts',
  language: 'typescript',
  hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, changes: [{ type: 'removed', content: 'a', oldLineNumber: 1 }, { type: 'added', content: 'b', newLineNumber: 1 }] }],
  additions: 1,
  deletions: 1,
};

export const visualizations: Visualization[] = [
  diff,
  { type: 'diffs', items: [diff], title: 'Two', collapsed: true } satisfies DiffsVisualization,
  { type: 'file-list', files: [{ path: 'a', action: 'created', line: 1, content: 'x' }], groups: [{ label: 'Edited', icon: 'edit', files: [] }], total: 1 } satisfies FileListVisualization,
  { type: 'table', columns: [{ key: 'a', label: 'A', width: 10 }], rows: [{ a: 1 }], totalRows: 1, hasMore: false } satisfies TableVisualization,
  { type: 'markdown', content: '# hi', sourceUrl: 'https://example.com' } satisfies MarkdownVisualization,
  { type: 'shell-output', command: 'ls', stdout: '', stderr: '', exitCode: 0 } satisfies ShellOutputVisualization,
  { type: 'todo-list', items: [{ content: 'x', status: 'in_progress', priority: 'high' }] } satisfies TodoListVisualization,
  { type: 'structured-response', data: { a: 1 }, schema: { type: 'object' }, formatName: 'x' } satisfies StructuredResponseVisualization,
  { type: 'none' } satisfies NoneVisualization,
];

export async function asks(ctx: ToolContext): Promise<ToolResult> {
  const p: PermissionAsk = createFilePermissionAsk({ path: '/a/.env', operation: 'edit', risk: 'high', reason: 'why', isSensitiveFile: true });
  const ok: boolean = await ctx.ask(p);
  const single: SingleSelectAsk<number> = { type: 'single_select', question: 'n?', options: [{ label: 'one', value: 1 }] };
  const n: number = await ctx.ask(single);
  const multi: MultiSelectAsk<string> = { target: 'human', type: 'multi_select', question: 'which?', options: [{ label: 'a', value: 'a', description: 'A' }], min: 1, max: 2 };
  const many: string[] = await ctx.ask(multi);
  const text: TextAsk = { type: 'text', question: 't?', defaultValue: 'x' };
  const t: string = await ctx.ask(text);
  const confirm: ConfirmAsk = { type: 'confirm', question: 'c?' };
  const c: boolean = await ctx.ask(confirm);
  const num: NumberAsk = { type: 'number', name: 'age', question: 'age?', integer: true, minimum: 0, maximum: 120, defaultValue: 30 };
  const age: number = await ctx.ask(num);
  const legacy: SingleSelectAsk<string> = { type: 'single_select', name: 'env', question: 'env?', legacyEnumNames: true, defaultValue: 'a', options: [{ label: 'A', value: 'a' }] };
  const form: FormAsk = { type: 'form', question: 'f', description: 'd', questions: [single, multi, text, num, legacy, confirm] };
  const f: FormResponse = await ctx.ask(form);
  const cap: ClientCapabilityAsk = { target: 'client', type: 'client_capability', capability: 'clipboard.read', metadata: { a: 1 } };
  const clip = await ctx.ask<string>(cap);
  const any: Ask = cap;
  const u: unknown = await ctx.ask(any);
  ctx.progress({ message: 'half', current: 1, total: 2 });
  await ctx.session.set('k', { a: [1, 'b', null] });
  const k = await ctx.session.get('k');
  ctx.ledger.record({ path: '/a', tool: 'x', disk: true, ok: false, error: 'EACCES' });
  await ctx.addWorkspacePath('/other');
  await ctx.removeWorkspacePath('/other');
  const res = await ctx.fetch('https://example.com', { signal: ctx.abortSignal });
  void [ok, n, many, t, c, f, clip, u, k, res, ctx.callId, ctx.sessionId, ctx.workspaceId, ctx.allowedPaths, SENSITIVE_FILE_PATTERNS.length];
  if (!ok) return toolError(new Error('refused'));
  return toolSuccess({ n }, 'done');
}

// Rich results: every content block type, in either result shape.
import type { AudioContent, EmbeddedResourceContent, ImageContent, ResourceLinkContent, TextContent, ToolContent } from '@jean2/sdk';
const richBlocks: ToolContent[] = [
  { type: 'text', text: 'a chart' } satisfies TextContent,
  { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' } satisfies ImageContent,
  { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' } satisfies AudioContent,
  { type: 'resource', resource: { uri: 'test://doc', mimeType: 'text/plain', text: 'inside' } } satisfies EmbeddedResourceContent,
  { type: 'resource', resource: { uri: 'test://bin', blob: 'AAEC' } },
  { type: 'resource_link', uri: 'test://far', name: 'far', size: 3 } satisfies ResourceLinkContent,
];
export const richJean2: ToolResult = { success: true, content: richBlocks };
export const richJx: ToolResult = { success: true, data: { n: 1 }, summary: 'one', content: richBlocks };
