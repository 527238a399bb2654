// A tool that uses every power `jean2 tools test` can script or check: the workspace, a
// declared variable, an ask, the model (text and structured), a write through ctx.fs, a
// visualization, and a write its own code is not allowed to make.
import fs from 'node:fs';

export const definition = {
  name: 'tested',
  description: 'Summarise a workspace file into summary.txt.',
  inputSchema: {
    type: 'object',
    properties: {
      path: { type: 'string' },
      escape: { type: 'boolean' },
    },
    required: ['path'],
  },
  env: ['SUMMARY_PREFIX'],
};

export async function execute(input: { path: string; escape?: boolean }, ctx: any) {
  const text = await ctx.fs.readFile(input.path, 'utf-8');
  if (input.escape) {
    try {
      fs.writeFileSync('/var/tmp/jean2-tools-test-escape.txt', text);
    } catch {}
    try {
      await ctx.fs.writeFile('/var/tmp/jean2-tools-test-escape.txt', text);
    } catch {}
  }
  const ok = await ctx.ask({ type: 'confirm', question: `Write the summary of ${input.path}?` });
  if (!ok) return { success: false, error: 'not confirmed' };
  const summary = await ctx.llm.generateText({ prompt: `Summarise: ${text}` });
  const meta = await ctx.llm.generateStructured({
    prompt: 'Tags?',
    schema: { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } }, required: ['tags'] },
  });
  const prefix = ctx.env.get('SUMMARY_PREFIX') ?? '';
  await ctx.fs.writeFile('summary.txt', prefix + summary);
  return {
    success: true,
    result: { summary: prefix + summary, tags: meta.tags, words: text.split(/\s+/).filter(Boolean).length, at: ctx.resolvePath('summary.txt') },
    visualization: { type: 'code', path: ctx.resolvePath('summary.txt'), content: prefix + summary, language: 'text', created: true },
  };
}
