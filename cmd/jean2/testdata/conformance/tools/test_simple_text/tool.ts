export const definition = {
  name: 'test_simple_text',
  description: 'Return a simple text response.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute() {
  return { success: true, result: 'This is a simple text response for testing.' };
}
