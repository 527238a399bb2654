export const definition = {
  name: 'ask',
  description: 'Ask the person a few things.',
  inputSchema: { type: 'object', properties: {} },
  annotations: { destructiveHint: false },
};

export async function execute(_input: unknown, ctx: any) {
  const name = await ctx.ask({ type: 'text', question: 'Your name?', placeholder: 'Ada' });
  const env = await ctx.ask({ type: 'single_select', question: 'Which environment?', options: [{ label: 'Production', value: 'prod' }, { label: 'Staging', value: 'staging' }] });
  const allowed = await ctx.ask({ type: 'permission', question: 'Deploy to ' + env + '?', risk: 'high' });
  return { success: true, result: { name, env, allowed } };
}
