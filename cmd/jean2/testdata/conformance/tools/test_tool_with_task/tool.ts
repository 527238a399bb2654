// Runs only as a task and asks the person's name. jean2 makes the task at the call and
// shows the ask on tasks/get; the suite expects the name asked first, by input-required
// rounds, and the task made after (MRTR → tasks), which a jean2 tool cannot choose.
export const definition = {
  name: 'test_tool_with_task',
  description: "Ask the person's name, then greet them.",
  inputSchema: { type: 'object', properties: {} },
  execution: { taskSupport: 'required' },
};

export async function execute(_input: unknown, ctx: any) {
  const name = await ctx.ask({ type: 'text', key: 'user_name', name: 'name', question: 'What is your name?' });
  return { success: true, result: `Hello, ${name}!` };
}
