// Tries an ask and the model: only what the client declared becomes an input request
// (an ask without elicitation fails at once in jean2; the model becomes sampling).
export const definition = {
  name: 'test_input_required_result_capabilities',
  description: 'Ask the person, then the model.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  let confirmed: unknown;
  try {
    confirmed = await ctx.ask({ type: 'confirm', question: 'Continue?' });
  } catch (e: any) {
    confirmed = { refused: String(e?.message ?? e) };
  }
  const text = await ctx.llm.generateText({ prompt: 'Say hello.', maxTokens: 50 });
  return { success: true, result: { confirmed, text } };
}
