// Asks the person; on 2026-07-28 the ask goes back as an input-required result on the
// call's own stream, never as a request of the server's.
export const definition = {
  name: 'test_streaming_elicitation',
  description: 'Ask the person to confirm.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  const ok = await ctx.ask({ type: 'confirm', question: 'Continue?' });
  return { success: true, result: { confirmed: ok } };
}
