// Each line below is a mistake the types must catch; the test expects tsc to report an
// error on every line marked "@error".
import type { ToolContext, ToolDefinition, NoneVisualization } from '@jean2/sdk';

export async function mistakes(ctx: ToolContext): Promise<void> {
  const s: string = await ctx.ask({ type: 'permission', question: 'q?', risk: 'low' }); // @error boolean is not string
  const n: number = await ctx.fs.readFile('/a', 'utf-8'); // @error string is not number
  await ctx.ask({ type: 'permission', question: 'q?', risk: 'extreme' }); // @error unknown risk
  const v: NoneVisualization = { type: 'code' }; // @error wrong visualization type
  ctx.ledger.record({ path: '/a' }); // @error missing tool, disk, ok
  void [s, n, v];
}

export const noSchema: ToolDefinition = { name: 'x', description: 'y' }; // @error inputSchema is required

import type { ToolContent } from '@jean2/sdk';
export const wrongImageType: ToolContent = { type: 'image', data: 'AA==', mimeType: 'text/plain' }; // @error an image's mimeType is image/…
export const textAndBlob: ToolContent = { type: 'resource', resource: { uri: 'u', text: 'a', blob: 'AA==' } }; // @error text or blob, not both
