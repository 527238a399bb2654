// Asks for a confirmation; the retry must carry the requestState that names the waiting call.
export const definition = {
  name: 'test_input_required_result_request_state',
  description: 'Ask the person to confirm.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  let answer: unknown;
  try {
    answer = await ctx.ask({ type: 'confirm', question: 'Please confirm' });
  } catch (e: any) {
    answer = { refused: String(e?.message ?? e) }; // the suite's own field ("ok")
  }
  // Reaching here at all means the retry's requestState named this waiting call.
  return { success: true, result: { state: 'state-ok', answer } };
}
