export const definition = {
  name: 'test_error_handling',
  description: 'Fail on purpose.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute() {
  return { success: false, error: 'This tool intentionally returns an error for testing' };
}
