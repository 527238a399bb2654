// A plain tool (no tasks): the tasks scenarios' sync call.
export const definition = {
  name: 'greet',
  description: 'Greet someone by name.',
  inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
};

export async function execute(input: { name: string }) {
  return { success: true, result: `Hello, ${input.name}!` };
}
