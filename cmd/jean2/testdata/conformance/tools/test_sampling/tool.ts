export const definition = {
  name: 'test_sampling',
  description: "Ask the model (the client's, when jean2 has no provider).",
  inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
};

export async function execute(input: { prompt: string }, ctx: any) {
  const text = await ctx.llm.generateText({ prompt: input.prompt, maxTokens: 100 });
  return { success: true, result: 'LLM response: ' + text };
}
