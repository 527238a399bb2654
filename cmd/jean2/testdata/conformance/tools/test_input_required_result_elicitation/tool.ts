// Asks the person's name. On 2026-07-28 the ask is an input request of the call's
// input-required result, and the retry carrying the answer completes the call.
export const definition = {
  name: 'test_input_required_result_elicitation',
  description: "Ask the person's name and greet them.",
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  try {
    const name = await ctx.ask({ type: 'text', question: 'What is your name?' });
    return { success: true, result: `Hello, ${name}!` };
  } catch (e: any) {
    // The suite answers with fields of its own ("name"), which jean2's check of the answer
    // against the ask refuses; the ask travelled all the same.
    return { success: true, result: { refused: String(e?.message ?? e) } };
  }
}
