// Runs only as a task, and asks the person's name first. taskAfterInput makes the ask an
// input-required round of a plain call, and the call a task when the answer comes
// (MRTR → tasks); the task's result greets them.
export const definition = {
  name: 'test_tool_with_task',
  description: "Ask the person's name, then greet them.",
  inputSchema: { type: 'object', properties: {} },
  execution: { taskSupport: 'required', taskAfterInput: true },
};

export async function execute(_input: unknown, ctx: any) {
  const name = await ctx.ask({ type: 'text', key: 'user_name', name: 'name', question: 'What is your name?' });
  return { success: true, result: `Hello, ${name}!` };
}
