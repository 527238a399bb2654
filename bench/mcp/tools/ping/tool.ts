// The trivial tool of the MCP benchmark: answers at once.
export const definition = {
  name: 'ping',
  description: 'Answer pong.',
  inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
};

export async function execute(input: { n?: number }) {
  return { success: true, result: 'pong ' + (input.n ?? 0) };
}
