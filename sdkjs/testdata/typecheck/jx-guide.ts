// The Jx guide's examples (seeds/003). The guide's rename_page summary line is garbled in
// the seed text; it is written here as the obvious template string. `files` and the host
// variables are what the guide says is bound when the tool is built.
import { createToolDefinition, createToolContext, createToolRegistry, linkCallSignal, createLedger, createSessionFacts } from '@jxsuite/ai/tools';
import type { ToolAbortSignal, ToolResult } from '@jxsuite/ai/tools';

declare const files: { rename(from: string, to: string, opts: { signal: ToolAbortSignal }): Promise<void> };

export const renamePage = createToolDefinition({
  name: 'rename_page',
  description: 'Rename a page file.',
  parameters: {
    type: 'object',
    properties: { from: { type: 'string' }, to: { type: 'string' } },
    required: ['from', 'to'],
  },
  async execute(args, ctx) {
    const { from, to } = args as { from: string; to: string };
    await files.rename(from, to, { signal: ctx.signal });
    ctx.ledger.record({ disk: true, ok: true, path: to, tool: 'rename_page' });
    return { success: true, summary: `Renamed ${from} to ${to}.` };
  },
});

export const askUser = createToolDefinition({
  name: 'ask_user',
  description: 'Ask the person a question.',
  interactive: true,
  parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
  async execute(args, ctx) {
    const answer = await ctx.ask({ target: 'human', type: 'text', question: String(args.question) });
    return { success: true, data: { answer } };
  },
});

export async function hostLoop(turnSignal: ToolAbortSignal, callId: string, name: string, args: unknown): Promise<ToolResult> {
  const registry = createToolRegistry([renamePage]);
  registry.register(askUser);
  const ledger = createLedger();
  const session = createSessionFacts();
  let result: ToolResult;
  const link = linkCallSignal(turnSignal);
  try {
    const ctx = createToolContext({ callId, ledger, session, signal: link.signal });
    result = await registry.execute(name, args, ctx);
  } finally {
    link.release();
  }
  const changed: number = ledger.summary().changed.length;
  void changed;
  return result;
}
