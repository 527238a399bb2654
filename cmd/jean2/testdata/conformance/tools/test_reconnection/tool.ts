export const definition = {
  name: 'test_reconnection',
  description: 'Answer after a moment, on an SSE stream that opens with a priming event.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute() {
  await new Promise((r) => setTimeout(r, 100));
  return { success: true, result: 'Reconnection test completed' };
}
