// Logs while it runs: the lines reach a client only when its request set a log level.
export const definition = {
  name: 'test_logging_tool',
  description: 'Log a line and answer.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  ctx.logger.info('Tool execution started');
  ctx.logger.warn('Tool execution half way');
  return { success: true, result: 'logged' };
}
