// Asks the client for its roots: on 2026-07-28 a roots/list input request.
export const definition = {
  name: 'test_input_required_result_list_roots',
  description: "List the client's roots.",
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  const answer = await ctx.ask({ target: 'client', type: 'client_capability', capability: 'roots', key: 'client_roots' });
  const roots = answer.result.roots.map((r: { uri: string; name?: string }) => r.name ? `${r.name} (${r.uri})` : r.uri);
  return { success: true, result: `Roots: ${roots.join(', ')}` };
}
