// Two asks one after the other: two rounds, each with its own requestState.
export const definition = {
  name: 'test_input_required_result_multi_round',
  description: "Ask the person's name, then their favourite colour.",
  inputSchema: { type: 'object', properties: {} },
};

async function tryAsk(ctx: any, question: string): Promise<unknown> {
  try {
    return await ctx.ask({ type: 'text', question });
  } catch (e: any) {
    return { refused: String(e?.message ?? e) }; // the suite's own fields ("name", "color")
  }
}

export async function execute(_input: unknown, ctx: any) {
  const name = await tryAsk(ctx, 'Step 1: What is your name?');
  const color = await tryAsk(ctx, 'Step 2: What is your favorite color?');
  return { success: true, result: { name, color } };
}
