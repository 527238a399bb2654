export const definition = {
  name: 'json_schema_2020_12_tool',
  description: 'Tool with JSON Schema 2020-12 features',
  inputSchema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
    properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
    additionalProperties: false,
  },
};

export async function execute(input: unknown) {
  return { success: true, result: input };
}
