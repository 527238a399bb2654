// The suite's tools-call-embedded-resource scenario: a text resource inside the result.
export const definition = {
  name: 'test_embedded_resource',
  description: 'Return an embedded resource.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute() {
  return {
    success: true,
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  };
}
