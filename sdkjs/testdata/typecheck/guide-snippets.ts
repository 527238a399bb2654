// The other snippets of the jean2 tool guide (seeds/000), each inside a function so they
// typecheck as written.
import type { ToolDefinition, ToolContext, ToolResult, CodeVisualization } from '@jean2/sdk';
import { createFilePermissionAsk } from '@jean2/sdk';

interface Input {
  path: string;
}

export const definition: ToolDefinition = {
  name: 'my-tool',
  description: 'What this tool does. This text is sent to the LLM.',
  inputSchema: {
    type: 'object',
    properties: {
      path: {
        type: 'string',
        description: 'The file path to process',
      },
    },
    required: ['path'],
  },
  timeout: 30000,
  env: ['MY_TOOL_CACHE_DIR', 'MY_TOOL_TIMEOUT'],
};

export async function execute(input: Input, ctx: ToolContext): Promise<ToolResult> {
  try {
    const resolvedPath = ctx.resolvePath(input.path);
    const content = await ctx.fs.readFile(resolvedPath, 'utf-8');

    return {
      success: true,
      result: { content },
    };
  } catch (err: unknown) {
    const message = err instanceof Error ? err.message : String(err);
    return { success: false, error: message };
  }
}

export async function fsSnippets(ctx: ToolContext): Promise<void> {
  const content: string = await ctx.fs.readFile('/path/to/file', 'utf-8');
  const bytes: Uint8Array = await ctx.fs.readFile('/path/to/file');
  await ctx.fs.writeFile('/path/to/file', 'content');
  await ctx.fs.appendFile('/path/to/file', 'more content');
  const entries = await ctx.fs.readDir('/path/to/dir');
  const exists: boolean = await ctx.fs.exists('/path/to/file');
  const stat = await ctx.fs.stat('/path/to/file');
  await ctx.fs.mkdir('/path/to/dir', { recursive: true });
  await ctx.fs.rm('/path/to/file');
  await ctx.fs.rename('/old/path', '/new/path');
  const absolute: string = ctx.fs.resolve('relative/path');
  const lang: string = ctx.fs.detectLanguage('file.ts'); // 'typescript'
  const tmp: string = ctx.fs.tempDir;
  const firstIsDir: boolean = entries[0].isDirectory;
  const size: number = stat.size;
  void [content, bytes, exists, absolute, lang, tmp, firstIsDir, size, stat.modifiedAt];
}

export async function envLlmLoggerSnippets(ctx: ToolContext, content: string): Promise<void> {
  const cacheDir: string | undefined = ctx.env.get('MY_TOOL_CACHE_DIR');
  const required: string = ctx.env.require('MY_API_KEY'); // throws if not set

  const response: string = await ctx.llm.generateText({
    prompt: 'Summarize this text:\n' + content,
    system: 'You are a concise summarizer.',
  });

  const structured = await ctx.llm.generateStructured<{ summary: string }>({
    prompt: 'Summarize this text:\n' + content,
    schema: {
      type: 'object',
      properties: { summary: { type: 'string' } },
      required: ['summary'],
    },
  });
  const summary: string = structured.summary;

  const path = '/x';
  const size = 1;
  const err = new Error('x');
  ctx.logger.debug('Processing file', { path, size });
  ctx.logger.info('File processed', { lines: 42 });
  ctx.logger.warn('Large file', { size: '10MB' });
  ctx.logger.error('Failed to read', { error: err.message });

  const absolute: string = ctx.resolvePath('./src/index.ts'); // resolves relative to workspace
  ctx.isWithinWorkspace('/some/path'); // true if inside workspace
  ctx.isSensitivePath('/project/.env'); // true for .env, .key, .pem, etc.
  ctx.isBlockedPath('/etc/passwd'); // true for system directories
  void [cacheDir, required, response, summary, absolute];
}

export async function askSnippets(input: Input, ctx: ToolContext): Promise<ToolResult | undefined> {
  const approved = await ctx.ask(
    createFilePermissionAsk({
      path: input.path,
      operation: 'read',
      risk: 'medium',
      isOutsideWorkspace: true,
    }),
  );

  if (!approved) {
    return { success: false, error: 'USER_REJECTION' };
  }

  const approved2: boolean = await ctx.ask({
    type: 'permission',
    question: 'Read file outside workspace?',
    risk: 'medium',
    resource: 'file',
    paths: [input.path],
  });

  // Single select
  const answer = await ctx.ask({
    target: 'human',
    type: 'single_select',
    question: 'Which environment?',
    options: [
      { label: 'Production', value: 'prod' },
      { label: 'Staging', value: 'staging' },
    ],
  });
  const env: 'prod' | 'staging' = answer;

  // Text input
  const branch: string = await ctx.ask({
    target: 'human',
    type: 'text',
    question: 'Branch name?',
    placeholder: 'main',
  });

  // Named for clients that key asks by name (docs/writing-tools.md)
  const userName: string = await ctx.ask({ type: 'text', question: 'What is your name?', key: 'user_name', name: 'name' });
  const rootsAnswer = await ctx.ask<{ result: { roots: { uri: string; name?: string }[] } }>({
    target: 'client', type: 'client_capability', capability: 'roots', key: 'client_roots',
  });
  const firstRoot: string | undefined = rootsAnswer.result.roots[0]?.uri;

  // Confirmation
  const confirmed: boolean = await ctx.ask({
    target: 'human',
    type: 'confirm',
    question: 'Delete all temporary files?',
    defaultValue: false,
  });

  // Multi-select form
  const answers = await ctx.ask({
    target: 'human',
    type: 'form',
    question: 'Deployment configuration',
    questions: [
      { type: 'text', question: 'Environment?', placeholder: 'production' },
      { type: 'confirm', question: 'Run migrations?', defaultValue: true },
    ],
  });
  const firstQuestion: string = answers.answers[0].question;
  void [approved2, env, branch, userName, firstRoot, confirmed, firstQuestion];
  return undefined;
}

export function visualizationSnippet(resolvedPath: string, fileContent: string): ToolResult {
  return {
    success: true,
    result: { path: resolvedPath },
    visualization: {
      type: 'code',
      path: resolvedPath,
      content: fileContent,
      language: 'typescript',
      created: true,
      lineCount: 42,
    } satisfies CodeVisualization,
  };
}

// docs/writing-tools.md#protocol-errors: thrown, or returned as a result's protocolError.
import { ProtocolError } from '@jean2/sdk';

export async function protocolErrors(backendUp: () => Promise<boolean>): Promise<ToolResult> {
  if (!(await backendUp())) throw new ProtocolError(-32603, 'the order service is down', { retryAfterMs: 5000 });
  const e = new ProtocolError(-32602, 'no such order');
  const code: number = e.code;
  return { success: false, error: e.message, protocolError: { code, message: e.message } };
}

export const asksFirst: ToolDefinition = {
  name: 'asks-first',
  description: 'Ask, then work long as a task.',
  inputSchema: { type: 'object', properties: {} },
  execution: { taskSupport: 'required', taskAfterInput: true },
};
