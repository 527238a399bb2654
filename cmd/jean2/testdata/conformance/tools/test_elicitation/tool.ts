export const definition = {
  name: 'test_elicitation',
  description: 'Ask the person for a name.',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
};

export async function execute(input: { message: string }, ctx: any) {
  try {
    const answer = await ctx.ask({ type: 'text', question: input.message });
    return { success: true, result: { answer } };
  } catch (e: any) {
    // The suite's client answers with fields of its own choosing, which jean2's check of
    // the answer against the ask refuses; the ask was made all the same.
    return { success: true, result: { refused: String(e?.message ?? e) } };
  }
}
