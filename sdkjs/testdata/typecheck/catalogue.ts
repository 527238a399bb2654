// The names jean2's public tool catalogue imports from '@jean2/sdk', used the way its tools
// use them: this file must type-check unchanged.
import type { ToolDefinition, ToolContext, ToolResult, AskFormResponse } from '@jean2/sdk';
import type {
  FileListVisualization,
  DiffHunk,
  DiffChange,
  DiffVisualization,
  DiffsVisualization,
  NoneVisualization,
  ShellOutputVisualization,
  MarkdownVisualization,
  TodoListVisualization,
  TodoListItem,
  CodeVisualization,
} from '@jean2/sdk';
import {
  SHELL_DANGEROUS_COMMANDS,
  SHELL_FILESYSTEM_COMMANDS,
  SHELL_SHELL_OPERATORS,
  createShellPermissionAskStructured,
  createOutsideWorkspaceAsk,
  createWorkspaceModificationAsk,
  getEffectiveShellCommandIdentity,
  createWebfetchPermissionAsk,
  createFilePermissionAsk,
  SENSITIVE_FILE_PATTERNS,
  WELL_KNOWN_CLIENT_CAPABILITIES,
  type ShellRiskCategory,
} from '@jean2/sdk';

export const definition: ToolDefinition = {
  name: 'catalogue-names',
  description: 'uses the catalogue names',
  inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

export async function execute(input: { command: string }, ctx: ToolContext): Promise<ToolResult> {
  const cmd = input.command;
  const identity = getEffectiveShellCommandIdentity(cmd);
  const hasOperators = SHELL_SHELL_OPERATORS.some((op) => cmd.includes(op));
  const dangerous = SHELL_DANGEROUS_COMMANDS.some((d) => identity === d);
  const filesystem = SHELL_FILESYSTEM_COMMANDS.some((f) => identity.startsWith(f));
  let category: ShellRiskCategory = 'side-effect';
  if (dangerous) category = 'destructive';
  const ask = filesystem
    ? createWorkspaceModificationAsk({ command: cmd, baseCommand: identity, resolvedPaths: [], hasOperators })
    : createShellPermissionAskStructured({
        command: cmd,
        baseCommand: identity,
        flags: [],
        risk: 'high',
        riskCategory: category,
        reason: 'asks',
        workspaceBound: true,
        hasOperators,
      });
  const granted: boolean = await ctx.ask(ask);
  const outside = createOutsideWorkspaceAsk({ command: cmd, cwd: '/srv', resolvedPaths: [] });
  const fetchAsk = createWebfetchPermissionAsk({ url: 'https://a.b/c', host: 'a.b', risk: 'low' });
  const fileAsk = createFilePermissionAsk({ path: '/w/a', operation: 'read', risk: 'low' });
  const op: string = fileAsk.metadata.operation;
  const sensitive = SENSITIVE_FILE_PATTERNS.some((p) => cmd.includes(p));
  const cap: string = WELL_KNOWN_CLIENT_CAPABILITIES[0];
  const form: AskFormResponse = await ctx.ask({
    target: 'human',
    type: 'form',
    question: 'q',
    questions: [{ type: 'text', question: 't' }],
  });
  const items: TodoListItem[] = [{ content: 'c', status: 'in_progress', priority: 'high' }];
  const change: DiffChange = { type: 'added', content: 'x' } as DiffChange;
  const hunk = { changes: [change] } as unknown as DiffHunk;
  const todo: TodoListVisualization = { type: 'todo-list', items };
  const none: NoneVisualization = { type: 'none' };
  void [outside, fetchAsk, op, sensitive, cap, form, hunk, todo, none, granted];
  const v: FileListVisualization | DiffVisualization | DiffsVisualization | ShellOutputVisualization | MarkdownVisualization | CodeVisualization | undefined = undefined;
  void v;
  return { success: true, result: { identity } };
}
