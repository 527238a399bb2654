// An MCP server built with the official TypeScript SDK, for jean2 to import (mcp.json).
import fs from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'ts-peer', version: '1.0.0' });

server.registerTool('add', {
  title: 'Add',
  description: 'Add two numbers.',
  inputSchema: { a: z.number(), b: z.number() },
  outputSchema: { sum: z.number() },
  annotations: { readOnlyHint: true },
}, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }));

server.registerTool('shout', {
  description: 'Say it louder.',
  inputSchema: { text: z.string() },
}, async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }));

server.registerTool('env', {
  description: 'List the names of the environment variables the server sees.',
}, async () => ({ content: [{ type: 'text', text: Object.keys(process.env).sort().join(',') }] }));

server.registerTool('fail', {
  description: 'Always fails.',
}, async () => ({ isError: true, content: [{ type: 'text', text: 'it broke' }] }));

server.registerTool('grow', {
  description: 'Add a tool named grown (the list changes).',
}, async () => {
  server.registerTool('grown', { description: 'Added later.' }, async () => ({ content: [{ type: 'text', text: 'grown up' }] }));
  return { content: [{ type: 'text', text: 'grew' }] };
});

server.registerTool('slow', {
  description: 'Wait until cancelled; note the cancellation in $MARKER.',
}, async (extra) => {
  await new Promise((res) => {
    const t = setTimeout(res, 30000);
    extra.signal.addEventListener('abort', () => {
      clearTimeout(t);
      if (process.env.MARKER) fs.writeFileSync(process.env.MARKER, 'aborted: ' + String(extra.signal.reason));
      res(null);
    });
  });
  return { content: [{ type: 'text', text: 'done' }] };
});

server.registerTool('ping', {
  description: 'Answer pong (the trivial tool of the benchmark).',
  inputSchema: { n: z.number().optional() },
}, async ({ n }) => ({ content: [{ type: 'text', text: 'pong ' + (n ?? 0) }] }));

await server.connect(new StdioServerTransport());
