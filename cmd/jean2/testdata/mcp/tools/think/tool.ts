export const definition = {
  name: 'think',
  description: 'Ask the model a question.',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
};

export async function execute(input: { q: string }, ctx: any) {
  try {
    return { success: true, result: await ctx.llm.generateText({ prompt: input.q }) };
  } catch (e: any) {
    return { success: false, error: String(e?.message ?? e) };
  }
}
