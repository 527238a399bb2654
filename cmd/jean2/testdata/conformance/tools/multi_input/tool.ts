// May run as a task, and asks two things at once: two input requests wait together, and
// each may be answered on its own.
export const definition = {
  name: 'multi_input',
  description: 'Ask a name and a confirmation at once.',
  inputSchema: { type: 'object', properties: {} },
  execution: { taskSupport: 'optional' },
};

export async function execute(_input: unknown, ctx: any) {
  const [name, sure] = await Promise.all([
    ctx.ask({ type: 'text', name: 'name', question: 'Your name?' }),
    ctx.ask({ type: 'confirm', name: 'confirm', question: 'Go on?' }),
  ]);
  return { success: true, result: { name, sure } };
}
