// A tool that may run as a task (execution.taskSupport optional): a client that takes
// tasks gets one at once and polls it; any other waits for the result.
export const definition = {
  name: 'slow_compute',
  description: 'Wait the given seconds, then report.',
  inputSchema: {
    type: 'object',
    properties: { seconds: { type: 'number' }, label: { type: 'string' } },
  },
  timeout: 120_000,
  execution: { taskSupport: 'optional' },
};

export async function execute(input: { seconds?: number; label?: string }, ctx: any) {
  const ms = Math.max(0, input.seconds ?? 0) * 1000;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    ctx.signal.addEventListener('abort', () => { clearTimeout(timer); reject(new Error('cancelled')); });
  });
  return { success: true, result: `Computed ${input.label ?? 'result'} after ${input.seconds ?? 0}s` };
}
