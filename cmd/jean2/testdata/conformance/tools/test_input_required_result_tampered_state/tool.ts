// Asks for a confirmation; a retry whose requestState names no waiting call is refused.
export const definition = {
  name: 'test_input_required_result_tampered_state',
  description: 'Ask the person to confirm.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  try {
    return { success: true, result: { ok: await ctx.ask({ type: 'confirm', question: 'Please confirm' }) } };
  } catch (e: any) {
    return { success: true, result: { refused: String(e?.message ?? e) } };
  }
}
