// Needs a model: with none configured in jean2 and a client on 2026-07-28 that declared no
// sampling, jean2 answers the call with MissingRequiredClientCapabilityError (-32021).
export const definition = {
  name: 'test_missing_capability',
  description: "Ask the model (the client's, when jean2 has no provider) a fixed question.",
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  const text = await ctx.llm.generateText({ prompt: 'What is the capital of France?', maxTokens: 100 });
  return { success: true, result: text };
}
