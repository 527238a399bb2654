// Publishes a new command to the team catalog (testdata/conformance/catalog), an MCP server
// jean2 imports: the catalog offers it as a tool, and jean2's tool list changes with it.
export const definition = {
  name: 'test_trigger_tool_change',
  description: 'Publish a new tool to the team catalog.',
  inputSchema: { type: 'object', properties: {} },
  env: ['CATALOG_URL'],
  permissions: { network: ['localhost'] },
};

export async function execute(_input: unknown, ctx: any) {
  const name = `published_tool_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const res = await ctx.fetch(`${ctx.env.require('CATALOG_URL')}/publish`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'tool', name, text: 'A tool published by test_trigger_tool_change.' }),
  });
  if (!res.ok) return { success: false, error: `the catalog refused ${name}: ${res.status} ${await res.text()}` };
  return { success: true, result: `published the tool ${name}` };
}
