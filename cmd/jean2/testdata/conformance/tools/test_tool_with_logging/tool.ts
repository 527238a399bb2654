export const definition = {
  name: 'test_tool_with_logging',
  description: 'Log three lines while it runs.',
  inputSchema: { type: 'object', properties: {} },
};

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function execute(_input: unknown, ctx: any) {
  ctx.logger.info('Tool execution started');
  await pause(50);
  ctx.logger.info('Tool processing data');
  await pause(50);
  ctx.logger.info('Tool execution completed');
  return { success: true, result: 'logged three lines' };
}
