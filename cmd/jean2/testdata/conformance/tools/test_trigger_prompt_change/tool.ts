// Publishes a new command to the team catalog (testdata/conformance/catalog), an MCP server
// jean2 imports: the catalog offers it as a prompt, and jean2's prompt list changes with it.
export const definition = {
  name: 'test_trigger_prompt_change',
  description: 'Publish a new prompt to the team catalog.',
  inputSchema: { type: 'object', properties: {} },
  env: ['CATALOG_URL'],
  permissions: { network: ['localhost'] },
};

export async function execute(_input: unknown, ctx: any) {
  const name = `published_prompt_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const res = await ctx.fetch(`${ctx.env.require('CATALOG_URL')}/publish`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'prompt', name, text: 'A prompt published by test_trigger_prompt_change.' }),
  });
  if (!res.ok) return { success: false, error: `the catalog refused ${name}: ${res.status} ${await res.text()}` };
  return { success: true, result: `published the prompt ${name}` };
}
