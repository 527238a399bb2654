// May run as a task, and asks for a confirmation: the task waits as input_required with
// the ask as an input request until tasks/update answers it.
export const definition = {
  name: 'confirm_delete',
  description: 'Ask before deleting a file (deletes nothing).',
  inputSchema: { type: 'object', properties: { filename: { type: 'string' } } },
  execution: { taskSupport: 'optional' },
};

export async function execute(input: { filename?: string }, ctx: any) {
  const ok = await ctx.ask({ type: 'confirm', name: 'confirm', question: `Delete ${input.filename ?? 'the file'}?` });
  return { success: true, result: ok ? `Deleted ${input.filename}` : 'Kept the file' };
}
