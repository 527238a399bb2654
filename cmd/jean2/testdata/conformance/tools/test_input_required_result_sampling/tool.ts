// Asks the model (the client's, when jean2 has none): on 2026-07-28 a sampling input request.
export const definition = {
  name: 'test_input_required_result_sampling',
  description: 'Ask the model a question.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  const text = await ctx.llm.generateText({ prompt: 'What is the capital of France?', maxTokens: 100 });
  return { success: true, result: text };
}
