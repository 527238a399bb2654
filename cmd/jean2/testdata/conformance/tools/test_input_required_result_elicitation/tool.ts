// Asks the person's name. On 2026-07-28 the ask is an input request of the call's
// input-required result, and the retry carrying the answer completes the call. The ask
// names its input request (key) and its form field (name) as the suite expects them; a
// client that knows the key may also answer in advance, in the call's own inputResponses.
export const definition = {
  name: 'test_input_required_result_elicitation',
  description: "Ask the person's name and greet them.",
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  const name = await ctx.ask({ type: 'text', key: 'user_name', name: 'name', question: 'What is your name?' });
  return { success: true, result: `Hello, ${name}!` };
}
