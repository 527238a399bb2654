// Exercises every member of the ToolContext through a real worker and reports what each
// returned, so the host test can check the host decided every one.
import type { ToolDefinition, ToolContext, ToolResult } from '@jean2/sdk';
import { createFilePermissionAsk, SENSITIVE_FILE_PATTERNS } from '@jean2/sdk';
import { spawnSync } from 'node:child_process';

export const definition: ToolDefinition = {
  name: 'ctx-probe',
  description: 'Exercise every context member and report.',
  inputSchema: {
    type: 'object',
    properties: { outside: { type: 'string' }, fetchUrl: { type: 'string' }, extra: { type: 'string' } },
    required: ['outside', 'fetchUrl', 'extra'],
  },
  env: ['PROBE_FROM_DOTENV', 'PROBE_FROM_SERVER', 'PROBE_MISSING', 'OPENAI_API_KEY'],
};

async function attempt<T>(f: () => Promise<T> | T): Promise<{ ok: boolean; value?: T; error?: string; code?: string }> {
  try {
    return { ok: true, value: await f() };
  } catch (e: any) {
    return { ok: false, error: String(e?.message ?? e), code: e?.code };
  }
}

export async function execute(input: { outside: string; fetchUrl: string; extra: string }, ctx: ToolContext): Promise<ToolResult> {
  const r: Record<string, unknown> = {};
  r.facts = { sessionId: ctx.sessionId, workspacePath: ctx.workspacePath, workspaceId: ctx.workspaceId, callId: (ctx as any).callId,
    allowedPaths: ctx.allowedPaths, signalIsAbortSignal: ctx.abortSignal instanceof AbortSignal, signalAlias: (ctx as any).signal === ctx.abortSignal,
    aborted: ctx.abortSignal.aborted, tempDir: ctx.fs.tempDir };

  // fs, every operation, inside the workspace
  r.mkdir = await attempt(() => ctx.fs.mkdir('sub/deeper', { recursive: true }));
  r.write = await attempt(() => ctx.fs.writeFile('sub/a.txt', 'hello'));
  r.append = await attempt(() => ctx.fs.appendFile('sub/a.txt', ' world'));
  r.read = await attempt(() => ctx.fs.readFile('sub/a.txt', 'utf-8'));
  r.readBytes = await attempt(async () => Array.from(await ctx.fs.readFile('sub/a.txt') as Uint8Array).slice(0, 5));
  r.writeBytes = await attempt(() => ctx.fs.writeFile('sub/bin.dat', new Uint8Array([0, 1, 2, 255])));
  r.readDir = await attempt(() => ctx.fs.readDir('sub'));
  r.exists = await attempt(() => ctx.fs.exists('sub/a.txt'));
  r.existsMissing = await attempt(() => ctx.fs.exists('sub/none.txt'));
  r.stat = await attempt(async () => { const s = await ctx.fs.stat('sub/a.txt'); return { size: s.size, isFile: s.isFile, isDirectory: s.isDirectory, modifiedIsDate: s.modifiedAt instanceof Date }; });
  r.rename = await attempt(() => ctx.fs.rename('sub/a.txt', 'sub/b.txt'));
  r.rm = await attempt(() => ctx.fs.rm('sub/bin.dat'));
  r.readMissing = await attempt(() => ctx.fs.readFile('sub/a.txt', 'utf-8'));
  r.resolve = ctx.fs.resolve('x/y.ts');
  r.detectLanguage = [ctx.fs.detectLanguage('file.ts'), ctx.fs.detectLanguage('file.unknownext')];
  r.tempWrite = await attempt(() => ctx.fs.writeFile(ctx.fs.tempDir + '/scratch.txt', 'tmp'));

  // policy
  r.blocked = await attempt(() => ctx.fs.readFile('/etc/hostname', 'utf-8'));
  r.outsideBefore = await attempt(() => ctx.fs.readFile(input.outside, 'utf-8'));
  r.outsideAsk = await ctx.ask(createFilePermissionAsk({ path: input.outside, operation: 'read', risk: 'medium', isOutsideWorkspace: true }));
  r.outsideAfter = await attempt(() => ctx.fs.readFile(input.outside, 'utf-8'));
  r.paths = {
    resolveRel: ctx.resolvePath('./src/index.ts'), resolveHome: ctx.resolvePath('~/x'), resolveAbs: ctx.resolvePath('/abs/p'),
    withinSub: ctx.isWithinWorkspace(ctx.workspacePath + '/sub'), withinSibling: ctx.isWithinWorkspace(ctx.workspacePath + '-x/file'),
    sensitive: [ctx.isSensitivePath('/p/.env'), ctx.isSensitivePath('/p/readme.md')], sensitivePatterns: SENSITIVE_FILE_PATTERNS.length,
    blocked: [ctx.isBlockedPath('/etc/passwd'), ctx.isBlockedPath(ctx.workspacePath + '/a')],
  };

  // asks of every person-facing type
  r.select = await ctx.ask({ target: 'human', type: 'single_select', question: 'Which environment?', options: [{ label: 'Production', value: 'prod' }, { label: 'Staging', value: 'staging' }] });
  r.text = await ctx.ask({ target: 'human', type: 'text', question: 'Branch name?', placeholder: 'main' });
  r.confirm = await ctx.ask({ target: 'human', type: 'confirm', question: 'Delete all temporary files?', defaultValue: false });
  r.form = await ctx.ask({ target: 'human', type: 'form', question: 'Deployment configuration', questions: [
    { type: 'text', question: 'Environment?', placeholder: 'production' }, { type: 'confirm', question: 'Run migrations?', defaultValue: true }] });
  r.badAsk = await attempt(() => ctx.ask({ type: 'nonsense', question: 'x' } as any));

  // env: only what was declared, and nothing else anywhere
  r.env = { dotenv: ctx.env.get('PROBE_FROM_DOTENV'), server: ctx.env.get('PROBE_FROM_SERVER'), missing: ctx.env.get('PROBE_MISSING') ?? null,
    providerKey: ctx.env.get('OPENAI_API_KEY') ?? null, undeclared: ctx.env.get('PROBE_UNDECLARED') ?? null,
    require: await attempt(() => ctx.env.require('PROBE_MISSING')),
    processEnvKeys: Object.keys(process.env).sort(),
    childEnv: spawnSync('/usr/bin/env', [], { encoding: 'utf-8' }).stdout.split('\n').filter(Boolean).map((l: string) => l.split('=')[0]).sort() };

  // llm, logger, progress, ledger, session facts, fetch, workspace paths
  r.llmText = await attempt(() => ctx.llm.generateText({ prompt: 'Say hi', system: 'Be brief.' }));
  r.llmStructured = await attempt(() => ctx.llm.generateStructured({ prompt: 'Summarize', schema: { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'] } }));
  ctx.logger.info('probe log line', { n: 1 });
  ctx.logger.warn('probe warning');
  (ctx as any).progress?.({ message: 'halfway', current: 1, total: 2 });
  (ctx as any).ledger?.record({ path: '/external/store/page.md', tool: 'ctx-probe', disk: false, ok: true });
  await (ctx as any).session.set('seen', { count: 1 });
  r.session = await (ctx as any).session.get('seen');
  r.fetch = await attempt(async () => (await ctx.fetch(input.fetchUrl)).text());
  r.addPathBefore = await attempt(() => ctx.fs.readFile(input.extra + '/note.txt', 'utf-8'));
  r.addPath = await attempt(() => (ctx as any).addWorkspacePath(input.extra));
  r.addPathAfter = await attempt(() => ctx.fs.readFile(input.extra + '/note.txt', 'utf-8'));
  r.allowedAfterAdd = ctx.allowedPaths;
  r.removePath = await attempt(() => (ctx as any).removeWorkspacePath(input.extra));
  r.allowedAfterRemove = ctx.allowedPaths;

  console.log('console output must not corrupt the protocol {"jsonrpc":"2.0","id":1,"result":42}');
  return { success: true, result: r, visualization: { type: 'markdown', content: '# probe done' } };
}
