export const definition = {
  name: 'echo',
  title: 'Echo',
  description: 'Say the text back.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  outputSchema: { type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'] },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
};

export async function execute(input: { text: string }) {
  return { success: true, result: { echo: input.text }, visualization: { type: 'markdown', content: '> ' + input.text } };
}
