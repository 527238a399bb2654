// A parameter a client also sends as the Mcp-Param-Region header (x-mcp-header, SEP-2243),
// so that load balancers can route on it; the server checks the header against the body.
export const definition = {
  name: 'test_headers',
  description: 'Echo the region the request was routed by.',
  inputSchema: {
    type: 'object',
    properties: { region: { type: 'string', 'x-mcp-header': 'Region' } },
    required: ['region'],
  },
};

export async function execute(input: { region: string }) {
  return { success: true, result: 'region ' + input.region };
}
