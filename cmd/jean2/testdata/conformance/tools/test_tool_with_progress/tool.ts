export const definition = {
  name: 'test_tool_with_progress',
  description: 'Report progress 0, 50 and 100 of 100.',
  inputSchema: { type: 'object', properties: {} },
};

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function execute(_input: unknown, ctx: any) {
  for (const current of [0, 50, 100]) {
    ctx.progress?.({ message: 'at ' + current, current, total: 100 });
    if (current < 100) await pause(50);
  }
  return { success: true, result: 'done' };
}
