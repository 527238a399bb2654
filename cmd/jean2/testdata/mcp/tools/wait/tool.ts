// Reports progress and logs, then waits until its signal is aborted. What it saw of the
// abort is kept in the worker, so that a later call ({"report": true}) can tell.
let lastAbort: unknown = null;

export const definition = {
  name: 'wait',
  description: 'Report progress, then wait until aborted.',
  inputSchema: { type: 'object', properties: { report: { type: 'boolean' } } },
  timeout: 60000,
};

export async function execute(input: { report?: boolean }, ctx: any) {
  if (input.report) return { success: true, result: { lastAbort } };
  for (let i = 1; i <= 3; i++) {
    ctx.progress?.({ message: 'step ' + i, current: i, total: 3 });
    ctx.logger.info('step', { i });
  }
  await new Promise((res) => {
    if (ctx.abortSignal.aborted) return res(null);
    ctx.abortSignal.addEventListener('abort', () => res(null));
  });
  lastAbort = { aborted: ctx.abortSignal.aborted, reason: String(ctx.abortSignal.reason?.message ?? ctx.abortSignal.reason) };
  return { success: false, error: 'aborted' };
}
